"""More than one host: two Celery workers, each in its own network namespace (a simulated
host, ``netns_hosts``), reach Redis, PostgreSQL and an S3-compatible object store only over
virtual links with loopback-range addresses, share one campaign and put every result in the
object store, which this process then reads back. Each host has its own executable store
(no shared disk): compiled code reaches the other host through the object store."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import require_service, run_campaign_through_api
from netns_hosts import GATEWAY, NetnsUnavailable, network_host
from reliability_stack import _wait_port, free_port, postgres_server, redis_server

pytestmark = [pytest.mark.services, pytest.mark.slow]

AWS = {
    "AWS_ACCESS_KEY_ID": "raptorgrid-test",
    "AWS_SECRET_ACCESS_KEY": "raptorgrid-test",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@pytest.fixture
def hosts():
    with contextlib.ExitStack() as stack:
        try:
            two = [stack.enter_context(network_host(k)) for k in (1, 2)]
        except NetnsUnavailable as exc:
            require_service("network namespaces", str(exc))
        yield two


@pytest.fixture
def object_store(tmp_path: Path, monkeypatch):
    """moto's S3 server listening on the hosts' gateway address only; this process uses it."""
    server = Path(sys.executable).parent / "moto_server"
    if not server.exists():
        require_service("S3 server", f"{server} is not installed")
    port = free_port()
    with open(tmp_path / "moto.log", "wb") as sink:
        process = subprocess.Popen([str(server), "-H", GATEWAY, "-p", str(port)], stdout=sink,
                                   stderr=sink)  # fmt: skip
    try:
        _wait_port(port, 30, host=GATEWAY)
        env = {**AWS, "AWS_ENDPOINT_URL": f"http://{GATEWAY}:{port}"}
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        import s3fs

        s3fs.S3FileSystem.clear_instance_cache()  # an earlier test's endpoint
        s3fs.S3FileSystem().mkdir("multihost")
        yield env
        s3fs.S3FileSystem.clear_instance_cache()
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_workers_on_two_hosts_share_a_campaign_through_the_object_store(
    hosts, object_store, tmp_path, make_settings, small_spec, start_worker, wait_until
) -> None:
    import s3fs
    from fastapi.testclient import TestClient
    from raptorgrid import migrate
    from raptorgrid.api import create_app
    from raptorgrid.db import Database
    from raptorgrid.tables import Run, RunMetrics
    from raptorgrid.zarr_store import open_run
    from sqlalchemy import select

    with redis_server(tmp_path, host=GATEWAY) as redis, postgres_server(host=GATEWAY) as pg:
        settings = make_settings(
            database_url=pg.url,
            broker_url=redis.url,
            zarr_root="s3://multihost/campaigns",
            prebuild_networks=["wscc9"],
        )
        migrate.upgrade(settings)
        # a host sees the services at the gateway only, not this namespace's own 127.0.0.1
        probe = subprocess.run(
            [*hosts[0].prefix, sys.executable, "-c",
             "import socket; socket.create_connection(('127.0.0.1', 5432), timeout=2)"],
            capture_output=True, text=True,
        )  # fmt: skip
        assert probe.returncode != 0 and "refused" in probe.stderr.lower()
        workers = []
        for k, host in enumerate(hosts, start=1):  # one after the other: host2 finds host1's
            own = settings.model_copy(update={"jax_cache_dir": tmp_path / f"jax-host{k}"})
            worker = start_worker(own, f"host{k}", prefix=host.prefix, env=object_store)
            wait_until(lambda w=worker: " ready" in w.log(), 180, f"worker ready\n{worker.log()}")
            workers.append(worker)
        small_spec["initial_conditions"]["count"] = 4  # 8 runs
        with TestClient(create_app(settings)) as client:
            campaign_id = run_campaign_through_api(client, small_spec, workers, 240)["id"]
            assert client.get(f"/campaigns/{campaign_id}").json()["counts"]["succeeded"] == 8
            shown = client.get("/runs/1/trajectory", params={"vars": "omega[gen1]"})
            assert shown.status_code == 200, shown.text
        db = Database.from_settings(settings)
        with db.read() as session:
            runs = session.execute(
                select(Run.id, Run.worker, RunMetrics.compile_seconds).join(
                    RunMetrics, RunMetrics.run_id == Run.id
                )
            ).all()
        db.dispose()
        assert {worker.split("-")[0] for _, worker, _ in runs} == {"host1", "host2"}
        # a structure is compiled on one host only; the other loads it from the object store
        compiled_on = {worker.split("-")[0] for _, worker, seconds in runs if seconds > 0}
        assert len(compiled_on) <= 1, runs
        shared = [p for p in s3fs.S3FileSystem().find("multihost/campaigns/executables")]
        assert shared
        fetched = {p.name for p in (tmp_path / "jax-host2" / "executables").iterdir()}
        assert fetched & {Path(p).name for p in shared}
        for run_id, _, _ in runs:
            ds = open_run(settings.zarr_root, campaign_id, run_id)
            assert ds.sizes["time"] == 51 and np.isfinite(ds.x.values).all()
        assert not (settings.data_dir / "zarr").exists()
        assert os.environ["AWS_ENDPOINT_URL"].startswith(f"http://{GATEWAY}")
