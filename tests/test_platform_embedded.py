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
    """RAPTOR against Radau with a reference: the run ends with the method table, Table I, the
    ranking and the next commands, all within 80 columns, every number whole."""
    small_spec["methods"].append({"method": "raptor"})
    small_spec["reference"] = {"method": "radau", "options": {"rtol": 1e-10, "atol": 1e-12}}
    small_spec["thresholds"] = {"state_error": 1e-3, "voltage_mae": 1e-3, "kcl_max": 1e-6}
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
    assert "rtol=0.001" in output and "rtol=1e-05" in output
    assert "finished: 8 succeeded, 0 failed" in output
    assert "ETA" in output and "succeeded 8" in output  # live progress: counts and an ETA
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    assert "Table I: raptor" in output and "speedup" in output
    assert "contingency ranking" in output and "TSI" in output
    assert "next: raptorgrid report 1" in output and "/dashboard/?campaign=1" in output

    from raptorgrid.columns import CONFIGS, TABLE_ONE
    from raptorgrid.db import Database
    from raptorgrid.repository.stats import config_stats, table_one
    from raptorgrid.settings import Settings

    db = Database.from_settings(Settings(data_dir=tmp_path / "raptorgrid-data"))
    with db.read() as session:
        configs, _ = config_stats(session=session, campaign_id=1)
    db.dispose()
    runtime = next(c for c in CONFIGS if c.key == "median_runtime_s")
    for config in configs:  # runtime = solve time, printed whole
        assert config.median_runtime_s is not None
        assert f" {runtime.cell(config.as_dict())} " in output
    speedup = next(c for c in TABLE_ONE if c.key == "speedup")
    radau = next(r for r in table_one(configs)["rows"] if r["method"] == "radau")
    assert radau["speedup"] is not None and f" {speedup.cell(radau)}" in output

    data = tmp_path / "raptorgrid-data"
    assert (data / "raptorgrid.sqlite").is_file() and (data / "broker.sqlite").is_file()
    ds = xr.open_zarr(str(data / "zarr" / "campaign_1.zarr"), group="run_8")
    assert ds.sizes["time"] == 51
    logs = list((data / "logs").glob("*.log"))
    assert len(logs) == 2
    assert all("Warm shutdown" in log.read_text() or "ready" in log.read_text() for log in logs)
