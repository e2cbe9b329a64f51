"""Error responses: 422 bodies shaped like FastAPI's own (``detail`` = list of ``loc``/``msg``/
``type``), and 404s that name the missing id."""

from __future__ import annotations

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse

from raptorgrid.spec import SpecError


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
