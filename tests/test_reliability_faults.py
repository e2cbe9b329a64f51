"""Numerical faults are results and cancellation stops runs, on a real worker process
(PostgreSQL + Redis): each failure ends as a failed run with its reason after one attempt, the
same pool process then serves a good run, and a cancelled campaign never starts its pending
runs and stops its running one at the next progress check."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient
from raptorgrid import migrate
from raptorgrid.api import create_app
from raptorgrid.auth import create_token
from reliability_stack import campaign_rows, pid_of

pytestmark = [pytest.mark.services, pytest.mark.slow]


def spec(name: str, methods: list[dict], t_end: float = 10.0, count: int = 1) -> dict:
    return {
        "name": name,
        "network": "wscc9",
        "t_end": t_end,
        "n_eval": 51,
        "disturbances": [{"kind": "bus_fault", "bus": "bus7", "t_fault": 0.1, "t_clear": 0.2}],
        "initial_conditions": {"count": count, "seed": 5, "spread": 0.2},
        "methods": methods,
    }


@pytest.fixture
def stack(make_settings, postgres_url, redis_url, redis_queue, start_worker):
    settings = make_settings(
        database_url=postgres_url,
        broker_url=redis_url,
        queue=redis_queue,
        prebuild_networks=["wscc9"],
        # the limit includes compiling a method's kernels (RAPTOR's attempt: ~15 s on a loaded
        # 2-core machine), so it is generous; the time-limit run needs ~1e6 steps
        soft_time_limit=25.0,
        hard_time_limit=50.0,
        heartbeat_seconds=0.3,
        lease_seconds=20.0,
    )
    migrate.upgrade(settings)
    worker = start_worker(settings, "faults")
    with TestClient(create_app(settings)) as client:
        with client.app.state.db.write() as session:
            client.headers["Authorization"] = (
                f"Bearer {create_token(session=session, owner='q')[1]}"
            )
        yield settings, worker, client


def finished(client, campaign_id: int, worker, wait_until, timeout: float = 300) -> dict:  # noqa: ANN001
    def done() -> bool:
        assert worker.process.poll() is None, worker.log()[-3000:]
        return client.get(f"/campaigns/{campaign_id}").json()["finished_at"] is not None

    wait_until(done, timeout, lambda: f"campaign {campaign_id}\n{worker.stacks()[-6000:]}", 0.5)
    return client.get(f"/campaigns/{campaign_id}").json()


def test_faults_are_results_then_a_good_run_and_a_cancel(stack, wait_until) -> None:
    settings, worker, client = stack
    bad = spec(
        "faults",
        [
            {"method": "radau", "options": {"max_steps": 2}},  # step-count limit
            {"method": "raptor", "options": {"max_intervals": 2}},  # interval-count limit
            {"method": "trapezoid", "options": {"dt": 1.0}},  # Newton fails: a numerical fault
            {"method": "trapezoid", "options": {"dt": 1e-5}},  # 1e6 steps: > soft limit
        ],
    )
    bad_id = client.post("/campaigns", json=bad).json()["id"]
    good_id = client.post("/campaigns", json=spec("good", [{"method": "radau"}], 1.0)).json()["id"]
    campaign = finished(client, bad_id, worker, wait_until)
    assert campaign["counts"]["failed"] == 4 and campaign["status"] == "finished"
    runs = client.get(f"/campaigns/{bad_id}/runs").json()["data"]
    reasons = {r["config_label"]: r["reason"] for r in runs}
    assert reasons == {
        "max_steps=2": "max_steps",
        "max_intervals=2": "max_steps",
        "dt=1.0": "newton_failed",
        "dt=1e-05": "time_limit",
    }, [(r["config_label"], r["reason"], r["message"][:80]) for r in runs]
    assert all(r["attempts"] == 1 and r["advice"] for r in runs)  # never retried
    good = finished(client, good_id, worker, wait_until)
    assert good["counts"]["succeeded"] == 1
    _, good_runs, _ = campaign_rows(settings, good_id)
    _, bad_runs, _ = campaign_rows(settings, bad_id)
    # the same pool process served the bad runs (the time limit included) and then the good one
    assert {pid_of(r.worker) for r in bad_runs + good_runs} == {pid_of(good_runs[0].worker)}

    # Cancellation: one run running (progress reported), the others pending.
    slow = spec("cancel", [{"method": "radau", "options": {"rtol": 1e-9}}], 10.0, count=4)
    cancel_id = client.post("/campaigns", json=slow).json()["id"]

    def first_running() -> bool:
        _, runs, _ = campaign_rows(settings, cancel_id)
        return any(r.status == "running" and (r.sim_time or 0) > 0 for r in runs)

    wait_until(first_running, 60, lambda: f"a running run\n{worker.stacks()[-6000:]}", 0.05)
    response = client.post(f"/campaigns/{cancel_id}/cancel")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    campaign = finished(client, cancel_id, worker, wait_until, 30)
    _, runs, metrics = campaign_rows(settings, cancel_id)
    running = [r for r in runs if r.started_at is not None]
    assert len(running) == 1 and running[0].status == "cancelled"
    assert running[0].sim_time < 10.0  # stopped mid-run, at a progress check
    assert all(r.status == "cancelled" and r.attempts == 0 for r in runs if r not in running)
    counts = campaign["counts"]
    assert counts["cancelled"] == 4 and sum(counts.values()) == 4 and campaign["done"] == 4
    assert campaign["n_runs"] == 4 and not metrics
    time.sleep(1.0)  # the pending runs' messages arrive and are skipped, never started
    _, again, _ = campaign_rows(settings, cancel_id)
    assert [(r.status, r.attempts) for r in again] == [(r.status, r.attempts) for r in runs]
    # a stuck worker can be diagnosed: both of its processes write their threads' stacks
    stacks = worker.stacks()
    assert worker.process.poll() is None
    assert stacks.count("most recent call first") >= 2, stacks[-3000:]
