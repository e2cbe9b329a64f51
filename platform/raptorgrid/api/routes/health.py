"""/health: whether each dependency answers (database, broker, results store) and the version.

A probe's failure is logged with its detail and reported only as ``unavailable``: the body is
public (load balancers, probes), so it never carries driver errors, URLs or host names. Any
component down answers 503."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from raptorgrid import __version__
from raptorgrid.api.deps import CeleryDep, DatabaseDep, SettingsDep
from raptorgrid.api.schemas import Health
from raptorgrid.zarr_store import check_store

router = APIRouter(tags=["health"])
log = logging.getLogger(__name__)

BROKER_TIMEOUT = 2.0
"""Seconds a broker probe may take (a probe must answer even when the broker hangs)."""


def _probe(name: str, check: Callable[[], object]) -> Literal["ok", "unavailable"]:
    try:
        check()
    except Exception as exc:  # noqa: BLE001 - any failure of a probe means "unavailable"
        log.error("health: %s unavailable: %s: %s", name, type(exc).__name__, exc)
        return "unavailable"
    return "ok"


@router.get("/health", response_model=Health, responses={503: {"model": Health}})
def health(db: DatabaseDep, celery: CeleryDep, settings: SettingsDep) -> Health | JSONResponse:
    def broker() -> None:
        with celery.connection_for_read() as connection:
            connection.ensure_connection(max_retries=1, timeout=BROKER_TIMEOUT)

    parts = {
        "database": _probe("database", db.ping),
        "broker": _probe("broker", broker),
        "store": _probe("results store", lambda: check_store(settings.zarr_root)),
    }
    ok = all(value == "ok" for value in parts.values())
    body = Health(status="ok" if ok else "unavailable", version=__version__, **parts)
    if ok:
        return body
    return JSONResponse(status_code=503, content=body.model_dump())
