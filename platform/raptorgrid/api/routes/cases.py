"""/cases: upload a case file (MATPOWER ``.m``, pandapower JSON, or a PSS/E ``.raw`` + ``.dyr``
pair as JSON) as the raw request body, validated as data (``raptorgrid.cases``) and stored with
its summary. A stored PSS/E case is a network of campaigns: ``network: case:<id>``
(``raptorgrid.case_store``).

A case belongs to its uploader: it is read by its owner (by anyone when reads are public) and
used by its owner's campaigns, until an admin shares it (``POST /cases/{id}/share``); then every
token may read it and run campaigns on it (``api.access``)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from pydantic import BaseModel, ConfigDict
from starlette.concurrency import run_in_threadpool

from raptorgrid.api.access import visible_case
from raptorgrid.api.deps import (
    DatabaseDep,
    PrincipalDep,
    ReadAccess,
    ReaderDep,
    SessionDep,
    SettingsDep,
)
from raptorgrid.api.errors import not_found
from raptorgrid.bounded import Budget, BudgetExceeded, run_bounded
from raptorgrid.case_store import case_network, store_case
from raptorgrid.cases import CaseError, CaseFormat, parse_case
from raptorgrid.settings import Settings
from raptorgrid.tables import CaseFile

router = APIRouter(prefix="/cases", tags=["cases"], dependencies=[ReadAccess])

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,199}$"


class CasePublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    format: CaseFormat
    sha256: str
    size_bytes: int
    summary: dict[str, Any]
    owner: str | None
    """For the case's owner and admins only (else null)."""
    shared: bool
    """Every token may read it and run campaigns on it (an admin shares a case)."""
    created_at: datetime
    network: str | None = None
    """The campaign network name of a PSS/E case (``case:<id>``); None for other formats."""

    @classmethod
    def of(cls, row: CaseFile, *, private: bool = True) -> CasePublic:
        """The case row; without its owner unless ``private`` (the reader owns it or is an
        admin)."""
        public = cls.model_validate(row)
        if row.format == CaseFormat.PSSE:
            public.network = case_network(row.id)
        if not private:
            public.owner = None
        return public


def _refused(loc: list[str | int], message: str, status: int = 422) -> HTTPException:
    return HTTPException(
        status_code=status, detail=[{"loc": loc, "msg": message, "type": "value_error"}]
    )


async def _read_limited(request: Request, limit: int) -> bytes:
    """The body, refused (413) as soon as it exceeds ``limit`` bytes."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise _refused(["body"], f"the case file is limited to {limit} bytes", 413)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _refused(["body"], f"the case file is limited to {limit} bytes", 413)
        chunks.append(chunk)
    return b"".join(chunks)


WALL_FACTOR = 3.0
"""Wall-clock seconds a check may take per second of its CPU budget (a busy host is slower)."""


def check_case(data: bytes, fmt: CaseFormat, settings: Settings) -> dict[str, Any]:
    """The file's summary (``raptorgrid.cases.parse_case``), computed in a child process within
    the settings' CPU and memory budget (``raptorgrid.bounded``); blocking. Raises ``CaseError``
    for a refused file, also for one past its CPU or memory budget; ``BudgetExceeded`` when the
    wall-clock time ran out (a busy host, not the file's fault)."""
    budget = Budget(
        cpu_seconds=settings.case_check_cpu_seconds,
        memory_mb=settings.case_check_memory_mb,
        wall_seconds=WALL_FACTOR * settings.case_check_cpu_seconds,
    )
    try:
        return run_bounded(parse_case, data, fmt, budget=budget)
    except BudgetExceeded as exc:
        if exc.resource == "time":
            raise
        raise CaseError(("body",), f"the file is too costly to check: it {exc}") from None


@router.post(
    "",
    status_code=201,
    response_model=CasePublic,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "text/plain": {"schema": {"type": "string"}},
                "application/json": {"schema": {"type": "object"}},
            },
        }
    },
    responses={
        401: {"description": "missing or invalid API token"},
        413: {"description": "the file is larger than max_case_bytes"},
        503: {"description": "the host was too busy to check the file in time"},
    },
)
async def upload_case(
    request: Request,
    db: DatabaseDep,
    settings: SettingsDep,
    principal: PrincipalDep,
    name: Annotated[str, Query(pattern=NAME_PATTERN, description="a file-like name")],
    format: Annotated[
        CaseFormat,
        Query(description="matpower (.m text), pandapower (JSON) or psse (JSON raw/dyr pair)"),
    ],
) -> CasePublic:
    """Store a case file after validating it in a bounded child process (``check_case``);
    nothing in it is executed and nothing of it runs on the event loop."""
    data = await _read_limited(request, settings.max_case_bytes)
    try:
        summary = await run_in_threadpool(check_case, data, format, settings)
    except CaseError as exc:
        raise _refused(list(exc.loc), exc.message) from None
    except BudgetExceeded as exc:
        raise HTTPException(
            status_code=503,
            detail=f"checking the file {exc}; nothing was stored. Retry in a few seconds",
            headers={"Retry-After": "5"},
        ) from None
    row = await run_in_threadpool(
        store_case, db, name=name, fmt=format, data=data, owner=principal.owner, summary=summary
    )
    return CasePublic.of(row)


@router.get("/{case_id}", response_model=CasePublic)
def read_case(case_id: int, session: SessionDep, reader: ReaderDep) -> CasePublic:
    row = visible_case(session=session, reader=reader, case_id=case_id)
    return CasePublic.of(row, private=reader.owns(row.owner))


@router.post(
    "/{case_id}/share",
    response_model=CasePublic,
    responses={
        401: {"description": "missing or invalid API token"},
        403: {"description": "only an admin shares or unshares a case"},
    },
)
def share_case(
    case_id: int,
    db: DatabaseDep,
    principal: PrincipalDep,
    shared: Annotated[bool, Query(description="false makes the case its owner's again")] = True,
) -> CasePublic:
    """Share an uploaded case with every token (admins only), or unshare it. Campaigns already
    submitted on it are not affected."""
    if not principal.is_admin:
        raise HTTPException(
            status_code=403, detail=f"case {case_id}: only an admin shares or unshares a case"
        )
    with db.write() as session:
        row = session.get(CaseFile, case_id)
        if row is None:
            raise not_found("case", case_id)
        row.shared = shared
        session.flush()
        return CasePublic.of(row)
