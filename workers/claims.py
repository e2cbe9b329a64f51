"""Claiming runs: one transaction claims a group of runs (each with its own lease and attempt)
and reads their inputs (``raptorgrid.repository.claim_runs``, ``runs_inputs``)."""

from __future__ import annotations

import logging
import time

from raptorgrid import repository as repo
from raptorgrid.tables import utcnow

from workers.context import WorkerContext, with_db_retry

log = logging.getLogger(__name__)

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


def not_claimable(run_id: int) -> None:
    log.info("run %d not claimable (held by another attempt, final, or out of attempts)", run_id)
