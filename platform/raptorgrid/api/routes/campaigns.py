"""/campaigns: submit, read with progress counts, list runs, per-method stats, cancel."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query

from raptorgrid import repository as repo
from raptorgrid.api.deps import CeleryDep, DatabaseDep, SessionDep, SettingsDep
from raptorgrid.api.errors import not_found
from raptorgrid.api.routes.runs import run_public
from raptorgrid.api.schemas import (
    CampaignCreate,
    CampaignCreated,
    CampaignPublic,
    CampaignStats,
    MethodStatsPublic,
    RunsPublic,
)
from raptorgrid.submission import submit_campaign
from raptorgrid.tables import utcnow
from solvers.status import RunStatus

router = APIRouter(prefix="/campaigns", tags=["campaigns"])


@router.post("", status_code=201, response_model=CampaignCreated)
def create_campaign(
    spec: Annotated[CampaignCreate, Body()],
    db: DatabaseDep,
    celery: CeleryDep,
    settings: SettingsDep,
) -> CampaignCreated:
    """Validate and expand the spec, store it, then enqueue one message per run."""
    raw: dict[str, Any] = spec.model_dump(mode="json", exclude_unset=True)
    submitted = submit_campaign(db=db, celery=celery, settings=settings, spec=spec, raw_spec=raw)
    return CampaignCreated(
        id=submitted.campaign_id, n_scenarios=submitted.n_scenarios, n_runs=submitted.n_runs
    )


@router.get("/{campaign_id}", response_model=CampaignPublic)
def read_campaign(campaign_id: int, session: SessionDep) -> CampaignPublic:
    campaign = repo.get_campaign(session=session, campaign_id=campaign_id)
    if campaign is None:
        raise not_found("campaign", campaign_id)
    return CampaignPublic.from_row(
        campaign, repo.run_counts(session=session, campaign_id=campaign_id)
    )


@router.get("/{campaign_id}/runs", response_model=RunsPublic)
def read_campaign_runs(
    campaign_id: int,
    session: SessionDep,
    status: RunStatus | None = None,
    method: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> RunsPublic:
    if repo.get_campaign(session=session, campaign_id=campaign_id) is None:
        raise not_found("campaign", campaign_id)
    rows, total = repo.list_runs(
        session=session,
        campaign_id=campaign_id,
        status=status.value if status is not None else None,
        method=method,
        limit=limit,
        offset=offset,
    )
    data = [run_public(run, metrics) for run, metrics in rows]
    return RunsPublic(data=data, count=total, limit=limit, offset=offset)


@router.get("/{campaign_id}/stats", response_model=CampaignStats)
def read_campaign_stats(campaign_id: int, session: SessionDep) -> CampaignStats:
    """Per method configuration: runs, outcomes, median runtime and mean work counters."""
    if repo.get_campaign(session=session, campaign_id=campaign_id) is None:
        raise not_found("campaign", campaign_id)
    rows = repo.method_summary(session=session, campaign_id=campaign_id)
    return CampaignStats(
        campaign_id=campaign_id, methods=[MethodStatsPublic(**r.as_dict()) for r in rows]
    )


@router.post("/{campaign_id}/cancel", response_model=CampaignPublic)
def cancel_campaign(campaign_id: int, db: DatabaseDep) -> CampaignPublic:
    """Cancel queued runs now; running ones stop at their next heartbeat."""
    with db.write() as session:
        if repo.get_campaign(session=session, campaign_id=campaign_id) is None:
            raise not_found("campaign", campaign_id)
        repo.cancel_campaign(session=session, campaign_id=campaign_id, now=utcnow())
    with db.read() as session:
        campaign = repo.get_campaign(session=session, campaign_id=campaign_id)
        return CampaignPublic.from_row(
            campaign, repo.run_counts(session=session, campaign_id=campaign_id)
        )
