"""Zarr store: a run round-trips by name, writes are atomic and replace a partial attempt."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import xarray as xr
from raptorgrid import zarr_store as zs

from solvers.result import SolveResult, Stats
from solvers.status import FailureReason, RunStatus

STATES = ("delta[gen1]", "omega[gen1]", "eq_prime[gen1]")
ALGS = ("Vr[bus1]", "Vi[bus1]")
OUTPUTS = ("V[bus1]", "theta[bus1]", "kcl_max")


def fake_result(n_eval: int = 11, n_acc: int = 7, seed: int = 0) -> SolveResult:
    rng = np.random.default_rng(seed)
    return SolveResult(
        status=RunStatus.SUCCEEDED,
        message="integration finished",
        method="radau",
        options={"rtol": 1e-6},
        stats=Stats(accepted=n_acc),
        state_names=STATES,
        alg_names=ALGS,
        output_names=OUTPUTS,
        t=np.linspace(0.0, 1.0, n_acc),
        x=rng.random((n_acc, 3)),
        z=rng.random((n_acc, 2)),
        t_eval=np.linspace(0.0, 1.0, n_eval),
        x_eval=rng.random((n_eval, 3)),
        z_eval=rng.random((n_eval, 2)),
        y_eval=rng.random((n_eval, 3)),
    )


def test_round_trip_by_name(tmp_path: Path) -> None:
    result = fake_result()
    path = zs.write_run(tmp_path, 4, 17, zs.result_dataset(result, {"run_id": 17}))
    assert path == "campaign_4.zarr/run_17"
    ds = xr.open_zarr(str(tmp_path / "campaign_4.zarr"), group="run_17", consolidated=False)
    assert list(ds.state.values) == list(STATES)
    assert list(ds.output.values) == list(OUTPUTS)
    assert ds.sizes["time"] == 11 and ds.sizes["step"] == 7
    np.testing.assert_array_equal(ds.x.sel(state="omega[gen1]").values, result.x_eval[:, 1])
    np.testing.assert_array_equal(ds.y.sel(output="kcl_max").values, result.y_eval[:, 2])
    np.testing.assert_array_equal(ds.z_acc.sel(algebraic="Vi[bus1]").values, result.z[:, 1])
    np.testing.assert_array_equal(ds.t_acc.values, result.t)
    assert ds.attrs["run_id"] == 17 and ds.attrs["method"] == "radau"


def test_dataset_writer_round_trips_identically(tmp_path: Path) -> None:
    """The concurrent writer gives what xarray's own writer gives: same values, names, dims,
    NaN, attributes; also for a system without outputs and a run without accepted steps."""
    result = fake_result(n_acc=0)
    result.output_names, result.y_eval = (), np.zeros((11, 0))
    result.x_eval[3, 1] = np.nan
    ds = zs.result_dataset(result, {"run_id": 3, "scenario": "fault"})
    zs.write_dataset(tmp_path / "ours", ds)
    ds.to_zarr(str(tmp_path / "xarray"), zarr_format=3, consolidated=False)
    ours = xr.open_zarr(str(tmp_path / "ours"), consolidated=False).load()
    theirs = xr.open_zarr(str(tmp_path / "xarray"), consolidated=False).load()
    xr.testing.assert_identical(ours, ds)
    xr.testing.assert_identical(ours, theirs)
    assert np.isnan(ours.x.values[3, 1]) and ours.sizes["output"] == 0


def test_failed_result_keeps_reason(tmp_path: Path) -> None:
    result = fake_result()
    result.status, result.reason = RunStatus.FAILED, FailureReason.MAX_STEPS
    zs.write_run(tmp_path, 1, 1, zs.result_dataset(result))
    ds = zs.open_run(tmp_path, 1, 1)
    assert ds.attrs["status"] == "failed" and ds.attrs["reason"] == "max_steps"


def test_rewrite_replaces_a_partial_attempt(tmp_path: Path) -> None:
    store = zs.ensure_campaign_store(tmp_path, 2)
    partial = store / "run_5"
    (partial / "x").mkdir(parents=True)
    (partial / "x" / "junk").write_bytes(b"half written")
    result = fake_result(seed=1)
    zs.write_run(tmp_path, 2, 5, zs.result_dataset(result))
    assert not (partial / "x" / "junk").exists()
    np.testing.assert_array_equal(zs.open_run(tmp_path, 2, 5).x.values, result.x_eval)
    assert list((tmp_path / zs.STAGING).iterdir()) == []  # nothing staged is left behind


def test_consolidated_campaign_opens_without_warnings(tmp_path: Path) -> None:
    for run_id in (1, 2, 3):
        zs.write_run(tmp_path, 9, run_id, zs.result_dataset(fake_result(seed=run_id)))
    zs.consolidate_campaign(tmp_path, 9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = xr.open_zarr(str(zs.campaign_store(tmp_path, 9)), group="run_2")
    np.testing.assert_array_equal(ds.x.values, fake_result(seed=2).x_eval)


def test_consolidation_writes_what_zarr_writes_for_the_store(tmp_path: Path) -> None:
    """The campaign's metadata, consolidated from an in-memory copy of its documents, is the
    document zarr writes consolidating the store in place (runs in blocks and alone)."""
    import json
    import shutil

    import zarr

    runs = [(k, zs.run_arrays(fake_result(seed=k), attrs={"run_id": k})) for k in range(1, 7)]
    zs.write_block(tmp_path, 4, runs[:4])
    zs.write_block(tmp_path, 4, runs[4:])
    zs.write_run(tmp_path, 4, 9, zs.result_dataset(fake_result(seed=9)))
    store = zs.campaign_store(tmp_path, 4)
    theirs = tmp_path / "theirs.zarr"
    shutil.copytree(store, theirs)
    zs.consolidate_campaign(tmp_path, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # consolidation not in the spec; zip files not nodes
        zarr.consolidate_metadata(str(theirs))
    ours = json.loads((store / "zarr.json").read_text())
    assert len(ours["consolidated_metadata"]["metadata"]) > 7  # six pointers, a run's arrays
    assert ours == json.loads((theirs / "zarr.json").read_text())
    assert not list((tmp_path / zs.STAGING).iterdir())  # the new document renamed into place


def test_consolidation_leaves_out_a_vanished_document_and_never_raises(
    tmp_path: Path, monkeypatch, caplog
) -> None:  # fmt: skip
    """A run's document removed while the campaign is consolidated (a late attempt replacing
    its group) is left out, as zarr's store leaves out a missing key; a consolidation that
    fails is logged, never raised into the worker that finished the campaign."""
    import json

    import zarr

    runs = [(k, zs.run_arrays(fake_result(seed=k), attrs={"run_id": k})) for k in (1, 2, 3)]
    zs.write_block(tmp_path, 6, runs)
    read = Path.read_bytes

    def vanishing(path: Path) -> bytes:
        if path.parent.name == "run_2":
            raise FileNotFoundError(path)
        return read(path)

    monkeypatch.setattr(Path, "read_bytes", vanishing)
    zs.consolidate_campaign(tmp_path, 6)
    monkeypatch.setattr(Path, "read_bytes", read)
    root = json.loads((zs.campaign_store(tmp_path, 6) / "zarr.json").read_text())
    assert {"run_1", "run_3"} <= set(root["consolidated_metadata"]["metadata"])
    assert "run_2" not in root["consolidated_metadata"]["metadata"]

    def broken(store) -> None:  # noqa: ANN001
        raise RuntimeError("disk full")

    monkeypatch.setattr(zarr, "consolidate_metadata", broken)
    zs.consolidate_campaign(tmp_path, 6)  # logged, not raised
    assert "consolidating its Zarr metadata failed" in caplog.text


def test_a_block_is_made_durable_by_one_filesystem_sync(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """A block of runs is flushed by one syncfs of its filesystem before any pointer is
    published (no per-file fsyncs); where syncfs is unavailable every file is fsynced; both
    read back the same runs."""
    flushed: list[Path] = []
    monkeypatch.setattr(zs, "_fsync_tree", lambda root: flushed.append(root))
    runs = [(k, zs.run_arrays(fake_result(seed=k), attrs={"run_id": k})) for k in (1, 2, 3)]
    assert zs._sync_filesystem(tmp_path), "syncfs(2) is expected on Linux"
    zs.write_block(str(tmp_path / "a"), 1, runs, fsync=True)
    assert flushed == []
    monkeypatch.setattr(zs, "_sync_filesystem", lambda path: False)
    zs.write_block(str(tmp_path / "b"), 1, runs, fsync=True)
    assert len(flushed) == 1 + len(runs)  # the block, then each pointer
    for run_id, dataset in runs:
        for root in ("a", "b"):
            stored = zs.open_run(str(tmp_path / root), 1, run_id).load()
            np.testing.assert_array_equal(stored["x"].values, dataset["x"])


def test_arrays_above_the_chunk_limit_are_split_and_read_back_whole(
    tmp_path: Path, monkeypatch
) -> None:
    """One chunk per array up to ``CHUNK_BYTES``; larger arrays (a 2e6-step fixed-step run)
    are cut along their leading dimensions and read back identical."""
    assert zs.chunk_shape((401, 24), 8) == (401, 24)
    assert zs.chunk_shape((2, 2_000_000, 24), 8) == (1, zs.CHUNK_BYTES // (8 * 24), 24)
    assert zs.chunk_shape((3, 0, 5), 8) == (3, 1, 5)
    result = fake_result(n_acc=5000)
    ds = zs.result_dataset(result, {"run_id": 1})
    zs.write_dataset(tmp_path / "small-chunks", ds)
    import zarr

    limit = 8 * 3 * 1000  # as if CHUNK_BYTES were 24 kB: x_acc (5000 x 3) in 5 chunks
    assert zs.chunk_shape((5000, 3), 8, limit) == (1000, 3)
    monkeypatch.setattr(zs, "CHUNK_BYTES", limit)
    zs.write_dataset(tmp_path / "split", ds)
    assert zarr.open_array(str(tmp_path / "split" / "x_acc")).chunks == (1000, 3)
    back = xr.open_zarr(str(tmp_path / "split"), consolidated=False).load()
    xr.testing.assert_identical(back, ds)


def test_the_runs_of_a_block_share_one_open_file(tmp_path: Path) -> None:
    """A block is one zip file; every run read from it (lazily, as an export keeps them) shares
    one open file, not one per run."""
    import os

    runs = [(k, zs.run_arrays(fake_result(seed=k), attrs={"run_id": k})) for k in range(1, 9)]
    zs.write_block(str(tmp_path), 1, runs)
    (block,) = (tmp_path / "campaign_1.zarr" / zs.BLOCKS).glob("*.zip")
    assert block.is_file()

    def opened() -> int:
        return sum(os.path.realpath(f"/proc/self/fd/{fd}") == str(block.resolve())
                   for fd in os.listdir("/proc/self/fd"))  # fmt: skip

    read = [zs.open_run(str(tmp_path), 1, run_id) for run_id, _ in runs]
    assert opened() == 1
    for (run_id, arrays), ds in zip(runs, read, strict=True):
        np.testing.assert_array_equal(ds["x"].values, arrays["x"])
        assert ds.attrs["run_id"] == run_id
