"""Repository side of the reconciler: runs whose lease expired, and queued runs gone stale."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from raptorgrid.repository.campaigns import record_final
from raptorgrid.tables import Run
from solvers.status import FailureReason, RunStatus

_NO_SYNC = {"synchronize_session": False}


@dataclass
class Requeue:
    """What one reconciliation pass decided (run ids), and campaigns it finished."""

    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    finished_campaigns: list[int] = field(default_factory=list)


def requeue_expired(*, session: Session, now: datetime, max_attempts: int) -> Requeue:
    """Running runs whose lease expired (their worker died): back to queued, or failed once
    they have used ``max_attempts`` claims (a run that kills its worker must not loop)."""
    outcome = Requeue()
    expired = session.execute(
        select(Run.id, Run.attempts, Run.campaign_id, Run.worker).where(
            Run.status == RunStatus.RUNNING.value, Run.lease_until < now
        )
    ).all()
    for run_id, attempts, campaign_id, worker in expired:
        guard = (
            Run.id == run_id,
            Run.attempts == attempts,
            Run.status == RunStatus.RUNNING.value,
            Run.lease_until < now,
        )
        if attempts >= max_attempts:
            changed = session.execute(
                update(Run)
                .where(*guard)
                .values(
                    status=RunStatus.FAILED.value,
                    reason=FailureReason.INTERNAL_ERROR.value,
                    message=(
                        f"the worker ({worker}) stopped heartbeating {attempts} times (killed, "
                        "out of memory or lost); the run is not retried again"
                    ),
                    lease_until=None,
                    finished_at=now,
                )
                .execution_options(**_NO_SYNC)
            ).rowcount
            if changed:
                outcome.failed.append(run_id)
                if record_final(
                    session=session, campaign_id=campaign_id, now=now, failed=1, run_ids=[run_id]
                ):
                    outcome.finished_campaigns.append(campaign_id)
        else:
            changed = session.execute(
                update(Run)
                .where(*guard)
                .values(status=RunStatus.QUEUED.value, lease_until=None, enqueued_at=now)
                .execution_options(**_NO_SYNC)
            ).rowcount
            if changed:
                outcome.requeued.append(run_id)
    return outcome


def mark_in_transit(*, session: Session, run_ids: list[int], now: datetime) -> None:
    """Queued runs of a batch message a worker holds: their message is not lost, so reset the
    clock ``stale_queued`` measures (a transport that hides delivered messages, the embedded
    SQLAlchemy one, no longer lists that message)."""
    if run_ids:
        session.execute(
            update(Run)
            .where(Run.id.in_(run_ids), Run.status == RunStatus.QUEUED.value)
            .values(enqueued_at=now)
            .execution_options(**_NO_SYNC)
        )


def stale_queued(
    *,
    session: Session,
    now: datetime,
    older_than: float,
    in_broker: Collection[int] = frozenset(),
    limit: int = 1000,
    page: int = 5000,
) -> list[int]:
    """Queued runs last sent more than ``older_than`` seconds ago whose message the broker no
    longer has (not in ``in_broker``, ``queueing.runs_in_broker`` read *after* this call's
    snapshot could only add runs), marked as sent now; at most ``limit``.

    Their messages were lost (a serverless transport loses the message of a killed worker), and
    re-sending them is safe (claims are idempotent). The queued runs are read in pages of
    ``page`` ids, so a lost message deep behind a long queue is found on the same pass."""
    cutoff = now - timedelta(seconds=older_than)
    lost: list[int] = []
    after = -1
    while len(lost) < limit:
        ids = list(
            session.scalars(
                select(Run.id)
                .where(Run.status == RunStatus.QUEUED.value, Run.enqueued_at < cutoff,
                       Run.id > after)
                .order_by(Run.id)
                .limit(page)
            )
        )  # fmt: skip
        lost.extend(i for i in ids if i not in in_broker)
        if len(ids) < page:
            break
        after = ids[-1]
    lost = lost[:limit]
    if lost:
        session.execute(
            update(Run).where(Run.id.in_(lost)).values(enqueued_at=now)
            .execution_options(**_NO_SYNC)
        )  # fmt: skip
    return lost
