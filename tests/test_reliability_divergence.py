"""Divergence and NaN end as failed runs with their reason on a real worker process
(PostgreSQL + Redis), each after one attempt, and the same process then serves a good run.

The worker imports ``tests/faulty_networks.py`` (``celery worker --include``), which registers
two test-only networks: one whose state blows up, one whose model turns NaN."""

from __future__ import annotations

import os
import subprocess
import warnings
from pathlib import Path

import faulty_networks  # noqa: F401  (registers the networks in this process too)
import pytest
from conftest import WorkerProcess
from fastapi.testclient import TestClient
from raptorgrid import migrate
from raptorgrid.api import create_app
from raptorgrid.auth import create_token
from raptorgrid.embedded import worker_command
from raptorgrid.runtime import die_with_parent, single_thread_env
from reliability_stack import campaign_rows, pid_of

pytestmark = [pytest.mark.services, pytest.mark.slow]
TESTS = Path(__file__).resolve().parent


class IncludingWorker(WorkerProcess):
    """A real worker that also imports ``faulty_networks``."""

    def __init__(self, settings, log_path: Path) -> None:  # noqa: ANN001
        env = single_thread_env({**os.environ, **settings.as_env()})
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), env.get("PYTHONPATH")]))
        self.log_path = log_path
        command = worker_command(settings, "divergence") + ["--include", "faulty_networks"]
        with open(log_path, "wb") as sink, warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="os.fork", category=RuntimeWarning)
            self.process = subprocess.Popen(
                command,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )


def spec(network: str, methods: list[dict]) -> dict:
    return {"name": network, "network": network, "t_end": 2.0, "n_eval": 21, "methods": methods}


def test_divergence_and_nan_are_results_then_the_worker_serves(
    make_settings, postgres_url, redis_url, redis_queue, wait_until, tmp_path
) -> None:
    settings = make_settings(
        database_url=postgres_url, broker_url=redis_url, queue=redis_queue, prebuild_networks=[]
    )
    migrate.upgrade(settings)
    worker = IncludingWorker(settings, tmp_path / "worker.log")
    try:
        with TestClient(create_app(settings)) as client:
            with client.app.state.db.write() as session:
                token = create_token(session=session, owner="numerics")[1]
            client.headers["Authorization"] = f"Bearer {token}"
            methods = [{"method": "radau"}, {"method": "rk45"}]
            ids = [
                client.post("/campaigns", json=spec(net, methods)).json()["id"]
                for net in ("blowup", "nan_source")
            ]
            good = client.post(
                "/campaigns",
                json={
                    "name": "good",
                    "network": "wscc9",
                    "t_end": 0.5,
                    "n_eval": 11,
                    "methods": [{"method": "radau"}],
                },
            ).json()["id"]
            for campaign_id in [*ids, good]:

                def done(cid: int = campaign_id) -> bool:
                    assert worker.process.poll() is None, worker.log()[-3000:]
                    return client.get(f"/campaigns/{cid}").json()["finished_at"] is not None

                wait_until(
                    done,
                    180,
                    lambda cid=campaign_id: f"campaign {cid}\n{worker.stacks()[-6000:]}",
                    poll=0.5,
                )
            reasons = {}
            for campaign_id, network in zip(ids, ("blowup", "nan_source"), strict=True):
                for run in client.get(f"/campaigns/{campaign_id}/runs").json()["data"]:
                    assert run["status"] == "failed" and run["attempts"] == 1, run
                    assert run["metrics"] is not None and run["advice"], str(run)[:1500]
                    reasons[(network, run["method"])] = run["reason"]
            assert reasons == {
                ("blowup", "radau"): "diverged",
                ("blowup", "rk45"): "diverged",
                ("nan_source", "radau"): "non_finite",
                ("nan_source", "rk45"): "non_finite",
            }
            assert client.get(f"/campaigns/{good}").json()["counts"]["succeeded"] == 1
        pids = {pid_of(r.worker) for cid in [*ids, good] for r in campaign_rows(settings, cid)[1]}
        assert len(pids) == 1  # one pool process served the failures and then the good run
    finally:
        worker.stop()
