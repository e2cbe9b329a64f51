"""Execute one run: claim, build, solve, write Zarr, then commit status and metrics.

Idempotent under at-least-once delivery: the SQL claim (one conditional UPDATE with a lease)
admits one attempt at a time, the trajectory is renamed into place before the commit, and the
commit only applies to the attempt that still owns the run. So a run ends complete in both Zarr
and SQL, or is retried; never half written, never duplicated.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import signal
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

import raptorgrid.case_store  # noqa: F401  (case:<id> networks for build_system)
from pydantic import TypeAdapter, ValidationError
from raptorgrid import repository as repo
from raptorgrid.db import Database
from raptorgrid.settings import Settings, get_settings
from raptorgrid.tables import CampaignStatus, utcnow
from raptorgrid.zarr_store import (
    RunArrays,
    consolidate_campaign,
    run_arrays,
    run_group_path,
    write_block,
    write_run,
)
from sqlalchemy.exc import DisconnectionError, InterfaceError, OperationalError

if TYPE_CHECKING:
    import numpy as np

    from solvers.result import SolveResult

log = logging.getLogger(__name__)

TRANSIENT_ERRORS = (OperationalError, InterfaceError, DisconnectionError)
"""Errors that say the database is unreachable, not that the run is broken: retried."""

RETRY_FIRST_DELAY = 0.5
RETRY_MAX_DELAY = 8.0
"""Backoff of database retries (s): doubling from the first delay, capped."""

T = TypeVar("T")


def with_db_retry(action: Callable[[], T], *, settings: Settings, what: str) -> T:
    """``action()`` (one whole transaction), retried with bounded exponential backoff while the
    database is unreachable (only ``TRANSIENT_ERRORS``), for at most ``db_retry_seconds``.
    Each try is a complete transaction, so a failed try leaves nothing half written."""
    deadline = time.monotonic() + settings.db_retry_seconds
    delay = RETRY_FIRST_DELAY
    while True:
        try:
            return action()
        except TRANSIENT_ERRORS as exc:
            if time.monotonic() + delay > deadline:
                log.error("%s: database still unreachable, giving up: %s", what, exc)
                raise
            log.warning("%s: database unreachable, retrying in %.1f s: %s", what, delay, exc)
            time.sleep(delay)
            delay = min(2 * delay, RETRY_MAX_DELAY)


class LeaseLost(Exception):
    """Another attempt owns the run now (our lease expired and it was re-claimed)."""


class RunTimeLimit(Exception):
    """The run has been solving for longer than ``soft_time_limit``; raised from the progress
    callback, at an accepted advance (a safe point of every method), so it holds for each run of
    a batch and whatever library callback the solver is in when Celery's signal fires; and by
    the run's own alarm (``run_alarm``) when no advance comes at all (a solver stuck inside one
    step, e.g. MINPACK on a singular algebraic system: seen for 10+ minutes inside a batch,
    whose Celery limit is the batch's)."""


_SHIELD = threading.local()


@contextlib.contextmanager
def alarm_shield():
    """Hold off ``run_alarm``'s exception while the block runs (a database write from a progress
    callback): an exception raised mid-commit leaves the connection and the run's transaction in
    an unknown state, so the alarm re-arms itself for 50 ms and fires after the block."""
    _SHIELD.depth = getattr(_SHIELD, "depth", 0) + 1
    try:
        yield
    finally:
        _SHIELD.depth -= 1


@contextlib.contextmanager
def run_alarm(seconds: float, run_id: int):
    """Raise ``RunTimeLimit`` in this (the main) thread once ``seconds`` of wall time have
    passed, through SIGALRM; a no-op outside the main thread. The exception is raised only while
    the block runs and outside ``alarm_shield``; a signal still pending when the block has
    ended does nothing. A timer armed before (pytest-timeout's, say) keeps its deadline and
    handler: the earlier of the two fires first, and it is re-armed with its remaining time on
    exit. Celery's own soft limit is a later backstop (``raptorgrid.celery_app.task_time_limits``),
    so the two never race."""
    if threading.current_thread() is not threading.main_thread() or seconds <= 0:
        yield
        return
    start = time.monotonic()
    deadline = start + seconds
    earlier_fired = False
    active = True

    def expired(signum, frame):  # noqa: ANN001
        nonlocal earlier_fired
        if not active:  # the block has ended: only an earlier timer's own deadline counts
            if callable(previous) and before > 0 and time.monotonic() >= start + before - 1e-3:
                previous(signum, frame)
            return
        if time.monotonic() >= deadline - 1e-3:
            if getattr(_SHIELD, "depth", 0):
                signal.setitimer(signal.ITIMER_REAL, 0.05)
                return
            raise RunTimeLimit(f"run {run_id} passed its soft time limit inside a solver step")
        earlier_fired = True  # the earlier timer's deadline: its handler decides, ours re-arms
        signal.setitimer(signal.ITIMER_REAL, max(deadline - time.monotonic(), 1e-3))
        if callable(previous):
            previous(signum, frame)

    previous = signal.signal(signal.SIGALRM, expired)
    before, interval = signal.getitimer(signal.ITIMER_REAL)
    signal.setitimer(signal.ITIMER_REAL, min(seconds, before) if before > 0 else seconds)
    try:
        yield
    finally:
        active = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if before > 0 and not earlier_fired:
            left = before - (time.monotonic() - start)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-3), interval)


