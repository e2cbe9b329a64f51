"""The shipped reconciler (``raptorgrid reconcile`` in a subprocess) survives a real Redis
restart and a real PostgreSQL restart (private servers on free ports), keeps requeuing expired
runs afterwards, and removes orphaned staging data."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from raptorgrid import migrate
from raptorgrid.db import Database
from raptorgrid.tables import Run, utcnow
from raptorgrid.zarr_store import STAGING
from reliability_stack import postgres_server, redis_server
from sqlalchemy import select, update
from test_reliability_workers import submit

pytestmark = [pytest.mark.services, pytest.mark.slow]


def _expire(settings, run_id: int) -> None:  # noqa: ANN001
    """Make ``run_id`` look like the run of a worker that died: running, lease long expired."""
    db = Database.from_settings(settings)
    with db.write() as session:
        session.execute(
            update(Run)
            .where(Run.id == run_id)
            .values(status="running", attempts=1, worker="dead@host",
                    lease_until=utcnow() - timedelta(minutes=5))
        )  # fmt: skip
    db.dispose()


def _status(settings, run_id: int) -> str:  # noqa: ANN001
    db = Database.from_settings(settings)
    with db.read() as session:
        status = session.scalar(select(Run.status).where(Run.id == run_id))
    db.dispose()
    return status


def test_reconciler_survives_broker_and_database_restarts(
    make_settings, small_spec, tmp_path: Path, wait_until
) -> None:
    with redis_server(tmp_path) as redis, postgres_server() as pg:
        settings = make_settings(database_url=pg.url, broker_url=redis.url, reconcile_seconds=0.5)
        migrate.upgrade(settings)
        submit(settings, small_spec)  # 4 queued runs, their messages in Redis
        staging = Path(settings.zarr_root) / STAGING
        old, fresh = staging / "c1-run_3-deadwriter", staging / "c1-run_4-liveone"
        for folder in (old, fresh):
            (folder / "x").mkdir(parents=True)
        long_ago = time.time() - 2 * settings.visibility_timeout
        os.utime(old, (long_ago, long_ago))

        log = tmp_path / "reconcile.log"
        env = {**os.environ, **settings.as_env()}
        cli = Path(sys.executable).with_name("raptorgrid")
        with open(log, "wb") as sink:
            process = subprocess.Popen(
                [str(cli), "reconcile"], env=env, stdout=sink, stderr=subprocess.STDOUT
            )
        try:
            wait_until(lambda: not old.exists(), 30, "the orphaned staging entry removed")
            assert fresh.exists()  # a write that may still be in progress is left alone

            _expire(settings, 1)
            wait_until(lambda: _status(settings, 1) == "queued", 30, "a requeue before outages")

            redis.stop()
            time.sleep(8)
            redis.start()
            pg.stop()
            time.sleep(8)
            pg.start()
            assert process.poll() is None, log.read_text(errors="replace")[-3000:]

            _expire(settings, 2)
            wait_until(
                lambda: _status(settings, 2) == "queued",
                90,
                f"a requeue after both restarts\n{log.read_text(errors='replace')[-3000:]}",
            )
            # the pass that requeued run 2 logs its recovery when it ends: let it finish writing
            wait_until(
                lambda: "back to every" in log.read_text(errors="replace"),
                30,
                f"the recovery logged\n{log.read_text(errors='replace')[-3000:]}",
            )
            text = log.read_text(errors="replace")
            # the outages were seen (passes failed, with backoff) and survived
            assert "reconcile pass failed" in text and "back to every" in text
            assert process.poll() is None
        finally:
            process.terminate()
            process.wait(timeout=30)
