"""Typed dependencies: the settings, a read session, the enqueuer, and the caller (API token)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Annotated

from celery import Celery
from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from raptorgrid.auth import Principal, verify_token
from raptorgrid.db import Database
from raptorgrid.repository.stats_cache import StatsCache
from raptorgrid.settings import Settings


def get_settings_dep(request: Request) -> Settings:
    return request.app.state.settings


def get_db(request: Request) -> Database:
    return request.app.state.db


def get_celery(request: Request) -> Celery:
    return request.app.state.celery


def get_stats_cache(request: Request) -> StatsCache:
    return request.app.state.stats_cache


def get_session(db: Annotated[Database, Depends(get_db)]) -> Iterator[Session]:
    with db.read() as session:
        yield session


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
DatabaseDep = Annotated[Database, Depends(get_db)]
CeleryDep = Annotated[Celery, Depends(get_celery)]
SessionDep = Annotated[Session, Depends(get_session)]
StatsCacheDep = Annotated[StatsCache, Depends(get_stats_cache)]


_bearer = HTTPBearer(auto_error=False, description="an API token: `raptorgrid token create`")


def _unauthorized(message: str) -> HTTPException:
    return HTTPException(
        status_code=401, detail=message, headers={"WWW-Authenticate": 'Bearer realm="raptorgrid"'}
    )


def _principal(
    db: Database, settings: Settings, credentials: HTTPAuthorizationCredentials | None
) -> Principal:
    if credentials is None:
        raise _unauthorized("missing API token: send 'Authorization: Bearer <token>'")
    bootstrap = settings.admin_token.get_secret_value() if settings.admin_token else None
    with db.read() as session:
        principal = verify_token(
            session=session, token=credentials.credentials, bootstrap=bootstrap
        )
    if principal is None:
        raise _unauthorized("invalid or revoked API token")
    return principal


def get_principal(
    request: Request,
    db: Annotated[Database, Depends(get_db)],
    settings: Annotated[Settings, Depends(get_settings_dep)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    """The caller of a write endpoint: 401 without a valid token, 429 (``Retry-After``) past
    its owner's write rate (``api.ratelimit``)."""
    principal = _principal(db, settings, credentials)
    wait = request.app.state.write_limiter.take(principal.owner)
    if wait > 0:
        raise HTTPException(
            status_code=429,
            detail=f"too many writes for {principal.owner!r}: at most "
            f"{settings.write_rate_per_minute:g} per minute (bursts of {settings.write_burst})",
            headers={"Retry-After": str(max(1, math.ceil(wait)))},
        )
    return principal


def read_access(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """Reads are open unless ``read_requires_token`` is set; then any valid token may read."""
    settings: Settings = request.app.state.settings
    if settings.read_requires_token:
        _principal(request.app.state.db, settings, credentials)


def require_owner(principal: Principal, owner: str | None, what: str) -> None:
    """403 unless ``principal`` owns the resource (or is an admin)."""
    if not principal.is_admin and owner != principal.owner:
        raise HTTPException(
            status_code=403, detail=f"{what} belongs to another user; only its owner may change it"
        )


PrincipalDep = Annotated[Principal, Depends(get_principal)]
ReadAccess = Depends(read_access)


MAX_ID = 2**31 - 1
"""Largest row id (a 32-bit SQL integer): a larger path id is a 422, not a database error."""


def bounded_path_ids(request: Request) -> None:
    """App-wide: every ``*_id`` path parameter is an integer in 1..MAX_ID (else 422 naming it)."""
    from fastapi.exceptions import RequestValidationError

    for name, raw in request.path_params.items():
        if name.endswith("_id") and raw.lstrip("-").isdigit() and not 1 <= int(raw) <= MAX_ID:
            raise RequestValidationError(
                [
                    {
                        "loc": ("path", name),
                        "msg": f"must be an id between 1 and {MAX_ID}",
                        "type": "value_error",
                    }
                ]
            )


def plain_query_strings(request: Request) -> None:
    """App-wide: no query parameter carries a NUL (PostgreSQL refuses it in text; a filter such
    as ``method`` or ``kind`` reached the database with it): 422 naming the parameter. Lone
    surrogates cannot arrive here (the query string is decoded with replacement)."""
    from fastapi.exceptions import RequestValidationError

    from raptorgrid.text_checks import invalid_text

    for name, value in request.query_params.multi_items():
        reason = invalid_text(value)
        if reason is not None:
            raise RequestValidationError(
                [{"loc": ("query", name), "msg": reason, "type": "string_type"}]
            )