def despite_late_limit(record: Callable[[], object], time_limit_errors: tuple) -> None:
    """Run ``record`` (the write of a ``time_limit`` failure), once more if Celery's soft limit,
    a backstop behind the run's own, interrupts it: the interrupted transaction rolled back, and
    the run would otherwise stay "running" until its lease expired (for good where no
    reconciler runs)."""
    for _ in range(2):
        try:
            record()
            return
        except time_limit_errors:
            log.warning(
                "Celery's soft limit interrupted a time-limit failure record: writing it again"
            )


class RunCancelled(Exception):
    """The run's campaign was cancelled; raised from the progress callback to stop the solver."""


@dataclass
class WorkerContext:
    """Per-process state of a worker: settings and the database (the network systems are
    cached by ``models.library.build_system``)."""

    settings: Settings
    db: Database
    _celery: Any = None

    @property
    def celery(self) -> Any:
        """The Celery app (created on first use): runs a finish queued are sent with it."""
        if self._celery is None:
            from raptorgrid.celery_app import create_celery

            self._celery = create_celery(self.settings)
        return self._celery

    def send(self, run_ids: list[int]) -> None:
        """Send runs queued in SQL by this worker (a CCT search's next probes). If this fails
        the reconciler re-sends them (runs queued in SQL without a message)."""
        if not run_ids:
            return
        from raptorgrid.queueing import enqueue_runs

        try:
            enqueue_runs(self.celery, run_ids, queue=self.settings.queue)
        except Exception:  # noqa: BLE001 - the reconciler re-sends queued runs
            log.exception("sending runs %s failed; the reconciler re-sends them", run_ids)


@cache
def worker_context() -> WorkerContext:
    settings = get_settings()
    raptorgrid.case_store.use_settings(settings)
    return WorkerContext(settings=settings, db=Database.from_settings(settings))


def integrate(
    system, scenario, method: str, options: dict, heartbeat: Heartbeat, *, probe: bool = False
) -> SolveResult:
    """Solve, reporting every accepted advance to ``heartbeat`` (the one driver of every
    method, ``solvers.stepping``, through ``solve``'s progress hook). A CCT ``probe`` stops
    once its verdict is known to be unstable (``scoring.indicators.angle_limit_rule``). The
    run's alarm enforces ``soft_time_limit`` where no advance comes."""
    from raptorgrid.scoring.indicators import angle_limit_rule

    from solvers import solve

    until = angle_limit_rule(system.state_names) if probe else None
    left = heartbeat.ctx.settings.soft_time_limit - (time.monotonic() - heartbeat.started)
    with run_alarm(max(left, 1e-3), heartbeat.claim.run_id):
        return solve(system, scenario, method, progress=heartbeat, until=until, **options)


