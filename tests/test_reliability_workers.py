"""Nothing is lost, duplicated or half written when real worker processes are killed (mid-solve
and mid-Zarr-write), when the broker restarts and when the database goes away; a finished run
has exactly one trajectory and one metrics row. Real services only: PostgreSQL, Redis servers
these tests start themselves, and ``celery worker`` subprocesses."""

from __future__ import annotations

import logging
import time

import pytest
from fastapi.testclient import TestClient
from raptorgrid import migrate
from raptorgrid.api import create_app
from raptorgrid.auth import create_token
from raptorgrid.celery_app import create_celery
from raptorgrid.db import Database
from raptorgrid.spec import CampaignCreate
from raptorgrid.submission import submit_campaign
from raptorgrid.zarr_store import BLOCKS, STAGING, campaign_store, open_run
from reliability_stack import (
    campaign_rows,
    kill,
    pid_of,
    postgres_server,
    reconciler,
    redis_server,
)

pytestmark = [pytest.mark.services, pytest.mark.slow]
log = logging.getLogger(__name__)

T_END = 10.0


def slow_spec(count: int, name: str = "slow") -> dict:
    """``count`` runs of 3-4 s CPU each under the suite's XLA flags (radau, rtol 1e-8, 10 s)."""
    return {
        "name": name,
        "network": "wscc9",
        "t_end": T_END,
        "n_eval": 101,
        "disturbances": [{"kind": "bus_fault", "bus": "bus7", "t_fault": 0.1, "t_clear": 0.2}],
        "initial_conditions": {"count": count, "seed": 11, "spread": 0.2},
        "methods": [{"method": "radau", "options": {"rtol": 1e-8}}],
    }


def submit(settings, spec: dict) -> int:  # noqa: ANN001
    db, celery = Database.from_settings(settings), create_celery(settings)
    try:
        parsed = CampaignCreate.model_validate(spec)
        return submit_campaign(db=db, celery=celery, settings=settings, spec=parsed).campaign_id
    finally:
        db.dispose()


def wait_finished(settings, campaign_id: int, timeout: float, worker, wait_until):  # noqa: ANN001
    def done() -> bool:
        campaign, _, _ = campaign_rows(settings, campaign_id)
        return campaign.finished_at is not None

    def described() -> str:
        _, runs, _ = campaign_rows(settings, campaign_id)
        rows = "\n".join(
            f"run {r.id}: {r.status}, attempt {r.attempts}, t {r.sim_time}, {r.worker}, {r.message}"
            for r in runs
        )
        events, stacks = worker.events()[-6000:], worker.stacks()[-4000:]
        return f"campaign {campaign_id}\n{rows}\n{events}\n{stacks}"

    wait_until(done, timeout, described, poll=0.5)
    return campaign_rows(settings, campaign_id)


def assert_complete_once(  # noqa: ANN001
    settings, campaign_id: int, runs, metrics, t_end: float = T_END
) -> None:
    """Every run succeeded with one metrics row of its last attempt and one full trajectory."""
    assert [r.status for r in runs] == ["succeeded"] * len(runs), [
        (r.id, r.status, r.message) for r in runs
    ]
    assert sorted(metrics) == [r.id for r in runs]  # one metrics row per run, no stray rows
    store = campaign_store(settings.zarr_root, campaign_id)
    groups = sorted(p.name for p in store.iterdir() if p.is_dir() and p.name != BLOCKS)
    assert groups == sorted(f"run_{r.id}" for r in runs)  # one trajectory per run, no extra
    for run in runs:
        assert metrics[run.id].attempt == run.attempts
        ds = open_run(settings.zarr_root, campaign_id, run.id)
        assert int(ds.attrs["attempt"]) == run.attempts  # the data of the committed attempt
        assert ds.sizes["time"] == metrics[run.id].n_points
        assert ds.sizes["step"] == metrics[run.id].n_accepted_points
        assert float(ds.t_acc[-1]) == pytest.approx(t_end)


