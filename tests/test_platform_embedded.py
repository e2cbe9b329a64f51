"""The embedded default: ``raptorgrid run SPEC`` with no configuration at all, in an empty
folder, runs real Celery workers on SQLite + the serverless broker + local Zarr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import xarray as xr

pytestmark = pytest.mark.slow


def test_raptorgrid_run_embedded(tmp_path: Path, small_spec: dict, jax_cache_dir: Path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(small_spec))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAPTORGRID_")}
    env["RAPTORGRID_JAX_CACHE_DIR"] = str(jax_cache_dir)  # only to share compilations
    cli = Path(sys.executable).with_name("raptorgrid")
    result = subprocess.run(
        [str(cli), "run", "spec.json", "--workers", "2"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=170,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "median runtime s" in output and "mean Newton" in output
    assert "rtol=0.001" in output and "rtol=1e-05" in output
    assert "finished: 4 succeeded, 0 failed" in output
    assert "ETA" in output and "succeeded 4" in output  # live progress: counts and an ETA

    data = tmp_path / "raptorgrid-data"
    assert (data / "raptorgrid.sqlite").is_file() and (data / "broker.sqlite").is_file()
    ds = xr.open_zarr(str(data / "zarr" / "campaign_1.zarr"), group="run_4")
    assert ds.sizes["time"] == 51
    logs = list((data / "logs").glob("*.log"))
    assert len(logs) == 2
    assert all("Warm shutdown" in log.read_text() or "ready" in log.read_text() for log in logs)