class LeaseClock:
    """When the worker last renewed a lease of its batch message (``time.monotonic()``; the
    claim counts as one), shared by the batch's runs: a batch of short runs renews, and marks
    the runs still waiting in its message as in transit, every ``heartbeat_seconds``, not once
    per run (a renewal is a write transaction, ~3 ms).

    It also owns the one thread that renews the running attempt's lease when it has gone
    ``heartbeat_seconds`` without a renewal (``Heartbeat``): started with the batch's first
    attempt, stopped by ``close``. A thread per attempt cost 0.4 ms per run on an idle machine
    and 2.7 ms on a loaded one (its start and join wait for the scheduler)."""

    def __init__(self, period: float = 1.0) -> None:
        self.renewed = time.monotonic()
        self.period = period
        self._current: Heartbeat | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def attach(self, heartbeat: Heartbeat) -> None:
        """Keep ``heartbeat``'s lease from the thread (started on the first attempt)."""
        with self._lock:
            self._current = heartbeat
            if self._thread is None:
                self._thread = threading.Thread(target=self._keep, name="lease", daemon=True)
                self._thread.start()

    def detach(self) -> None:
        """Stop keeping the attempt's lease; waits for a renewal in progress, so none is made
        for an attempt that has ended."""
        with self._lock:
            self._current = None

    def close(self) -> None:
        """Stop the thread (it ends within half a period)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.period + 10)

    def _keep(self) -> None:
        while not self._stop.wait(self.period / 2):
            with self._lock:
                heartbeat = self._current
                if heartbeat is None or time.monotonic() - self.renewed < self.period:
                    continue
                heartbeat.renew_from_thread()


class Heartbeat:
    """Progress of the running attempt: called with the simulated time of every accepted
    advance; at most every ``heartbeat_seconds`` it renews the lease and records that time
    (``runs.sim_time``), and it stops the run when the lease was lost or the campaign cancelled.

    Used as a context manager (the whole attempt, from claim to commit) it also renews the
    lease from a thread whenever the attempt has gone ``heartbeat_seconds`` without a renewal:
    building a network, compiling a structure or writing Zarr reports no advance, and on a
    loaded host those phases outlived the lease (a cold ieee39 RAPTOR compile with a 2 s lease:
    the run was requeued twice, attempts 3). The thread is the batch's (``LeaseClock``). What
    it learns (lease lost, campaign cancelled) is raised in the attempt at its next advance or
    ``beat``; a database outage in the thread is only logged (the attempt's own renewals retry
    and report it).

    ``ahead``: the runs of its group claimed with it and still waiting (``execute_batch``):
    every renewal renews their leases too, in the same transaction."""

    def __init__(
        self,
        ctx: WorkerContext,
        claim: repo.Claim,
        in_transit: tuple[int, ...] = (),
        clock: LeaseClock | None = None,
        ahead: tuple[repo.Claim, ...] = (),
    ) -> None:
        self.ctx, self.claim, self.in_transit = ctx, claim, list(in_transit)
        self.ahead = {c.run_id: c.attempt for c in ahead}
        self.started = time.monotonic()
        self._own_clock = clock is None  # a run alone: its clock (and thread) is its own
        self.clock = clock or LeaseClock(ctx.settings.heartbeat_seconds)
        self.sim_time: float | None = None
        self._lock = threading.Lock()
        self._state: repo.LeaseState | None = None

    def __enter__(self) -> Heartbeat:
        self.clock.attach(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.clock.detach()
        if self._own_clock:
            self.clock.close()

    def __call__(self, t: float) -> None:
        self.sim_time = t
        now = time.monotonic()
        if now - self.started > self.ctx.settings.soft_time_limit:
            raise RunTimeLimit(f"run {self.claim.run_id} passed its soft time limit at t = {t:g}")
        self._raise_for(self._state)
        if now - self.last >= self.ctx.settings.heartbeat_seconds:
            with alarm_shield():
                self.beat()

    @property
    def last(self) -> float:
        """When the batch's last renewal was (``time.monotonic()``)."""
        return self.clock.renewed

    def check(self) -> None:
        """Raise what the lease thread learnt; renew now if a renewal is due (a long build)."""
        self._raise_for(self._state)
        if time.monotonic() - self.last >= self.ctx.settings.heartbeat_seconds:
            self.beat()

    def beat(self) -> None:
        state = with_db_retry(
            self._renew, settings=self.ctx.settings, what=f"run {self.claim.run_id} heartbeat"
        )
        self._raise_for(state)

    def _renew(self) -> repo.LeaseState:
        with self._lock:
            with self.ctx.db.write() as session:
                state = repo.renew_leases(
                    session=session,
                    attempts={self.claim.run_id: self.claim.attempt, **self.ahead},
                    now=utcnow(),
                    lease_seconds=self.ctx.settings.lease_seconds,
                    sim_times=None if self.sim_time is None
                    else {self.claim.run_id: self.sim_time},
                )[self.claim.run_id]  # fmt: skip
                # the rest of this batch waits in the message this worker holds: not lost
                repo.mark_in_transit(session=session, run_ids=self.in_transit, now=utcnow())
            self.clock.renewed = time.monotonic()
            if state is not repo.LeaseState.HELD:
                self._state = state
            return state

    def renew_from_thread(self) -> None:
        """The lease thread's renewal (``LeaseClock``): what it learns is raised in the attempt
        later; a failure is only logged (the attempt's own renewals retry and report it)."""
        if self._state is not None:
            return
        try:
            self._renew()
        except Exception as exc:  # noqa: BLE001 - the attempt's own renewals report it
            log.warning("run %d: lease renewal from the heartbeat thread failed: %s",
                        self.claim.run_id, exc)  # fmt: skip

    def _raise_for(self, state: repo.LeaseState | None) -> None:
        if state is repo.LeaseState.LOST:
            raise LeaseLost(f"run {self.claim.run_id} attempt {self.claim.attempt} lost its lease")
        if state is repo.LeaseState.CANCELLED:
            raise RunCancelled(f"run {self.claim.run_id}: campaign cancelled")


