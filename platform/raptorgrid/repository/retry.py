"""Retrying a campaign's failed runs (``raptorgrid retry``, ``POST /campaigns/{id}/retry``).

A final status is otherwise written once (``totals``): retrying takes runs back from it, so
everything that counted them is made consistent again in the same transaction, with the
campaign row locked first (as ``record_final`` locks it):

* the chosen failed runs go back to queued: attempts reset, reason, message, traceback, worker,
  lease, progress, result group and finishing fields cleared, their metrics rows removed;
* the campaign's ``n_failed`` loses them and it is running again (``finished_at`` cleared);
* its per-configuration totals are rebuilt from the runs (``totals.rebuild``, which also bumps
  ``stats_version``: cached statistics are invalidated).

The caller sends the runs to the broker after the commit (``raptorgrid.retry``). A run that is
not failed, or failed for another reason, is untouched; so are a CCT search's probes (a failed
probe ended its search, which does not resume).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from raptorgrid.repository import totals
from raptorgrid.tables import Campaign, CampaignStatus, Run, RunMetrics
from solvers.status import FailureReason, RunStatus

_NO_SYNC = {"synchronize_session": False}

RETRY_REASONS = tuple(r for r in FailureReason if r is not FailureReason.CANCELLED)
"""The reasons a failed run may have (a cancelled run is cancelled, not failed)."""
DEFAULT_RETRY_REASONS = (FailureReason.INTERNAL_ERROR, FailureReason.TIME_LIMIT)
"""The infrastructure reasons retried by default: a crashed or killed worker, a run stopped by
its time limit on a loaded host. Numerical failures fail again the same way."""


class NotRetryable(Exception):
    """The campaign's runs may not be retried (it was cancelled); the message says why."""


def retry_failed(
    *,
    session: Session,
    campaign_id: int,
    reasons: Collection[FailureReason],
    now: datetime,
) -> list[int] | None:
    """Put the campaign's failed runs of ``reasons`` back in the queue (see the module); returns
    their ids (empty when none matched), or None when there is no such campaign. Raises
    ``NotRetryable`` for a cancelled campaign (nothing changed)."""
    status = session.execute(  # the campaign row, locked before any run or totals row
        update(Campaign)
        .where(Campaign.id == campaign_id)
        .values(stats_version=Campaign.stats_version + 1)
        .returning(Campaign.status)
        .execution_options(**_NO_SYNC)
    ).scalar_one_or_none()
    if status is None:
        return None
    if status == CampaignStatus.CANCELLED.value:
        raise NotRetryable(
            f"campaign {campaign_id} was cancelled: its runs are not retried (submit it again)"
        )
    run_ids = list(
        session.scalars(
            select(Run.id)
            .where(
                Run.campaign_id == campaign_id,
                Run.status == RunStatus.FAILED.value,
                Run.reason.in_([FailureReason(r).value for r in reasons]),
                Run.search_id.is_(None),
            )
            .order_by(Run.id)
            .with_for_update(key_share=True)
        )
    )
    if not run_ids:
        return []
    session.execute(
        delete(RunMetrics).where(RunMetrics.run_id.in_(run_ids)).execution_options(**_NO_SYNC)
    )
    session.execute(
        update(Run)
        .where(Run.id.in_(run_ids), Run.status == RunStatus.FAILED.value)
        .values(
            status=RunStatus.QUEUED.value,
            attempts=0,
            reason=None,
            message="",
            traceback=None,
            worker=None,
            lease_until=None,
            sim_time=None,
            zarr_group=None,
            started_at=None,
            finished_at=None,
            metric_solve_seconds=None,
            enqueued_at=now,
        )
        .execution_options(**_NO_SYNC)
    )
    session.execute(
        update(Campaign)
        .where(Campaign.id == campaign_id)
        .values(
            n_failed=Campaign.n_failed - len(run_ids),
            status=CampaignStatus.RUNNING.value,
            finished_at=None,
        )
        .execution_options(**_NO_SYNC)
    )
    totals.rebuild(session=session, campaign_id=campaign_id)
    return run_ids