@pytest.fixture
def pg_redis_settings(make_settings, postgres_url, redis_url, redis_queue):
    def make(**overrides):  # noqa: ANN003, ANN202
        settings = make_settings(
            database_url=postgres_url,
            broker_url=redis_url,
            queue=redis_queue,
            prebuild_networks=["wscc9"],
            **overrides,
        )
        migrate.upgrade(settings)
        return settings

    return make


def test_killed_workers_lose_and_duplicate_nothing(
    pg_redis_settings, start_worker, wait_until
) -> None:
    """SIGKILL the pool process running a run, once mid-solve and once mid-Zarr-write: each
    killed run is redelivered (reconciler after its 3 s lease) and completes exactly once.
    (Four kills, alternating, took 139 s of the suite's 16 minutes; one of each kind tests the
    same two guarantees.)"""
    settings = pg_redis_settings(
        lease_seconds=3.0,
        heartbeat_seconds=0.5,
        requeue_grace_seconds=2.0,
        zarr_write_pause_seconds=2.0,  # room for the kill on a loaded machine
        max_attempts=3,
    )
    n_runs, to_kill = 5, 2
    worker = start_worker(settings, "victim")
    campaign_id = submit(settings, slow_spec(n_runs))
    killed: dict[int, str] = {}
    with reconciler(settings):
        deadline = time.monotonic() + 300  # a loaded machine: worker start, respawns
        while len(killed) < to_kill and time.monotonic() < deadline:
            _, runs, _ = campaign_rows(settings, campaign_id)
            want = "solve" if len(killed) % 2 == 0 else "write"
            for run in runs:
                if run.status != "running" or run.attempts != 1 or run.id in killed:
                    continue
                in_write = f"run {run.id}: pausing" in worker.log()
                mid_solve = run.sim_time is not None and 0 < run.sim_time < 0.8 * T_END
                if (want == "write" and in_write) or (
                    want == "solve" and mid_solve and not in_write
                ):
                    if kill(pid_of(run.worker)):
                        killed[run.id] = want
                        _, after, _ = campaign_rows(settings, campaign_id)
                        row = next(r for r in after if r.id == run.id)
                        assert row.status == "running"  # never succeeded without its data
                        final = campaign_store(settings.zarr_root, campaign_id) / f"run_{run.id}"
                        assert not final.exists()  # the partial write is still in staging
                    break
            time.sleep(0.05)
        assert len(killed) == to_kill, f"killed only {killed}\n{worker.log()[-3000:]}"
        campaign, runs, metrics = wait_finished(settings, campaign_id, 300, worker, wait_until)
    assert worker.process.poll() is None  # the worker itself survived and respawned its pool
    assert_complete_once(settings, campaign_id, runs, metrics)
    attempts = {r.id: r.attempts for r in runs}
    recovered = [i for i in killed if attempts[i] >= 2]
    assert recovered == list(killed)
    assert all(attempts[r.id] == 1 for r in runs if r.id not in killed)
    assert campaign.n_succeeded == n_runs and campaign.status == "finished"
    assert list((settings.zarr_root / STAGING).glob(f"c{campaign_id}-run_*"))  # partial leftovers
    log.warning(
        "worker kills: %d runs killed (%s), %d recovered, duplicates 0, runs %d",
        len(killed),
        ", ".join(f"{k}:{v}" for k, v in killed.items()),
        len(recovered),
        n_runs,
    )


