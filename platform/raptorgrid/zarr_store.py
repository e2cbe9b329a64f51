"""Trajectories in Zarr: one store per campaign, one group per run, read by name.

Layout (paths are pure functions of the ids)::

    <zarr_root>/campaign_<campaign_id>.zarr/                    a Zarr group
    <zarr_root>/campaign_<campaign_id>.zarr/run_<id>/           an xarray Dataset, or a pointer
    <zarr_root>/campaign_<campaign_id>.zarr/blocks/<token>.zip  runs written together (a
                                                                 Zarr group in one zip file)

``open_run`` returns the run with its state, algebraic and output names as coordinates. A run
written alone is its own Dataset (``xarray.open_zarr(store, group="run_<id>")``). The runs a
worker finishes in one batch are written together (``write_block``: each array once, with a
``run`` dimension, the cost of a write shared by the block) and each ``run_<id>`` is then a
group of attributes only, naming its block and its index there. A run (or block) is written
whole into a staging folder beside the stores and renamed into place (replacing any earlier
partial attempt); only then does the worker commit success in SQL, so a committed run always
has its complete data. Each run or block is its own set of chunks, written by one worker, so
concurrent workers never share a chunk (DESIGN §7). The campaign's metadata is
consolidated once, when the campaign finishes.

The root may also be an object-store URL (``s3://bucket/prefix``; ``zarr_object``), for
workers on several hosts: there a run's arrays go under ``run_<id>/attempt_<token>/`` and the
run becomes visible when ``run_<id>/zarr.json`` naming that attempt is written, in one PUT
(object stores have no rename). ``open_run`` and the other functions here take either kind of
root, so callers never branch.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import json
import logging
import os
import shutil
import time
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
import zarr
import zarr.api.asynchronous
from zarr.codecs import BloscCodec
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync
from zarr.storage import MemoryStore, ZipStore

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


@dataclass
class RunArrays:
    """A run's (or a block's) arrays as the store holds them, without an xarray Dataset:
    ``variables`` maps each name to its dimension names and values; a variable whose only
    dimension is its own name is a coordinate (xarray's convention). Workers build these
    (``run_arrays``): an ``xarray.Dataset`` per run cost ~2.5 ms of its construction alone."""

    variables: dict[str, tuple[tuple[str, ...], np.ndarray]]
    attrs: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.variables[name][1]

    def to_dataset(self) -> xr.Dataset:
        coords = {n: v for n, v in self.variables.items() if v[0] == (n,)}
        data = {n: v for n, v in self.variables.items() if n not in coords}
        return xr.Dataset(data, coords=coords, attrs=dict(self.attrs))


def run_arrays(result: SolveResult, attrs: dict[str, Any] | None = None) -> RunArrays:
    """The run's stored arrays: ``x``/``z``/``y`` on the evaluation grid (dim ``time``), the
    accepted advances ``t_acc``/``x_acc``/``z_acc`` (dim ``step``), the names as coordinates,
    and the run's method, options, status and events as attributes."""
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

    return RunArrays(
        {
            "x": (("time", "state"), rows(result.x_eval, n_t, n_x)),
            "z": (("time", "algebraic"), rows(result.z_eval, n_t, n_z)),
            "y": (("time", "output"), rows(result.y_eval, n_t, n_y)),
            "t_acc": (("step",), np.asarray(result.t, float)),
            "x_acc": (("step", "state"), rows(result.x, n_steps, n_x)),
            "z_acc": (("step", "algebraic"), rows(result.z, n_steps, n_z)),
            "time": (("time",), np.asarray(result.t_eval, float)),
            "state": (("state",), _names(result.state_names)),
            "algebraic": (("algebraic",), _names(result.alg_names)),
            "output": (("output",), _names(result.output_names)),
        },
        meta,
    )


def result_dataset(result: SolveResult, attrs: dict[str, Any] | None = None) -> xr.Dataset:
    """The run as ``open_run`` reads it back (``run_arrays`` as a Dataset)."""
    return run_arrays(result, attrs).to_dataset()


NUMERIC_COMPRESSORS = (BloscCodec(cname="lz4", clevel=1, shuffle="shuffle"),)
"""Codec of the numeric arrays (trajectories): LZ4 over byte-shuffled float64, the fastest to
write and to read back (measured: docs/measurements.md, ``zarr_store`` codec)."""


COMPRESS_MIN_BYTES = 2**20
"""Smallest array compressed (bytes); smaller ones are stored raw. zarr runs each codec in a
worker thread, and for small arrays the hop costs more than the bytes it saves (measured:
docs/measurements.md). Large arrays (long runs, big blocks) still are."""


CHUNK_BYTES = 128 * 2**20
"""Largest chunk written (bytes). A run is read whole, so an array is one chunk up to this size;
beyond it (a fixed-step run's every step: emt_gfl at dt 1e-6 s keeps 2e6 steps, 384 MB per
array, and a block of two is past Blosc's 2 GiB buffer limit) it is split along its leading
dimensions."""


def chunk_shape(shape: tuple[int, ...], itemsize: int, limit: int | None = None) -> tuple:
    """One chunk for the whole array if it holds at most ``limit`` bytes (``CHUNK_BYTES``),
    else the leading dimensions cut so that a chunk does (at least one element along each)."""
    limit = CHUNK_BYTES if limit is None else limit
    chunks = [max(1, n) for n in shape]
    for axis in range(len(chunks)):
        inner = itemsize * int(np.prod(chunks[axis + 1 :], dtype=np.int64))
        if inner * chunks[axis] <= limit:
            break
        chunks[axis] = max(1, limit // inner)
    return tuple(chunks)


IN_MEMORY_BYTES = 64 * 2**20
"""Largest write (bytes of array data) that ``write_dataset`` encodes in memory before writing
its files to a local folder; larger ones go through zarr's local store, chunk by chunk, so that
memory holds one encoded copy of a chunk at a time, not of the whole run."""


def write_dataset(path: Path | str, dataset: xr.Dataset | RunArrays) -> None:
    """Write ``dataset`` as a new Zarr 3 group at ``path`` (replacing what is there) that
    ``xarray.open_zarr`` reads back identical (dimension names, string coordinates, NaN fill),
    one chunk per array (a run is read whole; ``chunk_shape`` splits arrays above
    ``CHUNK_BYTES``), all arrays created and filled concurrently in one pass of zarr's event
    loop. A path ending in ``.zip`` is written as one zip file (``zarr.storage.ZipStore``).

    To a local folder, up to ``IN_MEMORY_BYTES``, zarr encodes the group into a memory store
    and the files are then written here one after the other: zarr's local store hops to a
    thread for each of its ~35 reads and writes of a block's documents and chunks.
    ``Dataset.to_zarr`` creates and fills the arrays one after the other, each a round trip to
    zarr's loop (both measured: docs/measurements.md, ``write_dataset``)."""
    if isinstance(dataset, xr.Dataset):
        variables = {
            str(name): (tuple(str(d) for d in var.dims), np.asarray(var.values), dict(var.attrs))
            for name, var in dataset.variables.items()
        }
    else:
        variables = {name: (dims, values, {}) for name, (dims, values) in dataset.variables.items()}
    attrs = dict(dataset.attrs)
    size = sum(values.nbytes for _, values, _ in variables.values())
    if str(path).endswith(ZIP_SUFFIX):  # one file (a block): zarr's zip store, member by member
        store = ZipStore(path, mode="w")
        try:
            sync(_write_group(store, attrs, variables))
        finally:
            store.close()
        return
    if zarr_object.is_object_url(path) or size > IN_MEMORY_BYTES:
        sync(_write_group(str(path), attrs, variables))
        return
    encoded: dict[str, Any] = {}
    sync(_write_group(MemoryStore(store_dict=encoded), attrs, variables))
    _write_files(Path(path), encoded)


def _write_files(folder: Path, encoded: dict[str, Any]) -> None:
    """Write a memory store's documents and chunks as the files of a local Zarr store."""
    if folder.exists():
        shutil.rmtree(folder)
    made: set[Path] = set()
    for key, buffer in encoded.items():
        target = folder / key
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        target.write_bytes(buffer.to_bytes())


ZIP_SUFFIX = ".zip"
"""Name ending of a Zarr group stored as one zip file (a block of runs)."""


Variables = dict[str, tuple[tuple[str, ...], np.ndarray, dict[str, Any]]]
"""Name -> (dimension names, values, attributes) of the arrays ``_write_group`` writes."""


async def _write_group(store: Any, attrs: dict[str, Any], variables: Variables) -> None:
    group = await zarr.api.asynchronous.open_group(
        store=store, mode="w", zarr_format=3, attributes=attrs
    )

    async def write(name: str, dims: tuple[str, ...], data: np.ndarray, attributes: dict) -> None:
        if data.dtype.kind in "OUS":
            data, dtype, fill, compressors = data.astype(str), str, "", "auto"
        else:
            dtype, fill = data.dtype, (np.nan if data.dtype.kind == "f" else 0)
            compressors = NUMERIC_COMPRESSORS
        if data.nbytes < COMPRESS_MIN_BYTES:
            compressors = None
        array = await group.create_array(
            name,
            shape=data.shape,
            dtype=dtype,
            chunks=chunk_shape(data.shape, data.dtype.itemsize),
            fill_value=fill,
            compressors=compressors,
            dimension_names=dims,
            attributes=attributes,
        )
        if data.size:
            await array.setitem(Ellipsis, data)

    await asyncio.gather(*(write(name, *v) for name, v in variables.items()))


def _fsync_file(path: Path | str) -> None:
    """Flush one file or folder (its entries) to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(root: Path) -> None:
    """Flush every file and folder under ``root`` (or the file ``root`` and its folder) so the
    rename publishes durable data."""
    if root.is_file():
        _fsync_file(root)
        _fsync_file(root.parent)
        return
    for folder, _, files in os.walk(root):
        for name in files:
            _fsync_file(os.path.join(folder, name))
        _fsync_file(folder)


def _sync_filesystem(path: Path) -> bool:
    """Flush the whole filesystem holding ``path`` with one ``syncfs(2)`` call (Linux): every
    file and folder written there so far is durable when it returns, as if each had been
    fsynced. For a block of B runs this replaces 2 B + 2 fsyncs (block and pointers; measured:
    docs/measurements.md, ``syncfs``). False where syncfs is unavailable or fails (the caller
    fsyncs file by file)."""
    try:
        syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        return syncfs(fd) == 0
    finally:
        os.close(fd)


def write_run(
    zarr_root: ZarrRoot,
    campaign_id: int,
    run_id: int,
    dataset: xr.Dataset | RunArrays,
    *,
    fsync: bool = True,
    pause: float = 0.0,
) -> str:
    """Write ``dataset`` (``run_arrays``, or a Dataset) as the run's group, atomically;
    returns its path under the root.
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
    _publish(staged, store / run_group(run_id), staging_root, token)
    return run_group_path(campaign_id, run_id)


def _publish(staged: Path, final: Path, staging_root: Path, token: str) -> None:
    """Rename ``staged`` to ``final``, replacing an earlier attempt's group there."""
    if final.exists():  # an earlier attempt's group: move it aside, then replace it
        retired = staging_root / f"retired-{final.name}-{token}"
        os.rename(final, retired)
        os.rename(staged, final)
        shutil.rmtree(retired)
    else:
        os.rename(staged, final)


BLOCKS = "blocks"
"""Subgroup of a campaign store holding the blocks of batched runs."""
BLOCK_ATTR = "block"
"""Attribute of a run's pointer group naming its block (``blocks/<token>.zip``)."""


def _write_group_metadata(folder: Path, attributes: dict[str, Any]) -> None:
    """A Zarr 3 group with attributes and no arrays: the one ``zarr.json`` document the format
    defines for a group (``zarr.open_group`` writes the same document at ~1 ms more per run,
    which is what a block's per-run share of a write costs in all)."""
    folder.mkdir()
    document = {"zarr_format": 3, "node_type": "group", "attributes": attributes}
    (folder / "zarr.json").write_text(json.dumps(document, default=str))


def block_arrays(runs: list[RunArrays]) -> RunArrays:
    """Runs of one network and method configuration (``run_arrays`` with the same names and
    grid) stacked along ``run``: ``x``/``z``/``y`` as they are, the accepted advances padded
    with NaN to the longest run and ``n_steps`` saying how many are real. Built from the numpy
    arrays: xarray's own concat and pad cost ~35 ms per run here."""
    first = runs[0]
    coords = ("time", "state", "algebraic", "output")
    for run in runs[1:]:
        for dim in coords:
            if not np.array_equal(run[dim], first[dim]):
                raise ValueError(f"runs of one block differ in {dim}")
    steps = [len(run["t_acc"]) for run in runs]
    longest = max(steps)

    def stacked(name: str) -> np.ndarray:
        values = [run[name] for run in runs]
        if "step" not in first.variables[name][0]:
            return np.stack(values)
        out = np.full((len(values), longest, *values[0].shape[1:]), np.nan)
        for k, v in enumerate(values):
            out[k, : len(v)] = v
        return out

    variables = {
        name: (("run", *first.variables[name][0]), stacked(name))
        for name in ("x", "z", "y", "t_acc", "x_acc", "z_acc")
    }
    variables["n_steps"] = (("run",), np.asarray(steps, dtype=np.int64))
    variables.update({dim: first.variables[dim] for dim in coords})
    return RunArrays(variables)


def write_block(
    zarr_root: ZarrRoot, campaign_id: int, runs: list[tuple[int, RunArrays]], *,
    fsync: bool = True,
) -> None:  # fmt: skip
    """Write several finished runs at once (a batch's, ``workers.publish``): their arrays as one
    block, a Zarr group in one zip file (``blocks/<token>.zip``), then for each run a pointer
    group ``run_<id>`` (attributes only: the run's attributes, its block and its index) renamed
    into place, so ``open_run`` reads each run as if written alone. The block is written and
    (``fsync``) flushed before any pointer is published, so a published run is always
    complete. Object stores get one group per run (``write_run``): they have no rename to
    publish pointers with. Each run's path on its row stays ``run_group_path`` (its pointer).

    One file, not a folder of arrays: this disk takes ~0.2 ms per file or folder created, and a
    block as folders was ~40 of them (an array's chunk keys ``c/0/0/0`` are folders too;
    measured: docs/measurements.md, block files)."""
    if zarr_object.is_object_url(zarr_root) or len(runs) == 1:
        for run_id, dataset in runs:
            write_run(zarr_root, campaign_id, run_id, dataset, fsync=fsync)
        return
    store = ensure_campaign_store(zarr_root, campaign_id)
    staging_root = Path(zarr_root) / STAGING
    staging_root.mkdir(parents=True, exist_ok=True)
    token = uuid.uuid4().hex
    staged = staging_root / f"c{campaign_id}-block-{token}{ZIP_SUFFIX}"
    block = block_arrays([arrays for _, arrays in runs])
    block.attrs["run_ids"] = [run_id for run_id, _ in runs]
    write_dataset(staged, block)
    pointers = []
    for k, (run_id, dataset) in enumerate(runs):
        pointer = staging_root / f"c{campaign_id}-{run_group(run_id)}-{token}"
        attrs = {**dataset.attrs, BLOCK_ATTR: f"{BLOCKS}/{token}{ZIP_SUFFIX}", "index": k}
        _write_group_metadata(pointer, attrs)
        pointers.append((run_id, pointer))
    if fsync and not _sync_filesystem(staging_root):
        _fsync_tree(staged)
        for _, pointer in pointers:
            _fsync_tree(pointer)
    blocks = store / BLOCKS
    if not (blocks / "zarr.json").exists():  # a group of the hierarchy, made once (atomically)
        blocks.mkdir(exist_ok=True)
        _write_group_metadata(staging_root / f"blocks-{token}", {})
        os.replace(staging_root / f"blocks-{token}" / "zarr.json", blocks / "zarr.json")
        os.rmdir(staging_root / f"blocks-{token}")
    os.rename(staged, blocks / f"{token}{ZIP_SUFFIX}")
    for run_id, pointer in pointers:
        _publish(pointer, store / run_group(run_id), staging_root, token)


@functools.lru_cache(maxsize=64)
def _zip_block(path: Path) -> tuple[xr.Dataset, np.ndarray]:
    """The zip block at ``path`` (lazy arrays) and its runs' step counts, opened once and
    shared by its runs: a reader of a whole campaign (an export) opens every run, and a block
    opened per run held a file per run and cost ~8 ms each time (a block is never rewritten:
    its name is a new token)."""
    block = xr.open_zarr(ZipStore(path, mode="r"), consolidated=False)
    return block, np.asarray(block["n_steps"].values)


def open_run(zarr_root: ZarrRoot, campaign_id: int, run_id: int) -> xr.Dataset:
    """The stored run (lazy arrays) by ids, whether written alone or in a block (then its slice
    of the block, the padding of its accepted advances cut); FileNotFoundError when it was never
    published. A pointer is read as the one JSON document it is (``_write_group_metadata``)."""
    store = campaign_store(zarr_root, campaign_id)
    if isinstance(store, str):
        group = zarr_object.published_group(store, run_group(run_id))
        return xr.open_zarr(store, group=group, consolidated=False)
    document = json.loads((store / run_group(run_id) / "zarr.json").read_text())
    attrs = dict(document.get("attributes") or {})
    if BLOCK_ATTR not in attrs:  # written alone: a Dataset of its own
        return xr.open_zarr(str(store), group=run_group(run_id), consolidated=False)
    name, index = str(attrs.pop(BLOCK_ATTR)), int(attrs.pop("index"))
    if name.endswith(ZIP_SUFFIX):
        block, steps = _zip_block(store / name)
    else:  # a block written as a group of folders (stores written before the zip blocks)
        block = xr.open_zarr(str(store), group=name, consolidated=False)
        steps = np.asarray(block["n_steps"].values)
    one = block.isel(run=index).drop_vars("n_steps").isel(step=slice(0, int(steps[index])))
    return one.drop_attrs().assign_attrs(attrs)


def consolidate_campaign(zarr_root: ZarrRoot, campaign_id: int) -> None:
    """Consolidate the campaign's metadata once, when it has finished, so that opening any run
    reads one document (the Zarr 3 extension is not in the spec yet: its warning is expected).
    Not on an object store: there a run is found through its published document, which a
    consolidated copy would shadow.

    zarr consolidates a copy of the store's metadata documents held in memory (the blocks' zip
    files are not nodes: their runs' pointers are), and the new root document replaces the old
    in one rename (zarr's local store hops to a thread per document; measured:
    docs/measurements.md, consolidation)."""
    store = campaign_store(zarr_root, campaign_id)
    if isinstance(store, str):
        return
    if not (store / "zarr.json").is_file():
        return
    try:
        memory = _metadata_documents(store)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Consolidated metadata", category=UserWarning)
            zarr.consolidate_metadata(MemoryStore(store_dict=memory))
        staging_root = Path(zarr_root) / STAGING
        staging_root.mkdir(parents=True, exist_ok=True)
        staged = staging_root / f"c{campaign_id}-zarr.json-{uuid.uuid4().hex}"
        staged.write_bytes(memory["zarr.json"].to_bytes())
        os.replace(staged, store / "zarr.json")
    except Exception:  # a convenience for readers: never the failure of a finished campaign
        log.exception("campaign %d: consolidating its Zarr metadata failed", campaign_id)


def _metadata_documents(store: Path) -> dict[str, Any]:
    """Every ``zarr.json`` of a local store as zarr buffers keyed by store path; a document
    removed meanwhile (a late attempt replacing its run's group) is left out, as zarr's local
    store leaves out a missing key."""
    buffer = default_buffer_prototype().buffer
    documents: dict[str, Any] = {}
    for path in store.rglob("zarr.json"):
        try:
            documents[path.relative_to(store).as_posix()] = buffer.from_bytes(path.read_bytes())
        except FileNotFoundError:
            continue
    return documents
