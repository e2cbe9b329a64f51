"""Repository side of the reconciler: runs whose lease expired, and queued runs gone stale."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from raptorgrid.repository.campaigns import record_final
from raptorgrid.tables import Campaign, Run
from solvers.status import FailureReason, RunStatus

_NO_SYNC = {"synchronize_session": False}


@dataclass
class Requeue:
    """What one reconciliation pass decided (run ids), and campaigns it finished."""

    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    finished_campaigns: list[int] = field(default_factory=list)
    messages: list[list[int]] = field(default_factory=list)
    """The messages the pass sent, as run ids (``raptorgrid.resend``: batched)."""


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
    held: Mapping[int, datetime] | None = None,
    lease_seconds: float | None = None,
    limit: int = 1000,
    page: int = 5000,
) -> list[int]:
    """Queued runs to send again, marked as sent now; at most ``limit``:

    * lost: last sent more than ``older_than`` seconds ago and in no message the broker has
      (not in ``in_broker``, ``queueing.broker_runs`` read *after* this call's snapshot could
      only add runs). A serverless transport loses the message of a killed worker.
    * held by a dead host: in ``held`` only (run id -> when its message was delivered, no copy
      waiting), delivered and last marked in transit (``mark_in_transit``, every heartbeat of
      the worker running the batch) more than ``lease_seconds`` ago. An unstarted run of a held
      batch carries the lease of the batch's running run: its holder stopped heartbeating, so
      the run is not left to the broker's visibility timeout. Should the holder live after
      all, the duplicate is discarded by the claim.

    Re-sending is safe (claims are idempotent). The queued runs are read in pages of ``page``
    ids, so a lost message deep behind a long queue is found on the same pass."""
    held = held or {}
    cutoff = now - timedelta(seconds=older_than)
    lease_cutoff = None if lease_seconds is None else now - timedelta(seconds=lease_seconds)
    selected = cutoff if lease_cutoff is None else max(cutoff, lease_cutoff)  # either test

    def resend(run_id: int, sent: datetime) -> bool:
        if run_id not in in_broker:
            return sent < cutoff
        delivered = held.get(run_id)
        return (
            lease_cutoff is not None
            and delivered is not None
            and delivered < lease_cutoff
            and sent < lease_cutoff
        )

    lost: list[int] = []
    after = -1
    while len(lost) < limit:
        rows = session.execute(
            select(Run.id, Run.enqueued_at)
            .where(Run.status == RunStatus.QUEUED.value, Run.enqueued_at < selected,
                   Run.id > after)
            .order_by(Run.id)
            .limit(page)
        ).all()  # fmt: skip
        lost.extend(run_id for run_id, sent in rows if resend(run_id, sent))
        if len(rows) < page:
            break
        after = rows[-1][0]
    lost = lost[:limit]
    if lost:
        session.execute(
            update(Run).where(Run.id.in_(lost)).values(enqueued_at=now)
            .execution_options(**_NO_SYNC)
        )  # fmt: skip
    return lost


@dataclass(frozen=True)
class RunToResend:
    """What sizing a re-sent run's batch needs (``raptorgrid.resend``)."""

    run_id: int
    campaign_id: int
    network: str
    t_end: float
    method: str
    config_label: str


def runs_to_resend(*, session: Session, run_ids: Collection[int]) -> list[RunToResend]:
    """The runs ``run_ids`` with their campaign's network and horizon, in id order."""
    if not run_ids:
        return []
    rows = session.execute(
        select(Run.id, Run.campaign_id, Campaign.network, Campaign.t_end, Run.method,
               Run.config_label)
        .join(Campaign, Campaign.id == Run.campaign_id)
        .where(Run.id.in_(list(run_ids)))
        .order_by(Run.id)
    ).all()  # fmt: skip
    return [RunToResend(*row) for row in rows]


STORE_FULL = "waiting for space in the results store"
"""How a run handed back for lack of space in the results store begins its message
(``release_runs``); ``store_waiting`` counts them."""


def store_waiting(*, session: Session, campaign_id: int) -> int:
    """Queued runs of the campaign handed back because the results store was full."""
    return int(
        session.scalar(
            select(func.count()).where(
                Run.campaign_id == campaign_id,
                Run.status == RunStatus.QUEUED.value,
                Run.message.startswith(STORE_FULL),
            )
        )
        or 0
    )


def release_runs(
    *, session: Session, attempts: Mapping[int, int], now: datetime, message: str
) -> list[int]:
    """Hand running attempts back to the queue without counting them (their worker could not
    publish for a reason outside the run, a full results store): queued again, the attempt
    count restored, ``message`` saying why they wait; the reconciler re-sends them after
    ``requeue_grace_seconds``. Only attempts that still own their run; returns those run ids."""
    released = []
    for run_id, attempt in attempts.items():
        changed = session.execute(
            update(Run)
            .where(Run.id == run_id, Run.attempts == attempt,
                   Run.status == RunStatus.RUNNING.value)
            .values(status=RunStatus.QUEUED.value, attempts=attempt - 1, lease_until=None,
                    enqueued_at=now, message=message)
            .execution_options(**_NO_SYNC)
        ).rowcount  # fmt: skip
        if changed:
            released.append(run_id)
    return released
