"""Retrying a campaign's failed runs: the rows put back in the queue in one transaction
(``repository.retry.retry_failed``), then, after the commit, the runs sent to the broker in
batches sized as the reconciler's re-sends (``raptorgrid.resend``). Should the broker be down,
the runs stay queued and the reconciler sends them after ``requeue_grace_seconds``."""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass

from celery import Celery
from kombu.exceptions import OperationalError as BrokerUnavailable

from raptorgrid.db import Database
from raptorgrid.queueing import enqueue_runs
from raptorgrid.repository.retry import NotRetryable, retry_failed
from raptorgrid.resend import resend_batches
from raptorgrid.settings import Settings
from raptorgrid.tables import utcnow
from solvers.status import FailureReason

log = logging.getLogger(__name__)

__all__ = ["NotRetryable", "Retried", "retry_campaign"]


@dataclass(frozen=True)
class Retried:
    """What a retry did: the runs put back in the queue and the messages that carried them."""

    campaign_id: int
    run_ids: list[int]
    messages: int
    sent: bool
    """False when the broker could not be reached (the reconciler sends the runs later)."""


def retry_campaign(
    *,
    db: Database,
    celery: Celery,
    settings: Settings,
    campaign_id: int,
    reasons: Collection[FailureReason],
) -> Retried | None:
    """Retry the campaign's failed runs of ``reasons``; None when there is no such campaign,
    ``NotRetryable`` when it was cancelled."""
    with db.write() as session:
        run_ids = retry_failed(
            session=session, campaign_id=campaign_id, reasons=reasons, now=utcnow()
        )
    if run_ids is None:
        return None
    if not run_ids:
        return Retried(campaign_id, [], 0, True)
    with db.read() as session:
        messages = resend_batches(session=session, run_ids=run_ids, settings=settings)
    try:
        enqueue_runs(
            celery,
            run_ids,
            queue=settings.queue,
            batches=messages,
            time_limits=(settings.soft_time_limit, settings.hard_time_limit),
        )
    except BrokerUnavailable as exc:
        log.warning(
            "campaign %d: %d runs retried but the broker is unreachable (%s): they stay queued "
            "and the reconciler sends them",
            campaign_id,
            len(run_ids),
            exc,
        )
        return Retried(campaign_id, run_ids, 0, False)
    log.info("campaign %d: %d failed runs retried in %d messages", campaign_id, len(run_ids),
             len(messages))  # fmt: skip
    return Retried(campaign_id, run_ids, len(messages), True)
