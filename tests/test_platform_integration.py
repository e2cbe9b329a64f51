"""End to end on the production stack of this machine: PostgreSQL + Redis + a real Celery
worker subprocess. A campaign is submitted through the API, solved by the worker, and the SQL
rows and the Zarr arrays must agree."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from conftest import run_campaign_through_api
from fastapi.testclient import TestClient
from raptorgrid import migrate
from raptorgrid.api import create_app
from raptorgrid.db import Database
from raptorgrid.queueing import enqueue_runs, queue_depth
from raptorgrid.tables import Run, RunMetrics
from raptorgrid.zarr_store import campaign_store
from sqlalchemy import select

pytestmark = [pytest.mark.services, pytest.mark.slow]

WORKER_BUDGET = 120.0
"""Start (imports, wscc9 build and compile on one CPU) plus six short runs."""


@pytest.fixture
def stack_settings(make_settings, postgres_url, redis_url, redis_queue):
    settings = make_settings(
        database_url=postgres_url,
        broker_url=redis_url,
        queue=redis_queue,
        prebuild_networks=["wscc9"],
    )
    migrate.upgrade(settings)
    return settings


def test_campaign_over_postgres_redis_and_a_real_worker(
    stack_settings, small_spec, start_worker, wait_until
) -> None:
    settings = stack_settings
    small_spec["methods"].append({"method": "radau", "options": {"max_steps": 2}})
    worker = start_worker(settings, "pg-redis")
    with TestClient(create_app(settings)) as client:
        created = run_campaign_through_api(client, small_spec, [worker], WORKER_BUDGET)
        campaign_id, n_runs = created["id"], created["n_runs"]
        assert n_runs == 6
        campaign = client.get(f"/campaigns/{campaign_id}").json()
        assert campaign["status"] == "finished"
        assert campaign["counts"]["succeeded"] == 4, worker.log()[-3000:]
        assert campaign["counts"]["failed"] == 2  # max_steps=2: a numerical failure, recorded
        failed = client.get(f"/campaigns/{campaign_id}/runs", params={"status": "failed"}).json()[
            "data"
        ]
        assert {r["reason"] for r in failed} == {"max_steps"}
        assert all(r["metrics"] is not None and r["advice"] for r in failed)
        first = client.get(f"/runs/{failed[0]['id']}").json()
        assert first["attempts"] == 1 and first["metrics"]["accepted"] >= 2

    db = Database.from_settings(settings)
    with db.read() as session:
        rows = session.execute(
            select(Run, RunMetrics)
            .join(RunMetrics, RunMetrics.run_id == Run.id)
            .where(Run.campaign_id == campaign_id)
        ).all()
    assert len(rows) == n_runs  # every run, failed ones too, has exactly one metrics row
    from models.library import build_system

    system = build_system("wscc9")
    store = str(campaign_store(settings.zarr_root, campaign_id))
    for run, metrics in rows:
        assert run.attempts == 1 and run.zarr_group.endswith(f"run_{run.id}")
        ds = xr.open_zarr(store, group=f"run_{run.id}")
        assert ds.sizes["time"] == metrics.n_points == 51
        assert ds.sizes["step"] == metrics.n_accepted_points
        assert list(ds.state.values) == list(system.state_names)
        assert float(ds.t_acc[-1]) == metrics.final_time
        if run.status == "succeeded":
            assert metrics.final_time == pytest.approx(1.0)
            assert run.sim_time == pytest.approx(1.0)  # progress reported by the worker
            final = ds.x.isel(time=-1).values
            np.testing.assert_allclose(final, ds.x_acc.isel(step=-1).values, rtol=1e-6, atol=1e-9)
            assert np.isfinite(ds.y.values).all()

    # At-least-once delivery: duplicate messages for finished runs change nothing.
    celery = create_app(settings).state.celery
    enqueue_runs(celery, [r.id for r, _ in rows[:2]], queue=settings.queue)
    wait_until(lambda: queue_depth(celery, queue=settings.queue) == 0, 30, "duplicates consumed")
    wait_until(lambda: worker.log().count("not claimable") >= 2, 30, "duplicates skipped")
    with db.read() as session:
        attempts = session.scalars(select(Run.attempts).where(Run.campaign_id == campaign_id))
        assert set(attempts) == {1}
    db.dispose()