def _finish(ctx: WorkerContext, claim: repo.Claim, status, **fields) -> repo.FinishOutcome:  # noqa: ANN001
    def finish() -> repo.FinishOutcome:
        with ctx.db.write() as session:
            return repo.finish_run(
                session=session,
                run_id=claim.run_id,
                attempt=claim.attempt,
                status=status,
                now=utcnow(),
                **fields,
            )

    outcome = with_db_retry(finish, settings=ctx.settings, what=f"run {claim.run_id} finish")
    if not outcome.recorded:
        log.warning("run %d attempt %d: a later attempt owns the run", claim.run_id, claim.attempt)
    elif outcome.campaign_finished:
        consolidate_campaign(ctx.settings.zarr_root, outcome.campaign_id)
        log.info("campaign %d finished", outcome.campaign_id)
    return outcome


def score_runs(ctx: WorkerContext, results: dict[int, SolveResult]) -> None:
    """Score what the committed runs make scorable (``raptorgrid.scoring``; ``results``: each
    run's result as written, not read back). The runs are final already, so a scoring error is
    logged, not recorded as a run failure; ``raptorgrid.scoring.score_campaign`` scores
    whatever was missed (scoring is idempotent)."""
    from raptorgrid.scoring import score_finished_runs

    if not results:
        return
    try:
        score_finished_runs(
            db=ctx.db, zarr_root=ctx.settings.zarr_root, run_ids=list(results), loaded=results
        )
    except Exception:  # the runs stay committed; logged with its traceback
        log.exception("runs %s: scoring failed; score_campaign retries them", sorted(results))


Claimed = tuple[repo.Claim, repo.RunInputs]
"""A claimed run and its inputs, read in the claim's transaction."""


def claim_group(
    ctx: WorkerContext, run_ids: list[int], *, worker: str
) -> tuple[dict[int, Claimed], float]:
    """Claim ``run_ids`` and read their inputs in one transaction (retried while the database
    is unreachable); returns the claimed runs and the wall seconds it took."""
    started = time.perf_counter()

    def claim() -> dict[int, Claimed]:
        with ctx.db.write() as session:
            claims = repo.claim_runs(
                session=session,
                run_ids=run_ids,
                worker=worker,
                now=utcnow(),
                lease_seconds=ctx.settings.lease_seconds,
                max_attempts=ctx.settings.max_attempts,
            )
            inputs = repo.runs_inputs(session=session, run_ids=list(claims))
            return {run_id: (claims[run_id], inputs[run_id]) for run_id in claims}

    claimed = with_db_retry(claim, settings=ctx.settings, what=f"runs {run_ids} claim")
    return claimed, time.perf_counter() - started


def execute_run(
    run_id: int,
    *,
    worker: str,
    ctx: WorkerContext | None = None,
    time_limit_errors: tuple[type[BaseException], ...] = (),
    phases: dict[str, float] | None = None,
) -> str:
    """Run ``run_id`` if it can be claimed; returns what happened, in a word, for the log.

    ``time_limit_errors`` are the exceptions meaning "the soft time limit fired" (Celery's
    ``SoftTimeLimitExceeded``), recorded as ``time_limit`` failures. ``phases``, when given, is
    filled with the wall seconds of each phase (claim, build, solve, write, commit, score):
    what ``benchmarks/throughput.py`` reports as per-run overhead."""
    ctx = ctx or worker_context()
    phases = phases if phases is not None else {}
    claimed, seconds = claim_group(ctx, [run_id], worker=worker)
    phases["claim"] = seconds
    if run_id not in claimed:
        _not_claimable(run_id)
        return "skipped"
    return run_claimed(ctx, *claimed[run_id], phases=phases, time_limit_errors=time_limit_errors)


def _not_claimable(run_id: int) -> None:
    log.info("run %d not claimable (held by another attempt, final, or out of attempts)", run_id)


