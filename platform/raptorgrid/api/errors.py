"""Error responses: 422 bodies shaped like FastAPI's own (``detail`` = list of ``loc``/``msg``/
``type``), 404s that name the missing id, and 503 while the database is unreachable (a client
may retry; nothing was half written: every write is one transaction).

A validation error echoes the refused input when it is a single value, cut to ``ECHO_CHARS``
characters, with escapes for bytes that are not UTF-8 and for lone surrogates (FastAPI's own
handler failed to encode them: a 500); a refused list or object is not echoed (encoding a
megabyte of it back took the event loop a tenth of a second per request)."""

from __future__ import annotations

import logging

from fastapi import FastAPI, HTTPException, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DisconnectionError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from raptorgrid.spec import SpecError
from raptorgrid.store_space import StoreFull

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


ECHO_CHARS = 200
"""Longest echo of a refused string in a 422."""


def _echo(value: object) -> object:
    """The refused input as a 422 echoes it (see the module docstring), or None for none."""
    if isinstance(value, bytes):
        value = value[: 4 * ECHO_CHARS].decode("utf-8", "backslashreplace")
    if isinstance(value, str):
        return value[:ECHO_CHARS].encode("utf-8", "backslashreplace").decode("utf-8")
    if value is None or isinstance(value, bool | int | float):
        return value
    return None


def validation_errors(exc: RequestValidationError) -> list[dict]:
    """FastAPI's error list with each ``input`` echoed by ``_echo`` (left out when None)."""
    errors = []
    for error in exc.errors():
        echo = _echo(error.get("input"))
        errors.append({k: v for k, v in error.items() if k != "input"})
        if echo is not None:
            errors[-1]["input"] = echo
    return jsonable_encoder(errors)


def install(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": validation_errors(exc)})

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

    @app.exception_handler(StoreFull)
    async def _store_full(request: Request, exc: StoreFull) -> JSONResponse:
        log.error("%s %s: results store full: %s", request.method, request.url.path, exc)
        return JSONResponse(
            status_code=507,
            content={
                "detail": "the results store is full; nothing was changed by this request. "
                "Free space (GET /health reports it), then retry"
            },
        )
