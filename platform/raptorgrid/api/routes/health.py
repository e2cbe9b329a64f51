"""/health: whether each dependency answers (database, broker, results store) and the version.

A probe's failure is logged with its detail and reported only as ``unavailable``: the body is
public (load balancers, probes), so it never carries driver errors, URLs or host names. Any
component down answers 503; so does a results store with less than ``store_failing_free_bytes``
free (``failing``); below ``store_degraded_free_bytes`` it is ``degraded`` (200)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from raptorgrid import __version__
from raptorgrid.api.deps import CeleryDep, DatabaseDep, SettingsDep
from raptorgrid.api.schemas import Health
from raptorgrid.store_space import free_bytes, space_state
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

    parts: dict[str, str] = {
        "database": _probe("database", db.ping),
        "broker": _probe("broker", broker),
        "store": _probe("results store", lambda: check_store(settings.zarr_root)),
    }
    free = None
    if parts["store"] == "ok":
        try:
            free = free_bytes(settings.zarr_root)
        except OSError as exc:
            log.error("health: results store free space unknown: %s", exc)
        parts["store"] = space_state(free, settings)
        if parts["store"] != "ok":
            log.error("health: results store %s: %s bytes free", parts["store"], free)
    down = any(value in ("unavailable", "failing") for value in parts.values())
    status = "unavailable" if down else "degraded" if parts["store"] != "ok" else "ok"
    body = Health.model_validate(
        {"status": status, "version": __version__, "store_free_bytes": free, **parts}
    )
    if not down:
        return body
    return JSONResponse(status_code=503, content=body.model_dump())
