"""/cases: upload a case file (MATPOWER ``.m`` or pandapower JSON) as the raw request body,
validated as data (``raptorgrid.cases``) and stored with its summary for later campaigns."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from pydantic import BaseModel, ConfigDict

from raptorgrid.api.deps import DatabaseDep, PrincipalDep, ReadAccess, SessionDep, SettingsDep
from raptorgrid.api.errors import not_found
from raptorgrid.cases import CaseError, CaseFormat, parse_case
from raptorgrid.tables import CaseFile, utcnow

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
    created_at: datetime


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
    },
)
async def upload_case(
    request: Request,
    db: DatabaseDep,
    settings: SettingsDep,
    principal: PrincipalDep,
    name: Annotated[str, Query(pattern=NAME_PATTERN, description="a file-like name")],
    format: Annotated[CaseFormat, Query(description="matpower (.m text) or pandapower (JSON)")],
) -> CasePublic:
    """Store a case file after validating it; nothing in it is executed."""
    data = await _read_limited(request, settings.max_case_bytes)
    try:
        summary = parse_case(data, format)
    except CaseError as exc:
        raise _refused(list(exc.loc), exc.message) from None
    with db.write() as session:
        row = CaseFile(
            name=name,
            format=format.value,
            sha256=hashlib.sha256(data).hexdigest(),
            size_bytes=len(data),
            content=data.decode("utf-8"),
            summary=summary,
            owner=principal.owner,
            created_at=utcnow(),
        )
        session.add(row)
        session.flush()
        return CasePublic.model_validate(row)


@router.get("/{case_id}", response_model=CasePublic)
def read_case(case_id: int, session: SessionDep) -> CasePublic:
    row = session.get(CaseFile, case_id)
    if row is None:
        raise not_found("case", case_id)
    return CasePublic.model_validate(row)
