"""Campaign results: the campaign list with progress, per-configuration statistics, Table I,
the Pareto front, the contingency ranking and failures; all from SQL aggregates
(``raptorgrid.repository.stats``), filterable and paginated. The per-configuration statistics
behind ``/stats``, ``/stats/table1`` and ``/stats/pareto`` come through the app's
``StatsCache``, exact because keyed by the campaign's ``stats_version``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from raptorgrid import repository as repo
from raptorgrid.api.deps import ReadAccess, SessionDep, StatsCacheDep
from raptorgrid.api.errors import not_found
from raptorgrid.repository import stats
from raptorgrid.repository.stats_cache import StatsCache
from raptorgrid.spec import Thresholds
from raptorgrid.tables import Campaign, Run
from solvers.status import RunStatus

router = APIRouter(tags=["results"], dependencies=[ReadAccess])

Limit = Annotated[int, Query(ge=1, le=1000)]
Offset = Annotated[int, Query(ge=0, le=2**31 - 1)]  # SQLite and PostgreSQL take 32-bit offsets
Kind = Annotated[str | None, Query(description="disturbance kind, e.g. bus_fault")]


def _campaign(session: Session, campaign_id: int) -> Campaign:
    campaign = repo.get_campaign(session=session, campaign_id=campaign_id)
    if campaign is None:
        raise not_found("campaign", campaign_id)
    return campaign


@router.get("/campaigns")
def list_campaigns(session: SessionDep, limit: Limit = 50, offset: Offset = 0) -> dict[str, Any]:
    """Campaigns, newest first, with their progress (done / runs) and outcome counts."""
    total = session.execute(select(func.count(Campaign.id))).scalar_one()
    rows = list(
        session.scalars(select(Campaign).order_by(Campaign.id.desc()).limit(limit).offset(offset))
    )
    running = _running_counts(session, [c.id for c in rows])
    data = []
    for c in rows:
        done = c.n_succeeded + c.n_failed + c.n_cancelled
        data.append(
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
                "created_at": c.created_at,
                "finished_at": c.finished_at,
            }
        )
    return {"data": data, "count": total, "limit": limit, "offset": offset}


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


@router.get("/campaigns/{campaign_id}/stats")
def read_stats(
    campaign_id: int,
    session: SessionDep,
    cache: StatsCacheDep,
    kind: Kind = None,
    method: str | None = None,
    status: RunStatus | None = None,
    include_reference: bool = False,
    limit: Limit = 100,
    offset: Offset = 0,
) -> dict[str, Any]:
    """Per method configuration: runs, success rate, median/p95 runtime, accepted advances
    (mean/min/max), rejections, Newton iterations and errors against the reference."""
    campaign = _campaign(session, campaign_id)
    filters = stats.Filters(kind, method, status.value if status else None, include_reference)
    rows = cache.config_stats(session=session, campaign=campaign, filters=filters)
    return {
        "campaign_id": campaign_id,
        "thresholds": Thresholds.model_validate(campaign.spec.get("thresholds") or {}),
        "methods": [r.as_dict() for r in rows[offset : offset + limit]],
        "count": len(rows),
        "limit": limit,
        "offset": offset,
    }


def _all_configs(
    session: Session, cache: StatsCache, campaign_id: int, kind: str | None
) -> list[stats.ConfigStats]:
    campaign = _campaign(session, campaign_id)
    return cache.config_stats(session=session, campaign=campaign, filters=stats.Filters(kind=kind))


@router.get("/campaigns/{campaign_id}/stats/table1")
def read_table_one(
    campaign_id: int, session: SessionDep, cache: StatsCacheDep, kind: Kind = None
) -> dict[str, Any]:
    """The paper's Table I: per baseline its fastest accuracy-qualified configuration and
    RAPTOR's speedup over it."""
    configs = _all_configs(session, cache, campaign_id, kind)
    return {"campaign_id": campaign_id, **stats.table_one(configs)}


@router.get("/campaigns/{campaign_id}/stats/pareto")
def read_pareto(
    campaign_id: int, session: SessionDep, cache: StatsCacheDep, kind: Kind = None
) -> dict[str, Any]:
    """Accuracy-runtime points of every scored configuration and which are on the front."""
    points = stats.pareto_front(_all_configs(session, cache, campaign_id, kind))
    return {"campaign_id": campaign_id, "basis": stats.RUNTIME_BASIS, "points": points}


@router.get("/campaigns/{campaign_id}/stats/ranking")
def read_ranking(
    campaign_id: int,
    session: SessionDep,
    kind: Kind = None,
    limit: Limit = 100,
    offset: Offset = 0,
) -> dict[str, Any]:
    """Scenarios ranked by severity (worst first) with their stability indicators."""
    _campaign(session, campaign_id)
    data, total = stats.contingency_ranking(
        session=session, campaign_id=campaign_id, kind=kind, limit=limit, offset=offset
    )
    return {
        "campaign_id": campaign_id,
        "data": data,
        "count": total,
        "limit": limit,
        "offset": offset,
    }


@router.get("/campaigns/{campaign_id}/stats/failures")
def read_failures(
    campaign_id: int, session: SessionDep, limit: Limit = 100, offset: Offset = 0
) -> dict[str, Any]:
    """Failed runs with their reason and message."""
    _campaign(session, campaign_id)
    data, total = stats.failures(
        session=session, campaign_id=campaign_id, limit=limit, offset=offset
    )
    return {
        "campaign_id": campaign_id,
        "data": data,
        "count": total,
        "limit": limit,
        "offset": offset,
    }
