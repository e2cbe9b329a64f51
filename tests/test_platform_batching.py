"""Runs batched into task messages: sizes from the expected cost, one configuration per batch,
and a worker killed mid-batch loses, duplicates and recomputes nothing (real Redis, PostgreSQL
and ``celery worker`` processes)."""

from __future__ import annotations

import time

import pytest
from raptorgrid.batching import RunToSend, batch_size, batches, expected_run_seconds
from raptorgrid.celery_app import create_celery
from raptorgrid.queueing import enqueue_runs, queue_depth
from raptorgrid.settings import Settings
from reliability_stack import campaign_rows, kill, pid_of, reconciler
from test_reliability_workers import T_END, assert_complete_once, slow_spec, submit


def test_batch_size_follows_the_expected_cost(tmp_path) -> None:  # noqa: ANN001
    settings = Settings(data_dir=tmp_path, batch_target_seconds=2.0, max_batch_size=64)
    assert batch_size(expected_seconds=0.03, n_runs=10_000, settings=settings) == 64  # capped
    assert batch_size(expected_seconds=0.5, n_runs=10_000, settings=settings) == 4
    assert batch_size(expected_seconds=30.0, n_runs=10_000, settings=settings) == 1
    # at least batch_min_tasks (8) messages when the campaign is small
    assert batch_size(expected_seconds=0.03, n_runs=60, settings=settings) == 8
    # a measured median wins over the size prior
    assert expected_run_seconds(n_unknowns=843, t_end=1.0, measured_median=0.2) == 0.2
    assert expected_run_seconds(n_unknowns=45, t_end=1.0, measured_median=None) > 0


def test_batches_never_mix_configurations() -> None:
    runs = [RunToSend(i, ("radau", "rtol=1e-4" if i < 5 else "rtol=1e-6")) for i in range(1, 9)]
    assert batches(runs, 3) == [[1, 2, 3], [4], [5, 6, 7], [8]]
    # interleaved configurations (each scenario's methods listed together) still batch
    mixed = [RunToSend(i, ("trapezoid", "dt=1e-6" if i % 2 else "dt=1e-7")) for i in range(1, 9)]
    assert batches(mixed, 3) == [[1, 3, 5], [7], [2, 4, 6], [8]]


def test_a_batch_is_one_message(tmp_path) -> None:  # noqa: ANN001
    settings = Settings(data_dir=tmp_path, database_url="")
    celery = create_celery(settings)
    sent = enqueue_runs(celery, [], queue=settings.queue, batches=[[1, 2, 3], [4, 5]])
    assert sent == 5 and queue_depth(celery, queue=settings.queue) == 2


@pytest.mark.services
@pytest.mark.slow
def test_worker_killed_mid_batch_recomputes_nothing_finished(
    make_settings, postgres_url, redis_url, redis_queue, start_worker, wait_until
) -> None:
    """One message carries all six runs. SIGKILL the pool process while it solves the third:
    the two finished runs keep their single attempt and finish time, the killed run is
    requeued after its lease, the unstarted ones run once; every run ends complete once."""
    from raptorgrid import migrate

    settings = make_settings(
        database_url=postgres_url,
        broker_url=redis_url,
        queue=redis_queue,
        prebuild_networks=["wscc9"],
        lease_seconds=3.0,
        heartbeat_seconds=0.5,
        requeue_grace_seconds=2.0,
        batch_target_seconds=1e6,
        batch_min_tasks=1,
    )
    migrate.upgrade(settings)
    worker = start_worker(settings, "batch")
    campaign_id = submit(settings, slow_spec(6, "batched"))
    victim = None
    with reconciler(settings):
        deadline = time.monotonic() + 300  # a loaded machine: worker start, respawns
        while victim is None and time.monotonic() < deadline:
            _, runs, _ = campaign_rows(settings, campaign_id)
            done = [r for r in runs if r.status == "succeeded"]
            running = [r for r in runs if r.status == "running" and r.sim_time]
            if len(done) >= 2 and running and 0 < running[0].sim_time < 0.8 * T_END:
                finished_before = {r.id: r.finished_at for r in done}
                assert kill(pid_of(running[0].worker))
                victim = running[0].id
            time.sleep(0.05)
        assert victim is not None, worker.log()[-3000:]

        def finished() -> bool:
            return campaign_rows(settings, campaign_id)[0].finished_at is not None

        wait_until(
            finished, 180, lambda: f"campaign {campaign_id}\n{worker.stacks()[-6000:]}", poll=0.5
        )
    campaign, runs, metrics = campaign_rows(settings, campaign_id)
    assert_complete_once(settings, campaign_id, runs, metrics)
    by_id = {r.id: r for r in runs}
    for run_id, when in finished_before.items():  # not recomputed
        assert by_id[run_id].attempts == 1 and by_id[run_id].finished_at == when
    assert by_id[victim].attempts == 2
    assert all(r.attempts == 1 for r in runs if r.id != victim)
    assert campaign.n_succeeded == 6


@pytest.mark.services
@pytest.mark.slow
def test_runs_waiting_in_a_held_batch_are_not_re_sent(
    make_settings, postgres_url, redis_url, redis_queue, start_worker, wait_until
) -> None:
    """One message carries four ~2 s runs and the reconciler re-sends queued runs after 1 s of
    an empty queue: the runs waiting behind the first in the batch a worker holds are not lost,
    so none is re-sent (the worker marks them as in transit with every heartbeat). Before: the
    worker received duplicate messages ("not claimable")."""
    from raptorgrid import migrate

    settings = make_settings(
        database_url=postgres_url,
        broker_url=redis_url,
        queue=redis_queue,
        prebuild_networks=["wscc9"],
        requeue_grace_seconds=1.0,
        heartbeat_seconds=0.25,
        batch_target_seconds=1e6,
        batch_min_tasks=1,
    )
    migrate.upgrade(settings)
    worker = start_worker(settings, "held")
    wait_until(lambda: " ready" in worker.log(), 180, "worker ready")
    with reconciler(settings, interval=0.5):
        campaign_id = submit(settings, slow_spec(4, "held batch"))

        def finished() -> bool:
            return campaign_rows(settings, campaign_id)[0].finished_at is not None

        wait_until(
            finished, 180, lambda: f"campaign {campaign_id}\n{worker.stacks()[-6000:]}", poll=0.5
        )
    campaign, runs, metrics = campaign_rows(settings, campaign_id)
    assert_complete_once(settings, campaign_id, runs, metrics)
    assert "not claimable" not in worker.log()  # no duplicate message reached the worker
