"""Typed dependencies: the settings, a read session, the enqueuer, the caller of a write
(``PrincipalDep``) and of a read (``ReaderDep``, ``api.access``)."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from typing import Annotated

from celery import Celery
from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from raptorgrid.api.access import Reader
from raptorgrid.auth import Principal, verify_token
from raptorgrid.db import Database
from raptorgrid.repository.stats_cache import StatsCache
from raptorgrid.settings import Settings

log = logging.getLogger(__name__)


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


def _client(request: Request) -> str:
    """The client address failed authentications are counted by (uvicorn's, which honours
    ``X-Forwarded-For`` only from its ``--forwarded-allow-ips``)."""
    return request.client.host if request.client else "unknown"


def _principal(request: Request, credentials: HTTPAuthorizationCredentials | None) -> Principal:
    """The token's principal: 401 when missing or not valid; 429 (``Retry-After``) while the
    client is past its rate of failed authentications (``auth_failure_burst``), whatever
    token it sends."""
    settings: Settings = request.app.state.settings
    if credentials is None:
        raise _unauthorized("missing API token: send 'Authorization: Bearer <token>'")
    client, failures = _client(request), request.app.state.auth_failures
    wait = failures.wait(client)
    if wait > 0:
        raise HTTPException(
            status_code=429,
            detail="too many failed authentications from this client: at most "
            f"{settings.auth_failures_per_minute:g} per minute "
            f"(bursts of {settings.auth_failure_burst}); retry later",
            headers={"Retry-After": str(max(1, math.ceil(wait)))},
        )
    bootstrap = settings.admin_token.get_secret_value() if settings.admin_token else None
    db: Database = request.app.state.db
    with db.read() as session:
        principal = verify_token(
            session=session, token=credentials.credentials, bootstrap=bootstrap
        )
    if principal is None:
        failures.take(client)
        log.warning("failed authentication from %s (%s %s)", client, request.method,
                    request.url.path)  # fmt: skip
        raise _unauthorized("invalid or revoked API token")
    return principal


def get_principal(
    request: Request,
    settings: Annotated[Settings, Depends(get_settings_dep)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    """The caller of a write endpoint: 401 without a valid token, 429 (``Retry-After``) past
    its owner's write rate (``api.ratelimit``) or its client's rate of failed authentications."""
    principal = _principal(request, credentials)
    wait = request.app.state.write_limiter.take(principal.owner)
    if wait > 0:
        raise HTTPException(
            status_code=429,
            detail=f"too many writes for {principal.owner!r}: at most "
            f"{settings.write_rate_per_minute:g} per minute (bursts of {settings.write_burst})",
            headers={"Retry-After": str(max(1, math.ceil(wait)))},
        )
    return principal


def get_reader(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Reader:
    """The caller of a read endpoint (``api.access``). With ``read_requires_token`` a valid
    token is needed and reads are limited to the token's owner (an admin reads everything);
    else reads are public, and a token, when sent, is checked and identifies its owner (who
    then sees their own campaigns whole; an admin sees tracebacks and workers)."""
    settings: Settings = request.app.state.settings
    if settings.read_requires_token or credentials is not None:
        return Reader(_principal(request, credentials), isolated=settings.read_requires_token)
    return Reader(None, isolated=False)


def require_owner(principal: Principal, owner: str | None, what: str) -> None:
    """403 unless ``principal`` owns the resource (or is an admin)."""
    if not principal.is_admin and owner != principal.owner:
        raise HTTPException(
            status_code=403, detail=f"{what} belongs to another user; only its owner may change it"
        )


PrincipalDep = Annotated[Principal, Depends(get_principal)]
ReaderDep = Annotated[Reader, Depends(get_reader)]
ReadAccess = Depends(get_reader)
"""A router's dependency: the reader is resolved (401/429) once per request, also for the
routes that take it as ``ReaderDep``."""


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
