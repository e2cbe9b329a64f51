"""The HTTP API (FastAPI): one router per resource over the repository functions.

``create_app(settings)`` builds an app bound to one database and one Celery app; uvicorn runs it
with ``raptorgrid api`` (``uvicorn --factory raptorgrid.api:create_app``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI

from raptorgrid import __version__, case_store
from raptorgrid.api import errors
from raptorgrid.api.deps import bounded_path_ids, plain_query_strings
from raptorgrid.api.limits import RequestLimits
from raptorgrid.api.ratelimit import WriteRateLimiter
from raptorgrid.api.routes import campaigns, cases, health, runs, solvers, trajectories
from raptorgrid.api.routes import stats as results_stats
from raptorgrid.celery_app import create_celery
from raptorgrid.db import Database
from raptorgrid.repository.stats_cache import StatsCache
from raptorgrid.settings import Settings, get_settings


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        app.state.db.dispose()

    app = FastAPI(
        title="raptorgrid",
        version=__version__,
        lifespan=lifespan,
        dependencies=[Depends(bounded_path_ids), Depends(plain_query_strings)],
        docs_url=None,  # /docs and /redoc without a CDN: raptorgrid.api.docs
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.db = Database.from_settings(settings)
    case_store.use_settings(settings)
    app.state.stats_cache = StatsCache()
    app.state.write_limiter = WriteRateLimiter(
        per_minute=settings.write_rate_per_minute, burst=settings.write_burst
    )
    app.state.auth_failures = WriteRateLimiter(
        per_minute=settings.auth_failures_per_minute, burst=settings.auth_failure_burst
    )
    app.state.celery = create_celery(settings)
    errors.install(app)
    app.add_middleware(
        RequestLimits,
        max_bytes=settings.max_request_bytes,
        max_depth=settings.max_json_depth,
    )
    for module in (results_stats, trajectories, campaigns, runs, cases, solvers, health):
        app.include_router(module.router)
    from raptorgrid.dashboard import router as dashboard_router

    app.include_router(dashboard_router)
    from raptorgrid.api import docs as offline_docs

    offline_docs.install(app)
    return app
