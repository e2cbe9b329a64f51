"""A full results disk (issue 44, item 3): a write refused for lack of space is retried, never
the run's result; ``/health`` reports the free space against its thresholds; a submission that
cannot prepare its store changes nothing. The results folder is a small tmpfs mounted by the
test (skipped, naming why, where mounting is impossible), filled with a file."""

from __future__ import annotations

import errno
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from raptorgrid import migrate
from raptorgrid.api import create_app
from raptorgrid.auth import create_token
from reliability_stack import campaign_rows, reconciler
from test_reliability_workers import submit

MIB = 1 << 20


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs, unmounted afterwards."""
    mount = tmp_path / "results"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs for the results folder: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path, leave: int = 0) -> Path:
    """Write a file until ``leave`` bytes (about) are free; returns it."""
    import shutil

    filler = disk / "filler"
    chunk = b"\0" * (256 << 10)
    with open(filler, "ab", buffering=0) as out:
        try:
            while shutil.disk_usage(disk).free - len(chunk) >= leave:
                out.write(chunk)
            if leave == 0:
                while True:
                    out.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler


def test_health_and_submission_on_a_full_disk(make_settings, small_disk, small_spec) -> None:
    settings = make_settings(
        zarr_root=small_disk, store_degraded_free_bytes=8 * MIB, store_failing_free_bytes=MIB
    )
    migrate.upgrade(settings)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        with client.app.state.db.write() as session:
            client.headers["Authorization"] = (
                f"Bearer {create_token(session=session, owner='t')[1]}"
            )
        healthy = client.get("/health")
        assert healthy.status_code == 200 and healthy.json()["store"] == "ok", healthy.text
        filler = fill(small_disk, leave=4 * MIB)
        degraded = client.get("/health")
        assert degraded.status_code == 200, degraded.text
        assert degraded.json()["store"] == "degraded" and degraded.json()["status"] == "degraded"
        assert MIB < degraded.json()["store_free_bytes"] < 8 * MIB
        fill(small_disk)
        full = client.get("/health")
        assert full.status_code == 503, full.text
        assert full.json()["store"] == "failing" and full.json()["store_free_bytes"] < MIB
        refused = client.post("/campaigns", json=small_spec)
        assert refused.status_code == 507, refused.text
        assert "results store is full; nothing was changed" in refused.json()["detail"]
        assert client.get("/campaigns").json()["data"] == []  # nothing was committed
        filler.unlink()
        created = client.post("/campaigns", json=small_spec)
        assert created.status_code == 201, created.text


@pytest.mark.services
@pytest.mark.slow
def test_full_disk_during_a_campaign_fails_no_run(
    make_settings, postgres_url, redis_url, redis_queue, small_disk, small_spec, start_worker,
    wait_until,
) -> None:  # fmt: skip
    """The disk fills after the submission: no run fails, the runs wait (queued or retrying,
    their message naming the full store, their attempt not counted); freed, the campaign
    completes with every run on its first counted attempt."""
    settings = make_settings(
        database_url=postgres_url,
        broker_url=redis_url,
        queue=redis_queue,
        zarr_root=small_disk,
        prebuild_networks=["wscc9"],
        lease_seconds=6.0,
        heartbeat_seconds=0.5,
        requeue_grace_seconds=2.0,
        store_retry_seconds=1.0,
    )
    migrate.upgrade(settings)
    worker = start_worker(settings, "fulldisk")
    wait_until(lambda: "prebuilt network" in worker.log(), 180, lambda: worker.log())
    campaign_id = submit(settings, small_spec)
    filler = fill(small_disk)
    with reconciler(settings):
        wait_until(
            lambda: "results store full" in worker.log(), 60, lambda: worker.events()[-4000:]
        )
        time.sleep(6.0)  # several retries and hand-backs
        campaign, runs, _ = campaign_rows(settings, campaign_id)
        statuses = [(r.id, r.status, r.reason, r.attempts, r.message[:80]) for r in runs]
        assert campaign.n_failed == 0 and campaign.finished_at is None, statuses
        assert all(r.status in ("queued", "running") for r in runs), statuses
        waiting = [r for r in runs if "waiting for space in the results store" in r.message]
        assert waiting, statuses
        handed_back = worker.log().count("runs handed back to the queue")
        filler.unlink()
        wait_until(
            lambda: campaign_rows(settings, campaign_id)[0].finished_at is not None,
            120,
            lambda: worker.events()[-4000:],
        )
    campaign, runs, metrics = campaign_rows(settings, campaign_id)
    assert [r.status for r in runs] == ["succeeded"] * len(runs), statuses
    assert [r.attempts for r in runs] == [1] * len(runs)
    assert sorted(metrics) == [r.id for r in runs]
    print(f"full disk: {len(runs)} runs, {handed_back} hand-backs, 0 failed")
