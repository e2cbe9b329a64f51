"""Service commands: ``worker``, ``api``, ``db upgrade`` and ``reconcile``."""

from __future__ import annotations

import logging
import os
import threading
import uuid
from typing import Annotated

import typer

from raptorgrid.cli.errors import user_errors
from raptorgrid.cli.render import console

db_app = typer.Typer(help="Database schema (Alembic migrations).", no_args_is_help=True)


def worker(
    cpu: Annotated[
        int | None, typer.Option(help="pin the worker to this CPU (default: leave as is)")
    ] = None,
    name: Annotated[str | None, typer.Option(help="worker name (default: a random one)")] = None,
) -> None:
    """Start one Celery worker (one pool process, one run at a time) with the settings."""
    from raptorgrid.runtime import SINGLE_THREAD_ENV, pin_to_cpu
    from raptorgrid.settings import get_settings

    settings = get_settings()
    for key, value in SINGLE_THREAD_ENV.items():  # inherited by the spawned pool process
        os.environ.setdefault(key, value)
    if cpu is not None:
        pin_to_cpu(cpu)
    if settings.broker_is_sqla:
        from raptorgrid.broker import prepare_sqla_broker

        prepare_sqla_broker(settings)
    from raptorgrid.celery_app import app as celery

    celery.worker_main(
        [
            "worker",
            "--concurrency=1",
            "--pool=prefork",
            f"--queues={settings.queue}",
            f"--hostname={name or 'worker-' + uuid.uuid4().hex[:6]}@%h",
            f"--loglevel={settings.log_level}",
        ]
    )


def api(
    host: Annotated[str | None, typer.Option(help="bind address (default: settings)")] = None,
    port: Annotated[int | None, typer.Option(help="port (default: settings)")] = None,
) -> None:
    """Serve the HTTP API with uvicorn."""
    import uvicorn

    from raptorgrid.settings import get_settings

    settings = get_settings()
    uvicorn.run(
        "raptorgrid.api:create_app",
        factory=True,
        host=host or settings.api_host,
        port=port or settings.api_port,
        log_level=settings.log_level.lower(),
    )


@db_app.command("upgrade")
def db_upgrade(revision: Annotated[str, typer.Argument()] = "head") -> None:
    """Apply the migrations up to REVISION (default head); creates the schema on a fresh db."""
    from raptorgrid import migrate
    from raptorgrid.settings import get_settings

    with user_errors():
        settings = get_settings()
        migrate.upgrade(settings, revision)
        console.print(
            f"database at {revision}: {settings.database_url}", highlight=False, markup=False
        )


def reconcile(
    once: Annotated[bool, typer.Option("--once", help="one pass, then exit")] = False,
) -> None:
    """Requeue runs whose worker died (expired lease) and re-send lost messages."""
    from raptorgrid.celery_app import create_celery
    from raptorgrid.db import Database
    from raptorgrid.reconcile import reconcile_forever, reconcile_once
    from raptorgrid.settings import get_settings

    settings = get_settings()
    logging.getLogger().setLevel(settings.log_level)
    db, celery = Database.from_settings(settings), create_celery(settings)
    if once:
        outcome = reconcile_once(db=db, celery=celery, settings=settings)
        console.print(f"requeued {outcome.requeued}, failed {outcome.failed}", markup=False)
        return
    stop = threading.Event()
    try:
        reconcile_forever(db=db, celery=celery, settings=settings, stop=stop)
    except KeyboardInterrupt:
        stop.set()


def register(app: typer.Typer) -> None:
    app.command()(worker)
    app.command()(api)
    app.command()(reconcile)
    app.add_typer(db_app, name="db")
