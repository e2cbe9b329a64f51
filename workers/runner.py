"""Execute runs: claim, build, solve, write Zarr, then commit status and metrics.

Idempotent under at-least-once delivery: the SQL claim (one conditional UPDATE with a lease)
admits one attempt at a time, the trajectory is renamed into place before the commit, and the
commit only applies to the attempt that still owns the run. So a run ends complete in both Zarr
and SQL, or is retried; never half written, never duplicated. The parts, in pipeline order:
``workers.claims`` (claiming runs with their inputs), ``workers.prepare`` (building a claimed
run), ``workers.lease`` (heartbeats), ``workers.limits`` (the soft time limit),
``workers.publish`` (Zarr, SQL and scoring of solved runs), ``workers.attempt`` (what an
exception becomes: the one mapping to status and reason), ``workers.vectorized`` (a batch solved
together) and ``workers.context`` (the process's state, retried transactions).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from raptorgrid import repository as repo

from workers.attempt import settle
from workers.claims import claim_group, not_claimable
from workers.context import TRANSIENT_ERRORS, WorkerContext, worker_context
from workers.lease import Heartbeat, LeaseClock
from workers.limits import RunTimeLimit, run_alarm
from workers.prepare import group_initial_states, prepare_run, solved_run
from workers.publish import Solved, commit
from workers.vectorized import execute_together, vector_config

if TYPE_CHECKING:
    import numpy as np

    from solvers.result import SolveResult

log = logging.getLogger(__name__)


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
        not_claimable(run_id)
        return "skipped"
    return run_claimed(ctx, *claimed[run_id], phases=phases, time_limit_errors=time_limit_errors)


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
    (``group_initial_states``). What an exception becomes: ``workers.attempt.settle``."""
    try:
        with Heartbeat(ctx, claim, in_transit, clock, ahead) as heartbeat:
            return _execute_claimed(ctx, claim, inputs, phases, heartbeat, defer, initial_state)
    except (Exception, RunTimeLimit, *time_limit_errors) as exc:
        return settle(ctx, [claim], exc, time_limit_errors=time_limit_errors)


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
    if vector_config(ctx, run_ids) is not None:  # solved together, vectorized across runs
        outcomes = execute_together(
            run_ids, worker=worker, ctx=ctx, time_limit_errors=time_limit_errors, phases=phases
        )
        return [outcomes[run_id] for run_id in run_ids]
    settings = ctx.settings
    bound = min(settings.result_flush_seconds,
                (settings.lease_seconds - settings.heartbeat_seconds) / 2)  # fmt: skip
    held: list[Solved] = []
    waiting: list[repo.Claim] = []  # claimed with the running group, not yet started
    outcomes: dict[int, str] = {}
    last = 0.0
    clock = LeaseClock(settings.heartbeat_seconds)

    def publish() -> None:
        if not held:
            return
        try:  # their leases, and those of the runs waiting, renewed while written (slow store)
            ahead = (*(s.claim for s in held[1:]), *waiting)
            with Heartbeat(ctx, held[0].claim, tuple(run_ids[position:]), clock, ahead):
                published = commit(ctx, held)
            for s, outcome in zip(held, published, strict=True):
                outcomes[s.claim.run_id] = outcome
        except TRANSIENT_ERRORS:
            raise  # left to their leases, as a run alone is
        except Exception as exc:  # the solved runs could not be published: recorded failures
            what = f"runs {[s.claim.run_id for s in held]}: publishing"
            outcome = settle(ctx, [s.claim for s in held], exc, what=what)
            outcomes.update((s.claim.run_id, outcome) for s in held)
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
            waiting[:] = [claimed[run_id][0] for run_id in group if run_id in claimed]
            mark = time.perf_counter()
            initial = {}
            if len(waiting) > 1:  # their leases renewed meanwhile (a cold compile may be long)
                with Heartbeat(ctx, waiting[0], tuple(run_ids[position:]), clock,
                               tuple(waiting[1:])):  # fmt: skip
                    initial = group_initial_states(claimed, reraise=time_limit_errors)
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
                    not_claimable(run_id)
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
        try:
            publish()  # what was solved is published even when a later run raised
        finally:
            clock.close()
    return [outcomes[run_id] for run_id in run_ids]