def run_claimed(
    ctx: WorkerContext,
    claim: repo.Claim,
    inputs: repo.RunInputs,
    *,
    phases: dict[str, float],
    time_limit_errors: tuple[type[BaseException], ...] = (),
    in_transit: tuple[int, ...] = (),
    ahead: tuple[repo.Claim, ...] = (),
    defer: list[Solved] | None = None,
    clock: LeaseClock | None = None,
    initial_state: tuple[np.ndarray, np.ndarray] | None = None,
) -> str:
    """Build, solve, publish and record a claimed run; returns its outcome in a word.
    ``in_transit`` are the unclaimed runs after it in the same batch message (every heartbeat
    marks them as not lost); ``ahead`` the runs claimed with it that wait for it (every
    heartbeat renews their leases). ``defer``, when given, receives the solved run instead of
    it being published and committed here (``execute_batch`` commits several together); the
    outcome is then "solved". ``clock``: the batch's lease clock (``LeaseClock``), shared by
    its runs. ``initial_state``: its perturbed initial state, when solved with its group's
    (``group_initial_states``)."""
    from solvers.status import FailureReason, RunStatus

    try:
        with Heartbeat(ctx, claim, in_transit, clock, ahead) as heartbeat:
            return _execute_claimed(ctx, claim, inputs, phases, heartbeat, defer, initial_state)
    except LeaseLost as exc:
        log.warning("%s; leaving the run to it", exc)
        return "lease-lost"
    except RunCancelled:
        _finish(
            ctx,
            claim,
            RunStatus.CANCELLED,
            reason=FailureReason.CANCELLED.value,
            message=FailureReason.CANCELLED.advice,
        )
        return "cancelled"
    except (RunTimeLimit, *time_limit_errors):
        limit = ctx.settings.soft_time_limit
        despite_late_limit(
            lambda: _finish(
                ctx,
                claim,
                RunStatus.FAILED,
                reason=FailureReason.TIME_LIMIT.value,
                message=f"stopped at the soft time limit ({limit:g} s): "
                f"{FailureReason.TIME_LIMIT.advice}",
            ),
            time_limit_errors,
        )
        return "time-limit"
    except TRANSIENT_ERRORS:
        # The database went away: leave the run to its lease; the reconciler requeues it
        # (bounded by max_attempts) instead of recording a failure the run did not cause.
        log.exception("run %d attempt %d: database unavailable", claim.run_id, claim.attempt)
        raise
    except Exception as exc:  # recorded on the run row with its traceback, and logged
        log.exception("run %d attempt %d: unexpected error", claim.run_id, claim.attempt)
        _finish(
            ctx,
            claim,
            RunStatus.FAILED,
            reason=FailureReason.INTERNAL_ERROR.value,
            message=f"{type(exc).__name__}: {exc}",
            traceback=traceback.format_exc(),
        )
        return "internal-error"


@cache
def _disturbance_adapter() -> TypeAdapter:
    """The validator of a stored disturbance (built once: building it costs ~0.6 ms)."""
    from models.disturbances import Disturbance

    return TypeAdapter(Disturbance)


@dataclass
class Prepared:
    """A claimed run ready to solve: its inputs, network system and scenario."""

    claim: repo.Claim
    inputs: repo.RunInputs
    system: Any
    scenario: Any
    inputs_mark: float
    """``time.perf_counter()`` when its build began (its overhead after the claim starts there)."""


def prepare_run(
    ctx: WorkerContext,
    claim: repo.Claim,
    phases: dict[str, float],
    inputs: repo.RunInputs,
    initial_state: tuple[np.ndarray, np.ndarray] | None = None,
) -> Prepared | str:
    """Build a claimed run's system and scenario from its inputs (read in its claim's
    transaction, or with its batch's); a cancelled campaign raises ``RunCancelled``; invalid
    inputs are recorded as a failed run ("invalid-input"). ``initial_state``: its perturbed
    initial state when already solved with its group's (``group_initial_states``)."""
    from models.library import build_system
    from models.scenarios import make_scenario
    from solvers import validate_options
    from solvers.status import FailureReason, RunStatus

    mark = time.perf_counter()
    if inputs.campaign_status == CampaignStatus.CANCELLED.value:
        raise RunCancelled(f"run {claim.run_id}: campaign cancelled")
    try:
        system = build_system(inputs.network)
        disturbance = _disturbance_adapter().validate_python(inputs.disturbance)
        scenario = make_scenario(
            system,
            disturbance,
            t_end=inputs.t_end,
            ic_seed=inputs.ic_seed,
            ic_spread=inputs.ic_spread,
            n_eval=inputs.n_eval,
            label=inputs.scenario_label,
            initial_state=initial_state,
        )
        validate_options(inputs.method, inputs.options)
    except (KeyError, ValueError, ValidationError) as exc:
        message = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        _finish(
            ctx,
            claim,
            RunStatus.FAILED,
            reason=FailureReason.INVALID_INPUT.value,
            message=message,
            traceback=traceback.format_exc(),
        )
        return "invalid-input"
    phases["build"] = phases.get("build", 0.0) + time.perf_counter() - mark
    return Prepared(claim, inputs, system, scenario, mark)


