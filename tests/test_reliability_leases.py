"""Leases through long phases: a run whose first steps (building the network, compiling its
structure) last several lease lifetimes keeps its lease, because the worker renews it from a
heartbeat thread while no integration step reports progress; a reconciler polling every
0.5 s must not requeue it (real worker, PostgreSQL, Redis)."""

from __future__ import annotations

import pytest
from raptorgrid import migrate
from reliability_stack import campaign_rows, reconciler
from test_reliability_workers import submit

pytestmark = [pytest.mark.services, pytest.mark.slow]


def test_a_long_compile_keeps_its_lease(
    make_settings, postgres_url, redis_url, redis_queue, start_worker, wait_until, tmp_path
) -> None:
    settings = make_settings(
        database_url=postgres_url,
        broker_url=redis_url,
        queue=redis_queue,
        jax_cache_dir=tmp_path / "empty-jax-cache",  # nothing compiled yet: a slow first run
        lease_seconds=2.0,
        heartbeat_seconds=0.5,
        requeue_grace_seconds=1.0,
    )
    migrate.upgrade(settings)
    spec = {
        "name": "slow first run",
        "network": "ieee39",
        "t_end": 0.2,
        "n_eval": 11,
        "disturbances": [{"kind": "bus_fault", "bus": "bus16", "t_fault": 0.05, "t_clear": 0.1}],
        "methods": [{"method": "raptor"}],
    }
    worker = start_worker(settings, "lease")
    with reconciler(settings, interval=0.5):
        campaign_id = submit(settings, spec)

        def done() -> bool:
            return campaign_rows(settings, campaign_id)[0].finished_at is not None

        wait_until(
            done, 300, lambda: f"campaign {campaign_id}\n{worker.stacks()[-6000:]}", poll=0.5
        )
    _, runs, metrics = campaign_rows(settings, campaign_id)
    (run,) = runs
    assert run.status == "succeeded", run.message
    compile_s = metrics[run.id].compile_seconds + metrics[run.id].load_seconds
    assert compile_s > 3 * settings.lease_seconds  # the phase really outlived several leases
    assert run.attempts == 1, worker.log()[-3000:]  # and the run was never requeued
