"""A library case runs a 1 s disturbance through the embedded platform (``raptorgrid run``:
SQLite, local Zarr, a real Celery worker) with Radau, and agrees with the tight Radau
reference run of the same campaign (the model-library done criterion, checked on ieee14;
``benchmarks/model_library.py`` runs every case)."""

from pathlib import Path

import pytest

from benchmarks.model_library import THRESHOLDS, run_case


@pytest.mark.slow
def test_ieee14_fault_through_the_platform_matches_the_reference(
    tmp_path: Path, jax_cache_dir: Path
) -> None:
    row = run_case("ieee14", "radau", tmp_path, jax_cache_dir)
    assert row["status"] == "succeeded", row
    assert row["reference_status"] == "succeeded", row
    assert row["disturbance"].startswith("bus_fault:"), row
    # scored against the reference: every metric present and inside the stated thresholds
    assert row["state_error"] is not None, row
    assert 0.0 < row["state_error"] <= THRESHOLDS["state_error"], row
    assert row["voltage_mae"] <= THRESHOLDS["voltage_mae"], row
    assert row["kcl_max"] <= THRESHOLDS["kcl_max"], row
    assert row["qualified"] is True
    assert row["radau_steps"] > 10 and row["radau_runtime_s"] > 0.0