def group_initial_states(
    claimed: dict[int, tuple[repo.Claim, repo.RunInputs]],
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """The perturbed initial states of runs claimed together, solved together per network
    (``models.scenarios.perturbed_initial_states``, bit for bit the states solved alone; a
    run's own algebraic Newton was ~1 ms of a 35 ms wscc9 run's 1.0 ms build, mostly JAX's host
    overhead, in cold caches after the previous solve); run id -> (x0, z0). Runs left out (no
    perturbation, not converged, invalid network) are built alone by ``prepare_run``, which
    records their errors."""
    from models.library import build_system
    from models.scenarios import perturbed_initial_states

    by_network: dict[str, list[repo.RunInputs]] = {}
    for _, inputs in claimed.values():
        by_network.setdefault(inputs.network, []).append(inputs)
    states: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for network, runs in by_network.items():
        try:
            solved = perturbed_initial_states(
                build_system(network), [(r.ic_seed, r.ic_spread) for r in runs]
            )
        except (KeyError, ValueError):
            continue  # invalid inputs: each run's build records them
        except Exception:  # an optimization only: each run's build meets it and records it
            log.exception("network %r: solving the initial states together failed", network)
            continue
        for r in runs:
            if (r.ic_seed, r.ic_spread) in solved:
                states[r.run_id] = solved[r.ic_seed, r.ic_spread]
    return states


def solved_run(
    prepared: Prepared,
    result: SolveResult,
    phases: dict[str, float],
    call_seconds: float,
    *,
    batched: bool = False,
) -> Solved:
    """The solved run with its Zarr arrays, ready to publish (``commit``); ``call_seconds``:
    this run's share of the method call (kernels, compile/load and solve). Its time before
    publishing besides the call: alone, everything since its inputs were read; ``batched``
    (solved with others), its own claim share, build and arrays (the time since its inputs
    were read spans the other members' builds and the whole call)."""
    claim, inputs = prepared.claim, prepared.inputs
    phases["solve"] = call_seconds
    mark = time.perf_counter()
    arrays = run_arrays(
        result,
        attrs={
            "run_id": claim.run_id,
            "campaign_id": inputs.campaign_id,
            "attempt": claim.attempt,
            "network": inputs.network,
            "scenario": inputs.scenario_label,
        },
    )
    return Solved(
        claim=claim,
        campaign_id=inputs.campaign_id,
        probe=inputs.clearing_time is not None,
        result=result,
        arrays=arrays,
        before_seconds=(
            phases["claim"] + phases["build"] + time.perf_counter() - mark
            if batched
            else phases["claim"] + time.perf_counter() - prepared.inputs_mark - call_seconds
        ),
        phases=phases,
    )


def _execute_claimed(
    ctx: WorkerContext,
    claim: repo.Claim,
    inputs: repo.RunInputs,
    phases: dict[str, float],
    heartbeat: Heartbeat,
    defer: list[Solved] | None = None,
    initial_state: tuple[np.ndarray, np.ndarray] | None = None,
) -> str:
    prepared = prepare_run(ctx, claim, phases, inputs, initial_state)
    if isinstance(prepared, str):
        return prepared
    heartbeat.check()  # lost or cancelled while building? then stop here
    start = time.perf_counter()
    result = integrate(
        prepared.system, prepared.scenario, prepared.inputs.method, prepared.inputs.options,
        heartbeat, probe=prepared.inputs.clearing_time is not None,
    )  # fmt: skip
    solved = solved_run(prepared, result, phases, time.perf_counter() - start)
    if defer is not None:  # a batch publishes its runs together (``commit``)
        defer.append(solved)
        return "solved"
    return commit(ctx, [solved], heartbeat=heartbeat)[0]


def execute_batch(
    run_ids: list[int],
    *,
    worker: str,
    ctx: WorkerContext | None = None,
    time_limit_errors: tuple[type[BaseException], ...] = (),
    phases: list[dict[str, float]] | None = None,
) -> list[str]:
    """Run a batch message's runs, publishing the solved ones together. Runs of a method that
    solves several scenarios at once go through ``workers.vectorized``; the others run one
    after the other, published together:
    one Zarr block and one SQL transaction for up to ``result_block_max`` runs, so the write's
    fixed cost is shared. A run is held unpublished for at most ``result_flush_seconds``
    (and well inside its lease): before the next run starts, the held runs are published when
    that run could take them past the bound (judged by the last run's duration). So a crash
    recomputes at most that much finished work, and each run still ends complete in Zarr and
    SQL or is retried (``commit``). ``phases`` receives each run's phase seconds.

    The runs expected to finish within one such window are claimed together, in one
    transaction (a claim per run was ~2 ms of a 30 ms wscc9 run); those waiting behind the
    running one keep their leases through its heartbeats. A crash leaves them, like the solved
    runs held unpublished, to their leases (requeued after them, one attempt spent); runs
    longer than the window are claimed one at a time."""
    ctx = ctx or worker_context()
    from solvers.status import FailureReason, RunStatus
    from workers.vectorized import execute_together, vector_config

    if vector_config(ctx, run_ids) is not None:  # solved together, vectorized across runs
        outcomes = execute_together(
            run_ids, worker=worker, ctx=ctx, time_limit_errors=time_limit_errors, phases=phases
        )
        return [outcomes[run_id] for run_id in run_ids]
    settings = ctx.settings
    bound = min(settings.result_flush_seconds,
                (settings.lease_seconds - settings.heartbeat_seconds) / 2)  # fmt: skip
    held: list[Solved] = []
    outcomes: dict[int, str] = {}
    last = 0.0
    clock = LeaseClock(settings.heartbeat_seconds)

    def publish() -> None:
        if not held:
            return
        try:
            for s, outcome in zip(held, commit(ctx, held), strict=True):
                outcomes[s.claim.run_id] = outcome
        except TRANSIENT_ERRORS:
            raise  # left to their leases, as a run alone is
        except Exception as exc:  # the solved runs could not be published: recorded failures
            log.exception("runs %s: publishing failed", [s.claim.run_id for s in held])
            for s in held:
                _finish(ctx, s.claim, RunStatus.FAILED, reason=FailureReason.INTERNAL_ERROR.value,
                        message=f"{type(exc).__name__}: {exc}",
                        traceback=traceback.format_exc())  # fmt: skip
                outcomes[s.claim.run_id] = "internal-error"
        finally:
            held.clear()

    def group_size(position: int) -> int:
        """How many runs to claim together: those expected to finish within one flush window
        (judged by the last run's duration), one while that is unknown."""
        fit = int(bound // last) if last > 0 else 1
        return max(1, min(len(run_ids) - position, settings.result_block_max, fit))

    try:
        position = 0
        while position < len(run_ids):
            group = run_ids[position : position + group_size(position)]
            position += len(group)
            claimed, seconds = claim_group(ctx, group, worker=worker)
            waiting = [claimed[run_id][0] for run_id in group if run_id in claimed]
            mark = time.perf_counter()
            initial = group_initial_states(claimed) if len(claimed) > 1 else {}
            built = (time.perf_counter() - mark) / len(group)  # in each run's build
            for run_id in group:
                if held and (
                    len(held) >= settings.result_block_max
                    or time.monotonic() - held[0].finished_at + last > bound
                ):
                    publish()  # fmt: skip
                record: dict[str, float] = {"claim": seconds / len(group), "build": built}
                if phases is not None:
                    phases.append(record)
                if run_id not in claimed:
                    _not_claimable(run_id)
                    outcomes[run_id] = "skipped"
                    continue
                waiting.pop(0)
                started = time.monotonic()
                outcomes[run_id] = run_claimed(
                    ctx, *claimed[run_id], phases=record, time_limit_errors=time_limit_errors,
                    in_transit=tuple(run_ids[position:]), ahead=tuple(waiting), defer=held,
                    clock=clock, initial_state=initial.get(run_id),
                )  # fmt: skip
                last = time.monotonic() - started + record["claim"]
    finally:
        clock.close()
        publish()  # what was solved is published even when a later run raised
    return [outcomes[run_id] for run_id in run_ids]


@dataclass
class Solved:
    """A run solved by this attempt, not yet published: what its commit needs."""

    claim: repo.Claim
    campaign_id: int
    probe: bool
    """A CCT probe: recorded with its stability verdict."""
    result: SolveResult
    arrays: RunArrays
    """What is written to Zarr (``zarr_store.run_arrays``)."""
    before_seconds: float
    """Attempt seconds before publication outside the method call (claim, inputs, build)."""
    phases: dict[str, float]
    finished_at: float = dataclasses.field(default_factory=time.monotonic)


def commit(
    ctx: WorkerContext, runs: list[Solved], *, heartbeat: Heartbeat | None = None
) -> list[str]:
    """Publish solved runs (one Zarr group, or one block for several: ``write_block``), then
    record them in one transaction, then score them; returns each run's outcome in a word.
    Only runs whose lease is still held are published (``heartbeat.beat()`` for a single run,
    one renewal transaction for a block); the others are left to the attempt that owns them."""
    mark = time.perf_counter()
    if heartbeat is not None:
        heartbeat.beat()  # still ours? (raises LeaseLost) then publish, then commit
        held, outcomes = runs, {}
    else:
        held, outcomes = _still_held(ctx, runs)
    lease = time.perf_counter() - mark
    if held:
        first = held[0]
        if len(held) == 1:
            write_run(ctx.settings.zarr_root, first.campaign_id, first.claim.run_id,
                      first.arrays, fsync=ctx.settings.zarr_fsync,
                      pause=ctx.settings.zarr_write_pause_seconds)  # fmt: skip
        else:
            write_block(ctx.settings.zarr_root, first.campaign_id,
                        [(s.claim.run_id, s.arrays) for s in held],
                        fsync=ctx.settings.zarr_fsync)  # fmt: skip
    write = time.perf_counter() - mark - lease
    share = (lease + write) / max(1, len(held))
    rows = [(s, _metrics(s, share)) for s in held]
    mark = time.perf_counter()
    recorded = _finish_many(ctx, rows)
    commit_seconds = time.perf_counter() - mark
    mark = time.perf_counter()
    score_runs(ctx, {s.claim.run_id: s.result for s in held if recorded[s.claim.run_id]})
    score = time.perf_counter() - mark
    for s, metrics in rows:
        s.phases.update(lease=lease / len(held), write=write / len(held),
                        commit=commit_seconds / len(held), score=score / len(held))  # fmt: skip
        recorded_here = recorded[s.claim.run_id]
        outcomes[s.claim.run_id] = s.result.status.value if recorded_here else "lease-lost"
        stats = s.result.stats
        log.info(
            "run %d attempt %d %s: solve %.3f s, compile+load %.3f s, overhead %.3f s "
            "(zarr %.3f s for %d run%s)",
            s.claim.run_id, s.claim.attempt, s.result.status.value, stats.solve_seconds,
            stats.compile_seconds + stats.load_seconds, metrics["overhead_seconds"], write,
            len(held), "s" if len(held) > 1 else "",
        )  # fmt: skip
    return [outcomes[s.claim.run_id] for s in runs]


def _metrics(s: Solved, publish_share: float) -> dict:
    stats, result = s.result.stats, s.result
    return {
        **stats.as_dict(),
        # the attempt's time outside solving, compiling and loading: claim, inputs, build,
        # the method call's own bookkeeping, and its share of the lease check and the write
        "overhead_seconds": max(
            0.0,
            s.before_seconds
            + publish_share
            + s.phases["solve"]
            - stats.solve_seconds
            - stats.compile_seconds
            - stats.load_seconds,
        ),  # fmt: skip
        "n_points": int(len(result.t_eval)),
        "n_accepted_points": int(len(result.t)),
        "final_time": float(result.t[-1]) if len(result.t) else None,
        "warnings": "; ".join(result.warnings) or None,
    }


def _verdict(s: Solved) -> bool | None:
    """A CCT probe's verdict: TSI > 0 over its trajectory (``scoring.indicators``); None when
    the solve did not succeed (the search then ends as failed)."""
    from raptorgrid.scoring.indicators import stability_indicators

    from solvers.status import RunStatus

    if s.result.status is not RunStatus.SUCCEEDED:
        return None
    return bool(stability_indicators(s.result).stable)


def _still_held(ctx: WorkerContext, runs: list[Solved]) -> tuple[list[Solved], dict[int, str]]:
    """The runs whose lease this worker still holds (renewed, one transaction)."""

    def renew() -> dict[int, repo.LeaseState]:
        with ctx.db.write() as session:
            return repo.renew_leases(
                session=session,
                attempts={s.claim.run_id: s.claim.attempt for s in runs},
                now=utcnow(),
                lease_seconds=ctx.settings.lease_seconds,
                sim_times={s.claim.run_id: float(s.result.t[-1]) for s in runs if len(s.result.t)},
            )

    states = with_db_retry(renew, settings=ctx.settings, what="batch lease check")
    lost = {run_id: "lease-lost" for run_id, state in states.items()
            if state is repo.LeaseState.LOST}  # fmt: skip
    for run_id in lost:
        log.warning("run %d: lease lost before publishing; leaving the run to it", run_id)
    return [s for s in runs if s.claim.run_id not in lost], lost


def _finish_many(ctx: WorkerContext, rows: list[tuple[Solved, dict]]) -> dict[int, bool]:
    """Record the published runs' final status and metrics in one transaction."""

    def finish() -> list[repo.FinishOutcome]:
        finishes = [
            repo.Finish(
                run_id=s.claim.run_id,
                attempt=s.claim.attempt,
                status=s.result.status,
                reason=s.result.reason.value if s.result.reason is not None else None,
                message=s.result.message,
                zarr_group=run_group_path(s.campaign_id, s.claim.run_id),
                metrics=metrics,
                stable=_verdict(s) if s.probe else None,
            )
            for s, metrics in rows
        ]
        with ctx.db.write() as session:
            return repo.finish_runs(session=session, finishes=finishes, now=utcnow())

    if not rows:
        return {}
    outcomes = with_db_retry(finish, settings=ctx.settings, what=f"{len(rows)} runs finish")
    for (s, _), outcome in zip(rows, outcomes, strict=True):
        if not outcome.recorded:
            log.warning("run %d attempt %d: a later attempt owns the run",
                        s.claim.run_id, s.claim.attempt)  # fmt: skip
    ctx.send([run_id for o in outcomes for run_id in o.queued])
    for campaign_id in {o.campaign_id for o in outcomes if o.campaign_finished}:
        consolidate_campaign(ctx.settings.zarr_root, campaign_id)
        log.info("campaign %d finished", campaign_id)
    return {s.claim.run_id: o.recorded for (s, _), o in zip(rows, outcomes, strict=True)}