def test_broker_restart_mid_campaign(
    make_settings, postgres_url, tmp_path, start_worker, wait_until
) -> None:
    """Stop a Redis server (AOF) mid-campaign and start it again: the worker reconnects, the
    queued messages survive, the campaign completes with every run exactly once."""
    with redis_server(tmp_path) as redis:
        settings = make_settings(
            database_url=postgres_url,
            broker_url=redis.url,
            prebuild_networks=["wscc9"],
            lease_seconds=10.0,
            heartbeat_seconds=0.5,
            requeue_grace_seconds=5.0,
        )
        migrate.upgrade(settings)
        worker = start_worker(settings, "broker")
        n_runs = 6
        campaign_id = submit(settings, slow_spec(n_runs, "broker-restart"))
        with reconciler(settings):

            def some_done() -> bool:
                return campaign_rows(settings, campaign_id)[0].n_succeeded >= 1

            wait_until(some_done, 120, lambda: f"a first run\n{worker.stacks()[-6000:]}")

            def solving() -> list[int]:
                return [r.id for r in campaign_rows(settings, campaign_id)[1]
                        if r.status == "running" and r.sim_time]  # fmt: skip

            wait_until(
                lambda: bool(solving()), 60, lambda: f"a run solving\n{worker.stacks()[-6000:]}"
            )
            in_flight = solving()
            redis.stop()
            stopped = time.monotonic()
            time.sleep(4.0)
            done_during = campaign_rows(settings, campaign_id)[0].n_succeeded
            redis.start()
            outage = time.monotonic() - stopped
            campaign, runs, metrics = wait_finished(settings, campaign_id, 150, worker, wait_until)
        assert worker.process.poll() is None
        assert_complete_once(settings, campaign_id, runs, metrics)
        assert campaign.n_succeeded == n_runs
        # the run in flight kept running through the outage: its result went to SQL and Zarr,
        # which need no broker; it was neither cancelled nor requeued (before: cancelled at the
        # connection loss, then requeued after its lease, attempt 2)
        by_id = {r.id: r for r in runs}
        assert in_flight and all(by_id[i].attempts == 1 for i in in_flight), [
            (i, by_id[i].attempts) for i in in_flight
        ]
        log.warning(
            "broker restart survived: %d runs, %d done before the restart (%.1f s outage), "
            "max attempts %d",
            n_runs,
            done_during,
            outage,
            max(r.attempts for r in runs),
        )


def test_database_outage_mid_campaign(
    make_settings, redis_url, redis_queue, tmp_path, start_worker, wait_until
) -> None:
    """Stop PostgreSQL mid-campaign: the API answers 503 naming the database, the worker
    retries its writes with backoff, and the campaign completes when the database returns."""
    with postgres_server() as pg:
        settings = make_settings(
            database_url=pg.url,
            broker_url=redis_url,
            queue=redis_queue,
            prebuild_networks=["wscc9"],
            lease_seconds=30.0,
            heartbeat_seconds=0.5,
            db_retry_seconds=90.0,
        )
        migrate.upgrade(settings)
        worker = start_worker(settings, "dbdown")
        with TestClient(create_app(settings)) as client:
            with client.app.state.db.write() as session:
                token = create_token(session=session, owner="ops")[1]
            client.headers["Authorization"] = f"Bearer {token}"
            created = client.post("/campaigns", json=slow_spec(6, "db-outage"))
            assert created.status_code == 201, created.text
            campaign_id = created.json()["id"]

            def some_done() -> bool:
                counts = client.get(f"/campaigns/{campaign_id}").json()["counts"]
                return counts["succeeded"] >= 1

            wait_until(some_done, 120, lambda: f"a first run\n{worker.stacks()[-6000:]}")
            pg.stop()
            for response in (
                client.get(f"/campaigns/{campaign_id}"),
                client.post("/campaigns", json=slow_spec(1)),
                client.post(f"/campaigns/{campaign_id}/cancel"),
            ):
                assert response.status_code == 503, response.text
                assert "database is unreachable" in response.json()["detail"]
                assert response.headers["retry-after"] == "5"
            assert client.get("/health").status_code == 503
            wait_until(
                lambda: "database unreachable, retrying" in worker.log(), 30, "a worker retry"
            )
            time.sleep(2.0)
            pg.start()
            campaign, runs, metrics = wait_finished(settings, campaign_id, 150, worker, wait_until)
            assert client.get("/health").status_code == 200
        retries = worker.log().count("database unreachable, retrying")
        assert worker.process.poll() is None
        assert_complete_once(settings, campaign_id, runs, metrics)
        assert campaign.n_succeeded == 6 and campaign.status == "finished"
        log.warning("database outage survived: 6 runs, %d worker write retries", retries)
