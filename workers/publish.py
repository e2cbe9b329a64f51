"""Publishing solved runs (``commit``): one Zarr group, or one block for several, then one SQL
transaction for their final status and metrics, then their scoring; only the runs whose lease
is still held are published."""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from raptorgrid import repository as repo
from raptorgrid.tables import utcnow
from raptorgrid.zarr_store import (
    RunArrays,
    consolidate_campaign,
    run_group_path,
    write_block,
    write_run,
)

from workers.context import WorkerContext, with_db_retry
from workers.store_retry import with_store_retry

if TYPE_CHECKING:
    from solvers.result import SolveResult
    from workers.lease import Heartbeat

log = logging.getLogger(__name__)


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

        def write() -> None:
            if len(held) == 1:
                write_run(ctx.settings.zarr_root, first.campaign_id, first.claim.run_id,
                          first.arrays, fsync=ctx.settings.zarr_fsync,
                          pause=ctx.settings.zarr_write_pause_seconds)  # fmt: skip
            else:
                write_block(ctx.settings.zarr_root, first.campaign_id,
                            [(s.claim.run_id, s.arrays) for s in held],
                            fsync=ctx.settings.zarr_fsync)  # fmt: skip

        with_store_retry(write, settings=ctx.settings,
                         what=f"runs {[s.claim.run_id for s in held]}")  # fmt: skip
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
