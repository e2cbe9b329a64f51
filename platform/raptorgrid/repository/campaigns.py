"""Campaign rows: creation from an expanded spec, reads, counts, cancellation and completion.

Completion is tracked in SQL: every run that reaches a final status adds itself to the
campaign's totals in the same transaction, and the one that makes the remaining count zero flips
the campaign to finished, once (the UPDATE serialises concurrent finishers on the campaign row).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.orm import Session

from raptorgrid.repository import totals
from raptorgrid.spec import CampaignCreate, Expansion
from raptorgrid.tables import (
    Campaign,
    CampaignStatus,
    ConfigTotals,
    Run,
    RunMetrics,
    ScenarioRow,
)
from solvers.status import FailureReason, RunStatus

_NO_SYNC = {"synchronize_session": False}


def create_campaign(
    *,
    session: Session,
    spec: CampaignCreate,
    expansion: Expansion,
    now: datetime,
    raw_spec: dict[str, Any] | None = None,
    owner: str | None = None,
    idempotency_key: str | None = None,
    request_hash: str | None = None,
) -> tuple[Campaign, list[int]]:
    """Insert the campaign, its scenarios and its queued runs; returns the run ids. A reused
    ``(owner, idempotency_key)`` raises ``IntegrityError`` (the unique constraint)."""
    campaign = Campaign(
        name=spec.name,
        network=spec.network,
        spec=raw_spec if raw_spec is not None else spec.model_dump(mode="json"),
        status=CampaignStatus.RUNNING.value,
        t_end=spec.t_end,
        n_eval=spec.n_eval,
        n_scenarios=len(expansion.scenarios),
        n_runs=len(expansion.runs),
        n_succeeded=0,
        n_failed=0,
        n_cancelled=0,
        created_at=now,
        owner=owner,
        idempotency_key=idempotency_key,
        request_hash=request_hash,
    )
    session.add(campaign)
    session.flush()
    session.execute(
        insert(ScenarioRow),
        [
            {
                "campaign_id": campaign.id,
                "index": s.index,
                "disturbance": s.disturbance,
                "ic_seed": s.ic_seed,
                "ic_spread": s.ic_spread,
                "label": s.label,
            }
            for s in expansion.scenarios
        ],
    )
    scenario_ids = dict(
        session.execute(
            select(ScenarioRow.index, ScenarioRow.id).where(ScenarioRow.campaign_id == campaign.id)
        ).all()
    )
    session.execute(
        insert(Run),
        [
            {
                "campaign_id": campaign.id,
                "scenario_id": scenario_ids[r.scenario_index],
                "method": r.method,
                "options": r.options,
                "config_label": r.config_label,
                "is_reference": r.is_reference,
                "status": RunStatus.QUEUED.value,
                "message": "",
                "attempts": 0,
                "created_at": now,
                "enqueued_at": now,
                "clearing_time": r.clearing_time,
            }
            for r in expansion.runs
        ],
    )
    if spec.cct is not None:
        from raptorgrid.repository.cct import create_searches

        create_searches(session=session, campaign_id=campaign.id)
    run_ids = list(
        session.scalars(select(Run.id).where(Run.campaign_id == campaign.id).order_by(Run.id))
    )
    totals.create(session=session, campaign_id=campaign.id)
    return campaign, run_ids


def get_campaign(*, session: Session, campaign_id: int) -> Campaign | None:
    return session.get(Campaign, campaign_id)


def find_by_idempotency_key(*, session: Session, owner: str, key: str) -> Campaign | None:
    return session.scalars(
        select(Campaign).where(Campaign.owner == owner, Campaign.idempotency_key == key)
    ).first()


def delete_campaign(*, session: Session, campaign_id: int) -> bool:
    """Delete a campaign that is not running, with its scenarios, runs, metrics and totals."""
    runs = select(Run.id).where(Run.campaign_id == campaign_id).scalar_subquery()
    session.execute(
        delete(RunMetrics).where(RunMetrics.run_id.in_(runs)).execution_options(**_NO_SYNC)
    )
    for table in (ConfigTotals, Run, ScenarioRow):  # explicit: SQLite may run without FKs
        session.execute(
            delete(table).where(table.campaign_id == campaign_id).execution_options(**_NO_SYNC)
        )
    deleted = session.execute(
        delete(Campaign)
        .where(Campaign.id == campaign_id, Campaign.status != CampaignStatus.RUNNING.value)
        .execution_options(**_NO_SYNC)
    )
    return deleted.rowcount == 1


def run_counts(*, session: Session, campaign_id: int) -> dict[str, int]:
    """Runs of the campaign by status (every ``RunStatus`` value present, zeros included)."""
    counts = {status.value: 0 for status in RunStatus}
    rows = session.execute(
        select(Run.status, func.count()).where(Run.campaign_id == campaign_id).group_by(Run.status)
    ).all()
    counts.update(dict(rows))
    return counts


def record_final(
    *,
    session: Session,
    campaign_id: int,
    now: datetime,
    succeeded: int = 0,
    failed: int = 0,
    cancelled: int = 0,
    run_ids: list[int] | None = None,
) -> bool:
    """Add finished runs to the campaign's totals; True when this call finished the campaign.

    Every run that reaches a final status passes here in its own transaction, so this also
    bumps the campaign's ``stats_version`` (the stats cache's key; ``bump_stats_version``) and,
    with the campaign row locked by that UPDATE, adds ``run_ids`` (the finished runs, their
    status and metrics written) to the per-configuration totals (``totals.add_final``).
    Cancelled runs that never ran (no metrics) add nothing there and may be left out."""
    session.execute(
        update(Campaign)
        .where(Campaign.id == campaign_id)
        .values(
            n_succeeded=Campaign.n_succeeded + succeeded,
            n_failed=Campaign.n_failed + failed,
            n_cancelled=Campaign.n_cancelled + cancelled,
            stats_version=Campaign.stats_version + 1,
        )
        .execution_options(**_NO_SYNC)
    )
    if run_ids:
        totals.add_final(session=session, run_ids=run_ids)
    remaining, status = session.execute(
        select(
            Campaign.n_runs - Campaign.n_succeeded - Campaign.n_failed - Campaign.n_cancelled,
            Campaign.status,
        ).where(Campaign.id == campaign_id)
    ).one()
    if remaining > 0:
        return False
    # The counter UPDATE above holds the campaign row until commit, so exactly one finisher
    # sees remaining == 0 with finished_at still unset.
    final = CampaignStatus.FINISHED.value if status == CampaignStatus.RUNNING.value else status
    flipped = session.execute(
        update(Campaign)
        .where(Campaign.id == campaign_id, Campaign.finished_at.is_(None))
        .values(finished_at=now, status=final)
        .execution_options(**_NO_SYNC)
    )
    return flipped.rowcount == 1


def bump_stats_version(*, session: Session, campaign_id: int) -> None:
    """Invalidate the campaign's cached statistics (``raptorgrid.repository.stats_cache``):
    call in the transaction of any change to a run's final status or metrics that does not
    pass through ``record_final`` (scoring)."""
    session.execute(
        update(Campaign)
        .where(Campaign.id == campaign_id)
        .values(stats_version=Campaign.stats_version + 1)
        .execution_options(**_NO_SYNC)
    )


def cancel_campaign(*, session: Session, campaign_id: int, now: datetime) -> bool:
    """Cancel a running campaign: queued runs are cancelled now, running ones stop at their next
    heartbeat. False when the campaign was not running."""
    changed = session.execute(
        update(Campaign)
        .where(Campaign.id == campaign_id, Campaign.status == CampaignStatus.RUNNING.value)
        .values(status=CampaignStatus.CANCELLED.value)
        .execution_options(**_NO_SYNC)
    )
    if changed.rowcount != 1:
        return False
    cancelled = session.execute(
        update(Run)
        .where(Run.campaign_id == campaign_id, Run.status == RunStatus.QUEUED.value)
        .values(
            status=RunStatus.CANCELLED.value,
            reason=FailureReason.CANCELLED.value,
            message=FailureReason.CANCELLED.advice,
            finished_at=now,
        )
        .execution_options(**_NO_SYNC)
    ).rowcount
    record_final(session=session, campaign_id=campaign_id, now=now, cancelled=cancelled)
    return True


def list_campaigns(
    *, session: Session, limit: int, offset: int, owner: str | None = None
) -> tuple[list[dict[str, Any]], int]:
    """One page of campaigns, newest first, with their progress (done / runs), outcome counts
    and running runs; and the number of campaigns. With ``owner``, that owner's only (filtered
    and counted in SQL)."""
    mine = () if owner is None else (Campaign.owner == owner,)
    total = session.execute(select(func.count(Campaign.id)).where(*mine)).scalar_one()
    rows = list(
        session.scalars(
            select(Campaign).where(*mine).order_by(Campaign.id.desc()).limit(limit).offset(offset)
        )
    )
    running = _running_counts(session, [c.id for c in rows])
    page = []
    for c in rows:
        done = c.n_succeeded + c.n_failed + c.n_cancelled
        page.append(
            {
                "id": c.id,
                "name": c.name,
                "network": c.network,
                "status": c.status,
                "n_runs": c.n_runs,
                "n_scenarios": c.n_scenarios,
                "done": done,
                "succeeded": c.n_succeeded,
                "failed": c.n_failed,
                "cancelled": c.n_cancelled,
                "running": running.get(c.id, 0),
                "progress": done / c.n_runs if c.n_runs else 1.0,
                "cct": bool((c.spec or {}).get("cct")),
                "created_at": c.created_at,
                "finished_at": c.finished_at,
            }
        )
    return page, int(total)


def _running_counts(session: Session, campaign_ids: list[int]) -> dict[int, int]:
    """Running runs per campaign of the page: one query on the (campaign_id, status) index."""
    if not campaign_ids:
        return {}
    rows = session.execute(
        select(Run.campaign_id, func.count())
        .where(Run.campaign_id.in_(campaign_ids), Run.status == RunStatus.RUNNING.value)
        .group_by(Run.campaign_id)
    ).all()
    return {campaign_id: int(n) for campaign_id, n in rows}
