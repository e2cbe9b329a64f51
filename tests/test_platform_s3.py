"""Results on an S3-compatible object store: a real S3 server process (moto's standalone server,
started on a free port by the suite), the all-or-nothing publication of a run, and a campaign
solved by a real Celery worker (Redis, PostgreSQL) that writes nothing locally."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import s3fs
import xarray as xr
from conftest import require_service, run_campaign_through_api
from reliability_stack import _wait_port, free_port

pytestmark = [pytest.mark.services]

AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "raptorgrid-test",
    "AWS_SECRET_ACCESS_KEY": "raptorgrid-test",
    "AWS_DEFAULT_REGION": "us-east-1",
}
BUCKET = "raptorgrid-results"


@pytest.fixture(scope="module")
def s3_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``s3://<bucket>/<prefix>`` on a moto server of this module; the AWS variables point every
    process started meanwhile (the workers) at it."""
    server = Path(sys.executable).parent / "moto_server"
    if not server.exists():
        require_service("S3 server", f"{server} is not installed (pip install 'moto[server]')")
    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with open(log, "wb") as sink:
        process = subprocess.Popen(
            [str(server), "-H", "127.0.0.1", "-p", str(port)], stdout=sink, stderr=sink
        )
    saved = {k: os.environ.get(k) for k in [*AWS_ENV, "AWS_ENDPOINT_URL"]}
    os.environ.update({**AWS_ENV, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"})
    try:
        try:
            _wait_port(port, 30)
        except AssertionError as exc:
            require_service("S3 server", f"{exc}: {log.read_text(errors='replace')[-500:]}")
        import fsspec

        # fsspec reuses a filesystem per argument set, not per endpoint variable: one made for
        # an earlier server of this process (the module's fixture is set up again when work
        # stealing splits the module) would keep its closed port
        s3fs.S3FileSystem.clear_instance_cache()
        fs, _ = fsspec.core.url_to_fs(f"s3://{BUCKET}")
        fs.mkdir(BUCKET)
        yield f"s3://{BUCKET}/campaigns"
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
        process.terminate()
        process.wait(timeout=10)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _dataset(value: float) -> xr.Dataset:
    t = np.linspace(0.0, 1.0, 5)
    return xr.Dataset(
        {"x": (("time", "state"), np.outer(t, [value, 2 * value]))},
        coords={"time": t, "state": np.array(["a", "b"], dtype=object)},
        attrs={"method": "test"},
    )


def _objects(root: str) -> list[str]:
    import fsspec

    fs, path = fsspec.core.url_to_fs(root)
    fs.invalidate_cache()
    return fs.find(path)


def test_a_run_is_published_whole_or_not_at_all(s3_root: str, tmp_path: Path) -> None:
    from raptorgrid import zarr_object
    from raptorgrid.zarr_store import (
        campaign_store,
        delete_campaign_store,
        open_run,
        run_group,
        write_dataset,
        write_run,
    )

    assert write_run(s3_root, 7, 1, _dataset(1.0)) == "campaign_7.zarr/run_1"
    write_run(tmp_path, 7, 1, _dataset(1.0))
    xr.testing.assert_identical(open_run(s3_root, 7, 1).load(), open_run(tmp_path, 7, 1).load())

    # a writer that dies after writing its arrays but before publishing leaves nothing visible
    store = campaign_store(s3_root, 7)
    orphan = zarr_object.attempt_url(store, run_group(2))
    write_dataset(orphan, _dataset(2.0))
    with pytest.raises(FileNotFoundError, match="run_2 is not stored"):
        open_run(s3_root, 7, 2)
    # the retry publishes its own attempt and removes the orphan
    write_run(s3_root, 7, 2, _dataset(3.0))
    assert float(open_run(s3_root, 7, 2).x[-1, 0]) == 3.0
    # (this module's other tests store their campaigns under the same root: only campaign 7's)
    attempts = {p.split("/")[4] for p in _objects(store) if "/run_2/attempt_" in p}
    assert len(attempts) == 1 and Path(orphan).name not in attempts

    # rewriting a published run replaces it (an attempt after a lost lease)
    write_run(s3_root, 7, 1, _dataset(5.0))
    assert float(open_run(s3_root, 7, 1).x[-1, 0]) == 5.0
    assert len({p.split("/")[4] for p in _objects(store) if "/run_1/attempt_" in p}) == 1

    delete_campaign_store(s3_root, 7)
    assert not [p for p in _objects(s3_root) if "/campaign_7.zarr" in p]
    with pytest.raises(FileNotFoundError):
        open_run(s3_root, 7, 1)


def test_settings_accept_s3_and_name_what_is_wrong(make_settings) -> None:
    assert make_settings(zarr_root="s3://bucket/pre/").zarr_root == "s3://bucket/pre"
    with pytest.raises(ValueError, match="zarr_root: scheme 'gs' is not supported"):
        make_settings(zarr_root="gs://bucket")
    with pytest.raises(ValueError, match="names no bucket"):
        make_settings(zarr_root="s3://")


@pytest.mark.slow
def test_campaign_results_on_the_object_store(
    s3_root, make_settings, postgres_url, redis_url, redis_queue, small_spec, start_worker,
) -> None:  # fmt: skip
    """A real worker writes every run to S3 and none locally; the API reads them back."""
    from fastapi.testclient import TestClient
    from raptorgrid import migrate
    from raptorgrid.api import create_app
    from raptorgrid.zarr_store import open_run

    settings = make_settings(
        database_url=postgres_url,
        broker_url=redis_url,
        queue=redis_queue,
        zarr_root=f"{s3_root}/{redis_queue}",
        prebuild_networks=["wscc9"],
    )
    migrate.upgrade(settings)
    worker = start_worker(settings, "s3")
    with TestClient(create_app(settings)) as client:
        campaign_id = run_campaign_through_api(client, small_spec, [worker], 180)["id"]
        assert client.get(f"/campaigns/{campaign_id}").json()["counts"]["succeeded"] == 4
        runs = client.get(f"/campaigns/{campaign_id}/runs").json()["data"]
        for run in runs:
            ds = open_run(settings.zarr_root, campaign_id, run["id"])
            assert ds.sizes["time"] == 51 and np.isfinite(ds.x.values).all()
            shown = client.get(f"/runs/{run['id']}/trajectory", params={"vars": "omega[gen2]"})
            assert shown.status_code == 200, shown.text
            np.testing.assert_allclose(
                shown.json()["series"]["omega[gen2]"], ds.x.sel(state="omega[gen2]").values
            )
    assert not (settings.data_dir / "zarr").exists()
