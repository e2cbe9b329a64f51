"""Trajectories in Zarr: one store per campaign, one group per run, read by name.

Layout (paths are pure functions of the ids)::

    <zarr_root>/campaign_<campaign_id>.zarr/            a Zarr group
    <zarr_root>/campaign_<campaign_id>.zarr/run_<id>/   an xarray Dataset

so ``xarray.open_zarr(store, group="run_<id>")`` returns the run with its state, algebraic and
output names as coordinates. A run is written whole into a staging folder beside the stores and
renamed into place (replacing any earlier partial attempt); only then does the worker commit
success in SQL, so a committed run always has its complete group. Each run is its own set of
chunks, so concurrent workers never share a chunk (DESIGN §7). The campaign's metadata is
consolidated once, when the campaign finishes.

The root may also be an object-store URL (``s3://bucket/prefix``; ``zarr_object``), for
workers on several hosts: there a run's arrays go under ``run_<id>/attempt_<token>/`` and the
run becomes visible when ``run_<id>/zarr.json`` naming that attempt is written, in one PUT
(object stores have no rename). ``open_run`` and the other functions here take either kind of
root, so callers never branch.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
import zarr
import zarr.api.asynchronous
from zarr.core.sync import sync

from raptorgrid import zarr_object
from solvers.result import SolveResult

log = logging.getLogger(__name__)

STAGING = ".staging"
"""Folder under the Zarr root where runs are written before being renamed into place."""


ZarrRoot = Path | str
"""A local folder, or an object-store URL (``zarr_object.is_object_url``)."""


def campaign_store(zarr_root: ZarrRoot, campaign_id: int) -> Path | str:
    if zarr_object.is_object_url(zarr_root):
        return zarr_object.join(str(zarr_root), f"campaign_{campaign_id}.zarr")
    return Path(zarr_root) / f"campaign_{campaign_id}.zarr"


def run_group(run_id: int) -> str:
    return f"run_{run_id}"


def run_group_path(campaign_id: int, run_id: int) -> str:
    """The run's group relative to the Zarr root (stored on the run row)."""
    return f"campaign_{campaign_id}.zarr/{run_group(run_id)}"


def ensure_campaign_store(zarr_root: ZarrRoot, campaign_id: int) -> Path | str:
    """Create the campaign's root group once; safe when several workers race to do it (the
    group document is written aside and renamed into place; on an object store it is one PUT
    of identical content)."""
    store = campaign_store(zarr_root, campaign_id)
    if isinstance(store, str):
        zarr_object.ensure_group(store, {"campaign_id": campaign_id})
        return store
    if (store / "zarr.json").is_file():
        return store
    aside = Path(zarr_root) / STAGING / f"root-{campaign_id}-{uuid.uuid4().hex}.zarr"
    zarr.open_group(str(aside), mode="w", zarr_format=3, attributes={"campaign_id": campaign_id})
    store.mkdir(parents=True, exist_ok=True)
    os.replace(aside / "zarr.json", store / "zarr.json")
    shutil.rmtree(aside, ignore_errors=True)
    return store


def delete_campaign_store(zarr_root: ZarrRoot, campaign_id: int) -> None:
    """Remove the campaign's store (renamed aside first, so readers never see half of it; on
    an object store the objects are deleted, group documents first)."""
    store = campaign_store(zarr_root, campaign_id)
    if isinstance(store, str):
        zarr_object.delete_tree(store)
        return
    if not store.exists():
        return
    aside = Path(zarr_root) / STAGING / f"deleted-{store.name}-{uuid.uuid4().hex}"
    aside.parent.mkdir(parents=True, exist_ok=True)
    os.rename(store, aside)
    shutil.rmtree(aside, ignore_errors=True)


def clean_staging(zarr_root: ZarrRoot, older_than: float) -> int:
    """Remove staging entries (runs being written, retired or deleted stores) not modified for
    ``older_than`` seconds: a writer that old is dead. Returns how many were removed. Object
    stores have no staging folder (an unpublished attempt is removed by the run's next
    publication)."""
    if zarr_object.is_object_url(zarr_root):
        return 0
    staging = Path(zarr_root) / STAGING
    if not staging.is_dir():
        return 0
    cutoff, removed = time.time() - older_than, 0
    for entry in staging.iterdir():
        try:
            if entry.lstat().st_mtime >= cutoff:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
            removed += 1
        except FileNotFoundError:  # another reconciler got there first
            continue
    return removed


def check_store(zarr_root: ZarrRoot) -> None:
    """Raise when the results store cannot be used: the folder cannot be created or written,
    or the object store's bucket cannot be listed."""
    if zarr_object.is_object_url(zarr_root):
        zarr_object.check_reachable(str(zarr_root))
        return
    root = Path(zarr_root)
    root.mkdir(parents=True, exist_ok=True)
    if not os.access(root, os.W_OK):
        raise PermissionError(f"{root} is not writable")


def _names(values: tuple[str, ...]) -> np.ndarray:
    return np.array(list(values), dtype=object)


