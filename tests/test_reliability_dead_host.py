"""A worker host that dies holding a batch message (issue 44, item 4): the batch's unstarted
runs are re-sent within one lease, not after the broker's visibility timeout, in batches, and
nothing runs twice. Real services: PostgreSQL, the machine's Redis, two ``celery worker``
subprocesses (the victim, whose every block write pauses so that it holds its batch long, and
a survivor), the reconciler in a thread."""

from __future__ import annotations

import logging
import os
import signal
import time

import pytest
from raptorgrid import migrate
from reliability_stack import campaign_rows, reconciler
from test_reliability_workers import assert_complete_once, submit

pytestmark = [pytest.mark.services, pytest.mark.slow]
log = logging.getLogger(__name__)

LEASE = 3.0
VISIBILITY = 60
"""The broker's visibility timeout (s): before, the batch's unstarted runs waited for it."""
N_RUNS = 60
T_END = 1.0


def short_spec() -> dict:
    """``N_RUNS`` runs of one configuration (wscc9, radau, 1 s): about 0.1 s each."""
    return {
        "name": "dead-host",
        "network": "wscc9",
        "t_end": T_END,
        "n_eval": 101,
        "disturbances": [{"kind": "bus_fault", "bus": "bus7", "t_fault": 0.1, "t_clear": 0.2}],
        "initial_conditions": {"count": N_RUNS, "seed": 5, "spread": 0.2},
        "methods": [{"method": "radau", "options": {"rtol": 1e-4}}],
    }


def test_dead_host_holding_a_batch_is_recovered_within_a_lease(
    make_settings, postgres_url, redis_url, redis_queue, start_worker, wait_until, caplog
) -> None:
    common = dict(
        database_url=postgres_url,
        broker_url=redis_url,
        queue=redis_queue,
        prebuild_networks=["wscc9"],
        lease_seconds=LEASE,
        heartbeat_seconds=0.5,
        requeue_grace_seconds=2.0,
        soft_time_limit=20.0,
        hard_time_limit=30.0,
        visibility_timeout=VISIBILITY,
        batch_min_tasks=1,
        batch_target_seconds=1000.0,  # the campaign is one message
    )
    settings = make_settings(**common)
    migrate.upgrade(settings)
    # the victim publishes one run at a time, each write pausing 1 s: it holds its batch for
    # about a minute
    victim = start_worker(
        make_settings(**common, result_block_max=1, zarr_write_pause_seconds=1.0), "victim"
    )
    # its pool process has built the network (a message delivered while the pool starts
    # waits unmarked; held longer than a lease, its runs would be re-sent: a harmless duplicate)
    wait_until(lambda: "prebuilt network" in victim.log(), 180, lambda: f"ready\n{victim.log()}")
    campaign_id = submit(settings, short_spec())
    caplog.set_level(logging.INFO, logger="raptorgrid.queueing")
    with reconciler(settings, interval=0.5):
        wait_until(
            lambda: campaign_rows(settings, campaign_id)[0].n_succeeded >= 2,
            120,
            lambda: f"the victim's first runs\n{victim.events()[-4000:]}",
        )
        survivor = start_worker(settings, "survivor")
        wait_until(
            lambda: "prebuilt network" in survivor.log(), 180, lambda: f"ready\n{survivor.log()}"
        )
        _, runs, _ = campaign_rows(settings, campaign_id)
        unstarted = [r.id for r in runs if r.status == "queued"]
        assert len(unstarted) >= 10, "the victim finished its batch before the survivor started"
        assert "received" not in survivor.events()  # the one message is the victim's
        os.killpg(victim.process.pid, signal.SIGKILL)  # the host dies: main and pool process
        killed = time.monotonic()
        sent_before = len(caplog.records)

        def finished() -> bool:
            return campaign_rows(settings, campaign_id)[0].finished_at is not None

        wait_until(finished, 3 * VISIBILITY, lambda: f"the campaign\n{survivor.events()}")
        took = time.monotonic() - killed
    campaign, runs, metrics = campaign_rows(settings, campaign_id)
    resends = [r.args for r in caplog.records[sent_before:] if "enqueued" in r.getMessage()]
    n_messages = sum(int(m) for _, m, _ in resends)
    n_resent = sum(int(n) for n, _, _ in resends)
    discarded = survivor.log().count("not claimable")
    log.warning(
        "dead host: %d unstarted runs at the kill, campaign finished %.1f s after it (lease "
        "%.0f s, visibility timeout %d s); re-sent %d runs in %d messages; %d duplicate "
        "deliveries discarded by the claim",
        len(unstarted), took, LEASE, VISIBILITY, n_resent, n_messages, discarded,
    )  # fmt: skip
    assert_complete_once(settings, campaign_id, runs, metrics, T_END)  # nothing ran twice
    assert campaign.n_succeeded == N_RUNS and campaign.status == "finished"
    assert took < LEASE + 12, f"finished {took:.1f} s after the kill (lease {LEASE} s)"
    assert n_messages < n_resent / 4, f"{n_resent} runs re-sent in {n_messages} messages"
