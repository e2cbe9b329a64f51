"""Repository side of the reconciler: runs whose lease expired, and queued runs gone stale."""

from __future__ import annotations

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
    clock ``stale_queued`` measures (the queue looks empty while a worker holds the batch)."""
    if run_ids:
        session.execute(
            update(Run)
            .where(Run.id.in_(run_ids), Run.status == RunStatus.QUEUED.value)
            .values(enqueued_at=now)
            .execution_options(**_NO_SYNC)
        )


def stale_queued(
    *, session: Session, now: datetime, older_than: float, limit: int = 1000
) -> list[int]:
    """Queued runs last sent more than ``older_than`` seconds ago, marked as sent now.

    Call only when the broker queue is empty: then their messages were lost (a serverless
    transport loses the message of a killed worker) and re-sending them is safe (claims are
    idempotent)."""
    cutoff = now - timedelta(seconds=older_than)
    ids = list(
        session.scalars(
            select(Run.id)
            .where(Run.status == RunStatus.QUEUED.value, Run.enqueued_at < cutoff)
            .order_by(Run.id)
            .limit(limit)
        )
    )
    if ids:
        session.execute(
            update(Run).where(Run.id.in_(ids)).values(enqueued_at=now).execution_options(**_NO_SYNC)
        )
    return ids
