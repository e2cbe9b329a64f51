"""Error responses: 422 bodies shaped like FastAPI's own (``detail`` = list of ``loc``/``msg``/
``type``), 404s that name the missing id, and 503 while the database is unreachable (a client
may retry; nothing was half written: every write is one transaction)."""

from __future__ import annotations

import logging

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DisconnectionError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from raptorgrid.spec import SpecError

log = logging.getLogger(__name__)

DATABASE_DOWN = (OperationalError, InterfaceError, DisconnectionError, PoolTimeoutError)
"""Errors meaning the database cannot be reached (answered 503), not a bug (500)."""

RETRY_AFTER_SECONDS = 5


def not_found(kind: str, ident: int) -> HTTPException:
    return HTTPException(status_code=404, detail=f"{kind} {ident} not found")


def spec_error_body(exc: SpecError) -> dict:
    return {
        "detail": [
            {"loc": ["body", *loc], "msg": msg, "type": "value_error"} for loc, msg in exc.errors
        ]
    }


def install(app: FastAPI) -> None:
    @app.exception_handler(SpecError)
    async def _spec_error(_: Request, exc: SpecError) -> JSONResponse:
        return JSONResponse(status_code=422, content=spec_error_body(exc))

    async def _database_down(request: Request, exc: Exception) -> JSONResponse:
        log.error("%s %s: database unreachable: %s", request.method, request.url.path, exc)
        return JSONResponse(
            status_code=503,
            content={
                "detail": "the database is unreachable; nothing was changed by this request. "
                f"Retry in a few seconds ({type(exc).__name__})"
            },
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        )

    for error in DATABASE_DOWN:
        app.add_exception_handler(error, _database_down)
