"""What an attempt's exception becomes: the one mapping from exceptions to the runs' recorded
(status, reason), used by every path that solves runs (alone, in a batch, vectorized).

* the lease was lost (``LeaseLost``): nothing is recorded, the run belongs to a later attempt;
* the campaign was cancelled (``RunCancelled``): ``cancelled``;
* the soft time limit (``RunTimeLimit`` or Celery's ``time_limit_errors``): ``failed`` with
  reason ``time_limit`` (written again if Celery's backstop interrupts the write);
* the results store full (``raptorgrid.store_space.is_full``; the write was retried for
  ``store_retry_seconds``, ``workers.store_retry``): the runs go back to the queue, their
  attempt not counted, their message saying why they wait (``repo.release_runs``);
* the database unreachable (``TRANSIENT_ERRORS``): logged and raised, the runs left to their
  leases (the reconciler requeues them, bounded by ``max_attempts``), since the run did not
  cause it;
* anything else: ``failed`` with reason ``internal_error``, the traceback kept on the run row.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Sequence

from raptorgrid import repository as repo
from raptorgrid.store_space import is_full
from raptorgrid.tables import utcnow

from workers.context import TRANSIENT_ERRORS, WorkerContext, finish_attempt, with_db_retry
from workers.lease import LeaseLost, RunCancelled
from workers.limits import RunTimeLimit, despite_late_limit

log = logging.getLogger(__name__)


def settle(
    ctx: WorkerContext,
    claims: Sequence[repo.Claim],
    exc: BaseException,
    *,
    time_limit_errors: tuple[type[BaseException], ...] = (),
    what: str = "",
) -> str:
    """Record ``exc``, raised while ``claims`` were being solved or published, as their result
    (see the module docstring) and return the outcome in a word, as the worker logs it. Call it
    from the ``except`` block that caught ``exc`` (the traceback is that block's)."""
    from solvers.status import FailureReason, RunStatus

    what = what or ", ".join(f"run {c.run_id} attempt {c.attempt}" for c in claims)
    if isinstance(exc, LeaseLost):
        log.warning("%s; leaving the run to it", exc)
        return "lease-lost"
    if isinstance(exc, RunCancelled):
        for claim in claims:
            finish_attempt(ctx, claim, RunStatus.CANCELLED, reason=FailureReason.CANCELLED.value,
                           message=FailureReason.CANCELLED.advice)  # fmt: skip
        return "cancelled"
    if isinstance(exc, (RunTimeLimit, *time_limit_errors)):
        limit = ctx.settings.soft_time_limit
        message = f"stopped at the soft time limit ({limit:g} s): {FailureReason.TIME_LIMIT.advice}"

        def record() -> None:
            for claim in claims:
                finish_attempt(ctx, claim, RunStatus.FAILED,
                               reason=FailureReason.TIME_LIMIT.value, message=message)  # fmt: skip

        despite_late_limit(record, time_limit_errors)
        return "time-limit"
    if is_full(exc):  # an infrastructure failure: the runs wait for space, attempt not counted
        log.error("%s: results store full; runs handed back to the queue: %s", what, exc)
        message = (
            f"{repo.STORE_FULL} ({exc}); retried after "
            f"{ctx.settings.requeue_grace_seconds:g} s, the attempt not counted"
        )

        def release() -> list[int]:
            attempts = {c.run_id: c.attempt for c in claims}
            with ctx.db.write() as session:
                return repo.release_runs(
                    session=session, attempts=attempts, now=utcnow(), message=message
                )

        with_db_retry(release, settings=ctx.settings, what=f"{what}: release")
        return "store-full"
    if isinstance(exc, TRANSIENT_ERRORS):
        log.exception("%s: database unavailable; left to the lease", what)
        raise exc
    log.exception("%s: unexpected error", what)
    for claim in claims:
        finish_attempt(ctx, claim, RunStatus.FAILED, reason=FailureReason.INTERNAL_ERROR.value,
                       message=f"{type(exc).__name__}: {exc}",
                       traceback=traceback.format_exc())  # fmt: skip
    return "internal-error"
