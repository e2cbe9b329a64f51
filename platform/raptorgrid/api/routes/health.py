"""/health: the database is reachable, and the service version."""

from __future__ import annotations

import logging

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from sqlalchemy.exc import SQLAlchemyError

from raptorgrid import __version__
from raptorgrid.api.deps import DatabaseDep
from raptorgrid.api.schemas import Health

router = APIRouter(tags=["health"])
log = logging.getLogger(__name__)


@router.get("/health", response_model=Health, responses={503: {"model": Health}})
def health(db: DatabaseDep) -> Health | JSONResponse:
    try:
        db.ping()
    except SQLAlchemyError as exc:
        log.error("health: database unreachable: %s", exc)
        body = Health(status="unavailable", database=f"unreachable: {exc}", version=__version__)
        return JSONResponse(status_code=503, content=body.model_dump())
    return Health(status="ok", database="ok", version=__version__)
