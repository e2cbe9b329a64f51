"""Campaign results: the campaign list with progress, per-configuration statistics, Table I,
the Pareto front, the contingency ranking and failures; all from SQL aggregates in the
repository (``raptorgrid.repository.stats``), filterable and paginated, with typed responses
(``api.schemas``). The per-configuration statistics behind ``/stats``, ``/stats/table1`` and
``/stats/pareto`` come through the app's ``StatsCache``, exact because keyed by the campaign's
``stats_version``. Runtime is solve time everywhere (docs/results.md). Which campaigns a reader
sees, and the server paths of failure messages, follow ``api.access``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query
from sqlalchemy.orm import Session

from raptorgrid import repository as repo
from raptorgrid.api.access import Reader, visible_campaign
from raptorgrid.api.deps import ReadAccess, ReaderDep, SessionDep, StatsCacheDep
from raptorgrid.api.schemas import (
    CampaignList,
    CampaignStats,
    CctTable,
    Failures,
    Pareto,
    Ranking,
    TableOne,
)
from raptorgrid.repository import stats
from raptorgrid.repository.cct import cct_table
from raptorgrid.repository.stats_cache import StatsCache
from raptorgrid.scoring.indicators import STABILITY_CRITERION
from raptorgrid.spec import CctSearch, Thresholds
from raptorgrid.tables import Campaign
from solvers.status import RunStatus

router = APIRouter(tags=["results"], dependencies=[ReadAccess])

Limit = Annotated[int, Query(ge=1, le=1000)]
Offset = Annotated[int, Query(ge=0, le=2**31 - 1)]  # SQLite and PostgreSQL take 32-bit offsets
Kind = Annotated[str | None, Query(description="disturbance kind, e.g. bus_fault")]
Subject = Annotated[
    str | None,
    Query(
        max_length=64,
        description="the method whose speedup over each other method is shown "
        f"(default {stats.SUBJECT})",
    ),
]


def _campaign(session: Session, reader: Reader, campaign_id: int) -> Campaign:
    return visible_campaign(session=session, reader=reader, campaign_id=campaign_id)


@router.get("/campaigns", response_model=CampaignList)
def list_campaigns(
    session: SessionDep, reader: ReaderDep, limit: Limit = 50, offset: Offset = 0
) -> CampaignList:
    """Campaigns, newest first, with their progress (done / runs) and outcome counts: the
    reader's own when reads are isolated (``read_requires_token``; an admin's: all)."""
    data, total = repo.list_campaigns(
        session=session, limit=limit, offset=offset, owner=reader.scope
    )
    return CampaignList(data=data, count=total, limit=limit, offset=offset)


@router.get("/campaigns/{campaign_id}/stats", response_model=CampaignStats)
def read_stats(
    campaign_id: int,
    session: SessionDep,
    reader: ReaderDep,
    cache: StatsCacheDep,
    kind: Kind = None,
    method: str | None = None,
    status: RunStatus | None = None,
    include_reference: bool = False,
    limit: Limit = 100,
    offset: Offset = 0,
) -> CampaignStats:
    """Per method configuration: runs, success rate, median/p95 runtime (solve time), mean
    compile and overhead seconds, accepted advances (mean/min/max), rejections, Newton
    iterations and errors against the reference."""
    campaign = _campaign(session, reader, campaign_id)
    filters = stats.Filters(kind, method, status.value if status else None, include_reference)
    rows = cache.config_stats(session=session, campaign=campaign, filters=filters)
    return CampaignStats(
        campaign_id=campaign_id,
        thresholds=Thresholds.model_validate(campaign.spec.get("thresholds") or {}),
        methods=[r.as_dict() for r in rows[offset : offset + limit]],
        count=len(rows),
        limit=limit,
        offset=offset,
    )


def _all_configs(
    session: Session, reader: Reader, cache: StatsCache, campaign_id: int, kind: str | None
) -> list[stats.ConfigStats]:
    campaign = _campaign(session, reader, campaign_id)
    return cache.config_stats(session=session, campaign=campaign, filters=stats.Filters(kind=kind))


@router.get("/campaigns/{campaign_id}/stats/table1", response_model=TableOne)
def read_table_one(
    campaign_id: int,
    session: SessionDep,
    reader: ReaderDep,
    cache: StatsCacheDep,
    kind: Kind = None,
    subject: Subject = None,
) -> TableOne:
    """The paper's Table I: per other method its fastest accuracy-qualified configuration and
    the subject's (default RAPTOR's) speedup over it."""
    configs = _all_configs(session, reader, cache, campaign_id, kind)
    methods = sorted({c.method for c in configs if not c.is_reference})
    if subject is not None and subject not in methods:
        raise HTTPException(
            status_code=422,
            detail=[
                {
                    "loc": ["query", "subject"],
                    "msg": f"{subject!r} is not a method of campaign {campaign_id} "
                    f"(its methods: {', '.join(methods)})",
                    "type": "value_error",
                }
            ],
        )
    return TableOne(campaign_id=campaign_id, **stats.table_one(configs, subject or stats.SUBJECT))


@router.get("/campaigns/{campaign_id}/stats/pareto", response_model=Pareto)
def read_pareto(
    campaign_id: int,
    session: SessionDep,
    reader: ReaderDep,
    cache: StatsCacheDep,
    kind: Kind = None,
) -> Pareto:
    """Accuracy-runtime points of every scored configuration and which are on the front."""
    points = stats.pareto_front(_all_configs(session, reader, cache, campaign_id, kind))
    return Pareto(campaign_id=campaign_id, basis=stats.RUNTIME_BASIS, points=points)


@router.get("/campaigns/{campaign_id}/stats/ranking", response_model=Ranking)
def read_ranking(
    campaign_id: int,
    session: SessionDep,
    reader: ReaderDep,
    kind: Kind = None,
    limit: Limit = 100,
    offset: Offset = 0,
) -> Ranking:
    """Scenarios ranked by severity (worst first) with their stability indicators."""
    _campaign(session, reader, campaign_id)
    data, total = stats.contingency_ranking(
        session=session, campaign_id=campaign_id, kind=kind, limit=limit, offset=offset
    )
    return Ranking(campaign_id=campaign_id, data=data, count=total, limit=limit, offset=offset)


@router.get("/campaigns/{campaign_id}/stats/failures", response_model=Failures)
def read_failures(
    campaign_id: int, session: SessionDep, reader: ReaderDep, limit: Limit = 100, offset: Offset = 0
) -> Failures:
    """Failed runs with their reason and message (server paths for admins only)."""
    _campaign(session, reader, campaign_id)
    data, total = stats.failures(
        session=session, campaign_id=campaign_id, limit=limit, offset=offset
    )
    data = [{**row, "message": reader.message(row["message"])} for row in data]
    return Failures(campaign_id=campaign_id, data=data, count=total, limit=limit, offset=offset)


@router.get("/campaigns/{campaign_id}/cct", response_model=CctTable)
def read_cct(campaign_id: int, session: SessionDep, reader: ReaderDep) -> CctTable:
    """A CCT campaign's searches, shortest critical clearing time first, with the probes'
    cost; 422 for a campaign that is not one."""
    campaign = _campaign(session, reader, campaign_id)
    if not (campaign.spec or {}).get("cct"):
        raise HTTPException(
            status_code=422,
            detail=[
                {
                    "loc": ["path", "campaign_id"],
                    "msg": f"campaign {campaign_id} is not a CCT campaign (its spec has no cct)",
                    "type": "value_error",
                }
            ],
        )
    search = CctSearch.model_validate(campaign.spec["cct"])
    return CctTable(
        campaign_id=campaign_id,
        resolution_s=search.resolution,
        max_clearing_s=search.max_clearing,
        criterion=STABILITY_CRITERION,
        data=[
            {**row, "message": reader.message(row["message"])}
            for row in cct_table(session=session, campaign_id=campaign_id)
        ],
    )
