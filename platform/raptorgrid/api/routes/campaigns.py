"""/campaigns: submit, read with progress counts, list runs, cancel, retry failed runs, delete
(per-method statistics: ``routes/stats.py``).

Submitting, cancelling, retrying and deleting need an API token; a campaign belongs to its
submitter and only its owner (or an admin) may cancel, retry or delete it; it runs on a library
network or on an uploaded case of its owner's or a shared one. Reads follow
``read_requires_token`` and are limited to the owner when it is set (``api.access``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, HTTPException, Query, Response
from fastapi.exceptions import RequestValidationError
from pydantic import SkipValidation, ValidationError

from raptorgrid import repository as repo
from raptorgrid.api.access import check_case_use, visible_campaign
from raptorgrid.api.deps import (
    CeleryDep,
    DatabaseDep,
    PrincipalDep,
    ReadAccess,
    ReaderDep,
    SessionDep,
    SettingsDep,
    require_owner,
)
from raptorgrid.api.errors import not_found
from raptorgrid.api.routes.runs import run_public
from raptorgrid.api.schemas import (
    CampaignCreate,
    CampaignCreated,
    CampaignPublic,
    RetryPublic,
    RetryRequest,
    RunsPublic,
)
from raptorgrid.retry import NotRetryable, retry_campaign
from raptorgrid.submission import IdempotencyConflict, submit_campaign
from raptorgrid.tables import CampaignStatus, utcnow
from raptorgrid.zarr_store import delete_campaign_store
from solvers.status import RunStatus

router = APIRouter(prefix="/campaigns", tags=["campaigns"], dependencies=[ReadAccess])

AUTH_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"description": "missing, invalid or revoked API token"},
    403: {"description": "the campaign belongs to another user"},
}
IDEMPOTENCY_KEY = Header(
    alias="Idempotency-Key",
    min_length=1,
    max_length=200,
    pattern=r"^[\x21-\x7e]+$",
    description="a client-chosen key (printable ASCII): a retried POST with the same key and "
    "body returns the first campaign (200) instead of creating another",
)


def _owned_campaign(session: Any, campaign_id: int, principal: Any, verb: str) -> Any:
    campaign = repo.get_campaign(session=session, campaign_id=campaign_id)
    if campaign is None:
        raise not_found("campaign", campaign_id)
    require_owner(principal, campaign.owner, f"campaign {campaign_id}")
    return campaign


def validated_spec(body: Any) -> CampaignCreate:
    """``body`` (the parsed JSON, or the bytes of another media type) as a ``CampaignCreate``;
    a ``RequestValidationError`` located in the body otherwise."""
    try:
        return CampaignCreate.model_validate(body)
    except ValidationError as exc:
        errors = [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
        raise RequestValidationError(errors, body=body) from None


@router.post(
    "",
    status_code=201,
    response_model=CampaignCreated,
    responses={
        200: {"model": CampaignCreated, "description": "replay of an earlier Idempotency-Key"},
        409: {"description": "the Idempotency-Key was used with a different body"},
        **AUTH_ERRORS,
    },
)
def create_campaign(
    body: Annotated[CampaignCreate, SkipValidation, Body()],
    db: DatabaseDep,
    celery: CeleryDep,
    settings: SettingsDep,
    principal: PrincipalDep,
    response: Response,
    idempotency_key: Annotated[str | None, IDEMPOTENCY_KEY] = None,
) -> CampaignCreated:
    """Validate and expand the spec, store it, then enqueue one message per run. 201 when
    created; 200 with the first campaign when the ``Idempotency-Key`` was seen before.

    The body's schema is ``CampaignCreate``'s, but FastAPI does not validate it on the event
    loop (``SkipValidation``): this sync route validates it in its worker thread, where the
    methods and configurations are counted before any is checked (``spec.MAX_METHODS``)."""
    spec = validated_spec(body)
    with db.read() as session:
        check_case_use(session=session, principal=principal, network=spec.network)
    raw: dict[str, Any] = spec.model_dump(mode="json", exclude_unset=True)
    try:
        submitted = submit_campaign(
            db=db,
            celery=celery,
            settings=settings,
            spec=spec,
            raw_spec=raw,
            owner=principal.owner,
            idempotency_key=idempotency_key,
        )
    except IdempotencyConflict as exc:
        raise HTTPException(status_code=409, detail=str(exc)) from None
    if submitted.replayed:
        response.status_code = 200
    return CampaignCreated(
        id=submitted.campaign_id, n_scenarios=submitted.n_scenarios, n_runs=submitted.n_runs
    )


@router.get("/{campaign_id}", response_model=CampaignPublic)
def read_campaign(campaign_id: int, session: SessionDep, reader: ReaderDep) -> CampaignPublic:
    """The campaign with its progress; its owner and spec only for the owner and admins."""
    campaign = visible_campaign(session=session, reader=reader, campaign_id=campaign_id)
    return CampaignPublic.from_row(
        campaign,
        repo.run_counts(session=session, campaign_id=campaign_id),
        private=reader.owns(campaign.owner),
        waiting=repo.store_waiting(session=session, campaign_id=campaign_id),
    )


@router.get("/{campaign_id}/runs", response_model=RunsPublic)
def read_campaign_runs(
    campaign_id: int,
    session: SessionDep,
    reader: ReaderDep,
    status: RunStatus | None = None,
    method: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
) -> RunsPublic:
    visible_campaign(session=session, reader=reader, campaign_id=campaign_id)
    rows, total = repo.list_runs(
        session=session,
        campaign_id=campaign_id,
        status=status.value if status is not None else None,
        method=method,
        limit=limit,
        offset=offset,
    )
    data = [run_public(run, metrics, reader=reader) for run, metrics in rows]
    return RunsPublic(data=data, count=total, limit=limit, offset=offset)


@router.post("/{campaign_id}/cancel", response_model=CampaignPublic, responses=AUTH_ERRORS)
def cancel_campaign(campaign_id: int, db: DatabaseDep, principal: PrincipalDep) -> CampaignPublic:
    """Cancel queued runs now; running ones stop at their next heartbeat."""
    with db.write() as session:
        _owned_campaign(session, campaign_id, principal, "cancel")
        repo.cancel_campaign(session=session, campaign_id=campaign_id, now=utcnow())
    with db.read() as session:
        campaign = repo.get_campaign(session=session, campaign_id=campaign_id)
        return CampaignPublic.from_row(
            campaign, repo.run_counts(session=session, campaign_id=campaign_id)
        )


@router.post(
    "/{campaign_id}/retry",
    response_model=RetryPublic,
    responses={409: {"description": "the campaign was cancelled"}, **AUTH_ERRORS},
)
def retry_failed_runs(
    campaign_id: int,
    db: DatabaseDep,
    celery: CeleryDep,
    settings: SettingsDep,
    principal: PrincipalDep,
    body: Annotated[RetryRequest | None, Body()] = None,
) -> RetryPublic:
    """Run again the campaign's failed runs of the given reasons (default: the infrastructure
    ones): queued with their attempts reset, the campaign running again, then sent in batches.
    Runs not failed, or failed for another reason, are untouched."""
    request = body if body is not None else RetryRequest()
    with db.read() as session:
        _owned_campaign(session, campaign_id, principal, "retry")
    try:
        retried = retry_campaign(
            db=db, celery=celery, settings=settings, campaign_id=campaign_id,
            reasons=request.reasons,
        )  # fmt: skip
    except NotRetryable as exc:
        raise HTTPException(status_code=409, detail=str(exc)) from None
    if retried is None:  # deleted meanwhile
        raise not_found("campaign", campaign_id)
    with db.read() as session:
        campaign = repo.get_campaign(session=session, campaign_id=campaign_id)
        status = campaign.status if campaign is not None else CampaignStatus.RUNNING.value
    return RetryPublic(
        campaign_id=campaign_id,
        reasons=request.reasons,
        requeued=len(retried.run_ids),
        messages=retried.messages,
        sent=retried.sent,
        status=status,
    )


@router.delete(
    "/{campaign_id}",
    status_code=204,
    responses={409: {"description": "the campaign is still running"}, **AUTH_ERRORS},
)
def delete_campaign(
    campaign_id: int, db: DatabaseDep, settings: SettingsDep, principal: PrincipalDep
) -> Response:
    """Delete a finished or cancelled campaign: its rows, then its Zarr store."""
    with db.write() as session:
        campaign = _owned_campaign(session, campaign_id, principal, "delete")
        if campaign.status == CampaignStatus.RUNNING.value:
            raise HTTPException(
                status_code=409,
                detail=f"campaign {campaign_id} is running: cancel it first "
                f"(POST /campaigns/{campaign_id}/cancel)",
            )
        repo.delete_campaign(session=session, campaign_id=campaign_id)
    delete_campaign_store(settings.zarr_root, campaign_id)
    return Response(status_code=204)