def result_dataset(result: SolveResult, attrs: dict[str, Any] | None = None) -> xr.Dataset:
    """The run as a Dataset: ``x``/``z``/``y`` on the evaluation grid (dim ``time``) and the
    accepted advances ``t_acc``/``x_acc``/``z_acc`` (dim ``step``)."""
    meta = {
        "method": result.method,
        "options": json.dumps(result.options, default=str),
        "status": str(result.status),
        "reason": str(result.reason) if result.reason is not None else "",
        "message": result.message,
        "events": json.dumps(result.events, default=str),
        **(attrs or {}),
    }
    n_t, n_steps = len(result.t_eval), len(result.t)
    n_x, n_z, n_y = len(result.state_names), len(result.alg_names), len(result.output_names)

    def rows(values: Any, n_rows: int, n_cols: int) -> np.ndarray:
        # explicit row counts: reshape(-1, 0) is ambiguous for systems without outputs
        return np.asarray(values, float).reshape(n_rows, n_cols)

    return xr.Dataset(
        {
            "x": (("time", "state"), rows(result.x_eval, n_t, n_x)),
            "z": (("time", "algebraic"), rows(result.z_eval, n_t, n_z)),
            "y": (("time", "output"), rows(result.y_eval, n_t, n_y)),
            "t_acc": (("step",), np.asarray(result.t, float)),
            "x_acc": (("step", "state"), rows(result.x, n_steps, n_x)),
            "z_acc": (("step", "algebraic"), rows(result.z, n_steps, n_z)),
        },
        coords={
            "time": np.asarray(result.t_eval, float),
            "state": _names(result.state_names),
            "algebraic": _names(result.alg_names),
            "output": _names(result.output_names),
        },
        attrs=meta,
    )


def write_dataset(path: Path | str, dataset: xr.Dataset) -> None:
    """Write ``dataset`` as a new Zarr 3 group at ``path`` that ``xarray.open_zarr`` reads back
    identical (dimension names, string coordinates, NaN fill), one chunk per array (a run is
    read whole), all arrays created and filled concurrently in one pass of zarr's event loop.

    ``Dataset.to_zarr`` creates and fills the arrays one after the other, each a round trip to
    that loop: 66-73 ms for a wscc9 run's ten arrays against 36-41 ms here (measured
    2026-12-03, ``benchmarks/throughput.py``)."""
    sync(_write_dataset(str(path), dataset))


async def _write_dataset(path: str, dataset: xr.Dataset) -> None:
    group = await zarr.api.asynchronous.open_group(
        store=path, mode="w", zarr_format=3, attributes=dict(dataset.attrs)
    )

    async def write(name: str, variable: xr.Variable) -> None:
        data = np.asarray(variable.values)
        if data.dtype.kind in "OUS":
            data, dtype, fill = data.astype(str), str, ""
        else:
            dtype, fill = data.dtype, (np.nan if data.dtype.kind == "f" else 0)
        array = await group.create_array(
            name,
            shape=data.shape,
            dtype=dtype,
            chunks=tuple(max(1, n) for n in data.shape),
            fill_value=fill,
            dimension_names=variable.dims,
            attributes=dict(variable.attrs),
        )
        if data.size:
            await array.setitem(Ellipsis, data)

    await asyncio.gather(*(write(str(name), var) for name, var in dataset.variables.items()))


def _fsync_tree(root: Path) -> None:
    """Flush every file and folder under ``root`` so the rename publishes durable data."""
    for folder, _, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_run(
    zarr_root: ZarrRoot,
    campaign_id: int,
    run_id: int,
    dataset: xr.Dataset,
    *,
    fsync: bool = True,
    pause: float = 0.0,
) -> str:
    """Write ``dataset`` as the run's group, atomically; returns its path under the root.
    ``fsync`` makes the published group survive a machine crash, not only a process crash.
    ``pause`` (fault injection for tests) sleeps between staging and publishing, so a test can
    kill the writer mid-write."""
    store = ensure_campaign_store(zarr_root, campaign_id)
    if isinstance(store, str):
        attempt = zarr_object.attempt_url(store, run_group(run_id))
        write_dataset(attempt, dataset)
        if pause:
            log.warning("run %d: pausing %.1f s before publishing (fault injection)", run_id, pause)
            time.sleep(pause)
        zarr_object.publish(store, run_group(run_id), attempt)
        return run_group_path(campaign_id, run_id)
    staging_root = Path(zarr_root) / STAGING
    staging_root.mkdir(parents=True, exist_ok=True)
    token = uuid.uuid4().hex
    staged = staging_root / f"c{campaign_id}-{run_group(run_id)}-{token}"
    write_dataset(staged, dataset)
    if fsync:
        _fsync_tree(staged)
    if pause:
        log.warning("run %d: pausing %.1f s inside the Zarr write (fault injection)", run_id, pause)
        time.sleep(pause)
    final = store / run_group(run_id)
    if final.exists():  # an earlier attempt's group: move it aside, then replace it
        retired = staging_root / f"retired-{final.name}-{token}"
        os.rename(final, retired)
        os.rename(staged, final)
        shutil.rmtree(retired)
    else:
        os.rename(staged, final)
    return run_group_path(campaign_id, run_id)


def open_run(zarr_root: ZarrRoot, campaign_id: int, run_id: int) -> xr.Dataset:
    """The stored run (lazy arrays) by ids; FileNotFoundError when it was never published."""
    store = campaign_store(zarr_root, campaign_id)
    if isinstance(store, str):
        group = zarr_object.published_group(store, run_group(run_id))
        return xr.open_zarr(store, group=group, consolidated=False)
    return xr.open_zarr(
        str(campaign_store(zarr_root, campaign_id)), group=run_group(run_id), consolidated=False
    )


def consolidate_campaign(zarr_root: ZarrRoot, campaign_id: int) -> None:
    """Consolidate the campaign's metadata once, when it has finished, so that opening any run
    reads one document (the Zarr 3 extension is not in the spec yet: its warning is expected).
    Not on an object store: there a run is found through its published document, which a
    consolidated copy would shadow."""
    store = campaign_store(zarr_root, campaign_id)
    if isinstance(store, str):
        return
    if not (store / "zarr.json").is_file():
        return
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Consolidated metadata", category=UserWarning)
        zarr.consolidate_metadata(str(store))
