"""A batch message's runs solved together, vectorized across them (``solvers.solve_batch``).

A batch carries runs of one configuration (``raptorgrid.batching``); when its method can be
solved as a batch (``solvers.api.batch_solver``) the worker claims the runs, builds them, solves
them in one call and publishes them together (``workers.publish.commit``: one Zarr block, one
SQL transaction). The guarantees are the one-at-a-time path's: each run is claimed with its own
lease and attempt count; the leases are renewed together from a thread while the batch solves
and while it is written (``GroupLease``); only runs whose lease is still held are published, a
run whose campaign was cancelled meanwhile is recorded as cancelled, and a crash before the
commit leaves every run to its lease (requeued, recomputed; nothing half written). A run that
fails inside the batch is solved again alone (``solve_batch``), so its failure is the one
``solve`` gives.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from raptorgrid import repository as repo
from raptorgrid.tables import utcnow

from workers.attempt import settle
from workers.claims import claim_group
from workers.context import TRANSIENT_ERRORS, WorkerContext, finish_attempt, with_db_retry
from workers.lease import RunCancelled
from workers.limits import RunTimeLimit
from workers.prepare import Prepared, group_initial_states, prepare_run, solved_run
from workers.publish import commit

log = logging.getLogger(__name__)


def vector_config(ctx: WorkerContext, run_ids: list[int]) -> dict[int, repo.RunInputs] | None:
    """The batch's inputs (run id -> inputs, read in one transaction) when every run shares
    network, method and options and the method solves them as a batch here; else None (the
    runs go one after the other). ``execute_together`` reads the inputs again with its claims
    (a campaign cancelled in between has its queued runs cancelled, so they are not claimed)."""
    if len(run_ids) < 2:
        return None
    from models.library import build_system
    from solvers.api import batch_solver
    from solvers.catalogue import validate_options

    def read(ids: list[int]) -> list[repo.RunInputs]:
        with ctx.db.read() as session:
            found = repo.runs_inputs(session=session, run_ids=ids)
            return [found[r] for r in ids]

    try:  # the first run decides whether the method batches here (most do not): one read
        (first,) = with_db_retry(lambda: read(run_ids[:1]), settings=ctx.settings,
                                 what="batch inputs")  # fmt: skip
        system = build_system(first.network)
        options = validate_options(first.method, first.options)
        if batch_solver(system, first.method, options) is None:
            return None
        inputs = with_db_retry(lambda: read(run_ids), settings=ctx.settings, what="batch inputs")
        same = all(
            (i.network, i.method, i.options) == (first.network, first.method, first.options)
            for i in inputs
        )
    except TRANSIENT_ERRORS:
        raise
    except Exception:  # noqa: BLE001 - bad inputs are recorded run by run on the other path
        return None
    if not same:
        return None
    return {i.run_id: i for i in inputs}


class GroupLease:
    """Keeps the leases of several claimed runs while they solve together: a thread renews
    them all in one transaction whenever ``heartbeat_seconds`` passed; ``states`` holds the
    latest state of each run (held, lost, cancelled)."""

    def __init__(self, ctx: WorkerContext, claims: list[repo.Claim]) -> None:
        self.ctx, self.claims = ctx, list(claims)
        self.states: dict[int, repo.LeaseState] = {c.run_id: repo.LeaseState.HELD for c in claims}
        self.last = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> GroupLease:
        self._thread = threading.Thread(target=self._keep, name="lease-group", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.ctx.settings.heartbeat_seconds + 10)

    def renew(self) -> dict[int, repo.LeaseState]:
        """Renew every lease still held (one transaction); returns the states."""
        with self._lock:
            held = [c for c in self.claims if self.states[c.run_id] is repo.LeaseState.HELD]
            with self.ctx.db.write() as session:
                self.states.update(
                    repo.renew_leases(
                        session=session,
                        attempts={c.run_id: c.attempt for c in held},
                        now=utcnow(),
                        lease_seconds=self.ctx.settings.lease_seconds,
                    )
                )
            self.last = time.monotonic()
            return dict(self.states)

    def _keep(self) -> None:
        period = self.ctx.settings.heartbeat_seconds
        while not self._stop.wait(period / 2):
            if time.monotonic() - self.last < period:
                continue
            try:
                self.renew()
            except Exception as exc:  # noqa: BLE001 - the commit's own lease check reports it
                log.warning("batch lease renewal from the heartbeat thread failed: %s", exc)


def execute_together(
    run_ids: list[int],
    *,
    worker: str,
    ctx: WorkerContext,
    time_limit_errors: tuple[type[BaseException], ...] = (),
    phases: list[dict[str, float]] | None = None,
) -> dict[int, str]:
    """Claim (with their inputs, in one transaction), build, solve together and publish
    ``run_ids`` (one configuration, ``vector_config``); returns each run's outcome in a word
    (as ``execute_run``)."""
    from solvers.status import FailureReason, RunStatus

    outcomes: dict[int, str] = {}
    records: dict[int, dict[str, float]] = {run_id: {} for run_id in run_ids}
    claimed, seconds = claim_group(ctx, run_ids, worker=worker)  # one transaction
    claims = [claimed[run_id][0] for run_id in run_ids if run_id in claimed]
    inputs = {run_id: run_inputs for run_id, (_, run_inputs) in claimed.items()}
    share = seconds / len(run_ids)
    for run_id in run_ids:
        records[run_id]["claim"] = share
        if run_id not in claimed:
            outcomes[run_id] = "skipped"
    if not claims:
        return outcomes

    def finish_all(pending: list[repo.Claim], status, reason: FailureReason, message: str,
                   **fields: Any) -> None:  # fmt: skip
        for claim in pending:
            finish_attempt(ctx, claim, status, reason=reason.value, message=message, **fields)
            outcomes[claim.run_id] = reason.value.replace("_", "-")

    prepared: list[Prepared] = []
    pending = list(claims)
    try:
        with GroupLease(ctx, claims) as lease:
            mark = time.perf_counter()
            initial = group_initial_states(claimed, reraise=time_limit_errors)
            built = (time.perf_counter() - mark) / len(claims)  # in each run's build
            for claim in claims:
                records[claim.run_id]["build"] = built
                try:
                    ready = prepare_run(ctx, claim, records[claim.run_id], inputs[claim.run_id],
                                        initial.get(claim.run_id))  # fmt: skip
                except RunCancelled:
                    finish_all([claim], RunStatus.CANCELLED, FailureReason.CANCELLED,
                               FailureReason.CANCELLED.advice)  # fmt: skip
                    pending.remove(claim)
                    continue
                if isinstance(ready, str):
                    outcomes[claim.run_id] = ready
                    pending.remove(claim)
                else:
                    prepared.append(ready)
            solved = _solve(ctx, lease, prepared, records, finish_all) if prepared else []
            # settled while solving (cancelled, or lost to another attempt): no longer pending
            unsolved = {p.claim.run_id for p in prepared} - {s.claim.run_id for s in solved}
            pending = [c for c in pending if c.run_id not in unsolved]
            block = max(1, ctx.settings.result_block_max)
            for i in range(0, len(solved), block):  # the leases still renewed while written
                part = solved[i : i + block]
                for s, outcome in zip(part, commit(ctx, part), strict=True):
                    outcomes[s.claim.run_id] = outcome
                # published and recorded: a later part's failure is not theirs
                pending = [c for c in pending if c.run_id not in {s.claim.run_id for s in part}]
        for claim in claims:  # lost while solving: left to the attempt that owns it now
            outcomes.setdefault(claim.run_id, "lease-lost")
    except (Exception, RunTimeLimit, *time_limit_errors) as exc:  # every run still pending
        outcome = settle(ctx, pending, exc, time_limit_errors=time_limit_errors,
                         what=f"batch {run_ids}")  # fmt: skip
        outcomes.update((claim.run_id, outcome) for claim in pending)
    if phases is not None:
        phases.extend(records[run_id] for run_id in run_ids)
    return outcomes


def _solve(ctx: WorkerContext, lease: GroupLease, prepared: list[Prepared], records, finish_all):
    """Solve the prepared runs together; the ones whose lease is still held and whose campaign
    is not cancelled come back solved, ready to publish."""
    from solvers import solve_batch
    from solvers.status import FailureReason, RunStatus

    first = prepared[0].inputs
    start = time.perf_counter()
    results = solve_batch(
        prepared[0].system, [p.scenario for p in prepared], first.method, **first.options
    )
    share = (time.perf_counter() - start) / len(prepared)
    states = with_db_retry(lease.renew, settings=ctx.settings, what="batch lease check")
    solved = []
    for p, result in zip(prepared, results, strict=True):
        run_id = p.claim.run_id
        if states[run_id] is repo.LeaseState.CANCELLED:
            finish_all([p.claim], RunStatus.CANCELLED, FailureReason.CANCELLED,
                       FailureReason.CANCELLED.advice)  # fmt: skip
        elif states[run_id] is repo.LeaseState.LOST:
            log.warning("run %d: lease lost while solving; leaving the run to it", run_id)
        else:
            solved.append(solved_run(p, result, records[run_id], share, batched=True))
    return solved
