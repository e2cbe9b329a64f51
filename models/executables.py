"""Compile once, everywhere: compiled executables serialized on disk, keyed by what they compute.

A process that needs the executable of a function (RAPTOR's attempt, a batched f/g, the sparse
Jacobian of a network) for a given *structure* looks it up here first. The key hashes

* the system's equations: the jaxpr of f, g and the outputs at its equilibrium (structure and
  constants, not the parameter values, which are traced arguments),
* the role of the executable and its static configuration (shapes, iteration caps, backend),
* the project's numerical sources (``models``, ``solvers``) and the JAX/jaxlib versions,

so an edit of either the model or the method compiles anew and never loads a stale executable.
Found: ``jax.experimental.serialize_executable`` loads it (0.2 s for RAPTOR's attempt on
IEEE 118 against ~5 s to compile it); not found: it is compiled and written atomically (temporary
file, then rename), so concurrent writers never leave a torn file. The directory is
``RAPTORGRID_JAX_CACHE_DIR`` (the platform's ``Settings.jax_cache_dir``; default
``~/.cache/raptorgrid/jax``); ``RAPTORGRID_JAX_CACHE_DIR=off`` disables the store. JAX's own
persistent compilation cache lives beside it (``xla/``) for everything else.

Seconds spent compiling and loading are returned apart, so a run reports them in their own
``Stats`` fields.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager, contextmanager
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import jax
import numpy as np

log = logging.getLogger(__name__)

ENV = "RAPTORGRID_JAX_CACHE_DIR"
DEFAULT_DIR = Path("~/.cache/raptorgrid/jax")
_LOCK = threading.Lock()
_enabled_dir: Path | None = None
"""The directory ``enable_persistent_cache`` last pointed JAX at: the store's directory when
``RAPTORGRID_JAX_CACHE_DIR`` is unset later (the test suite clears ``RAPTORGRID_*`` variables
around each test; its own processes keep the store beside their XLA cache)."""


def cache_dir() -> Path | None:
    """The store's directory (created on demand), or None when disabled:
    ``RAPTORGRID_JAX_CACHE_DIR``, else the directory this process enabled, else the default."""
    value = os.environ.get(ENV, "")
    if value.lower() == "off":
        return None
    if value:
        return Path(value).expanduser()
    return _enabled_dir if _enabled_dir is not None else DEFAULT_DIR.expanduser()


def enable_persistent_cache(directory: Path | None = None) -> None:
    """Point JAX's persistent compilation cache at ``directory/xla`` (every compile, however
    short: its default 1 s threshold would cache nothing here)."""
    global _enabled_dir
    directory = directory if directory is not None else cache_dir()
    if directory is None:
        return
    xla = directory / "xla"
    xla.mkdir(parents=True, exist_ok=True)
    _enabled_dir = Path(directory).expanduser()
    jax.config.update("jax_compilation_cache_dir", str(xla))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


@cache
def source_fingerprint() -> str:
    """Hash of the numerical sources, the JAX versions and ``XLA_FLAGS`` (part of every key:
    an executable compiled with other code-generation flags, e.g. the test suite's, is never
    loaded in their place; JAX's own cache keys hash the flags too)."""
    import jaxlib

    root = Path(__file__).resolve().parents[1]
    versions = f"{jax.__version__} {jaxlib.__version__} {os.environ.get('XLA_FLAGS', '')}"
    digest = hashlib.sha256(versions.encode())
    for package in ("models", "solvers"):
        for path in sorted((root / package).rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def system_fingerprint(system) -> str:
    """Hash of a system's equations: the jaxpr of (f, g, outputs) at its equilibrium."""
    cached = getattr(system, "_fingerprint", None)
    if cached is not None:
        return cached
    import jax.numpy as jnp

    params = {k: jnp.asarray(v, jnp.float64) for k, v in system.params.items()}
    outputs = system.outputs or (lambda x, z, p: jnp.zeros(0))

    def equations(x, z, p):
        return system.f(x, z, p), system.g(x, z, p), outputs(x, z, p)

    jaxpr = jax.make_jaxpr(equations)(
        jnp.asarray(system.x0, jnp.float64), jnp.asarray(system.z0, jnp.float64), params
    )
    shapes = sorted((k, np.shape(v)) for k, v in system.params.items())
    text = f"{system.n_x} {system.n_z} {shapes} {jaxpr}"
    value = hashlib.sha256(text.encode()).hexdigest()
    object.__setattr__(system, "_fingerprint", value)
    return value


def _path(key: tuple) -> Path | None:
    directory = cache_dir()
    if directory is None:
        return None
    digest = hashlib.sha256(repr((source_fingerprint(), key)).encode()).hexdigest()
    return directory / "executables" / f"{digest}.pkl"


@cache
def _prepare_runtime() -> None:
    """Register what compiled code may call before loading it: jaxlib binds its LAPACK
    kernels (SciPy's) lazily, when it first *lowers* a linear-algebra call, so a process that
    only loads executables would call an unbound kernel (a segmentation fault, seen on a RAPTOR
    attempt loaded before anything else was compiled); KLU's XLA handlers register on import."""
    import klujax  # noqa: F401
    import numpy as np
    from jaxlib import lapack

    lapack.prepare_lapack_call("getrf_ffi", np.dtype(np.float64))


class Mirror(Protocol):
    """A store shared by hosts that do not share a disk (an object store): entries of the local
    store are fetched from it before compiling and published to it after storing."""

    def fetch(self, name: str) -> bytes | None: ...

    def publish(self, name: str, data: bytes) -> None: ...


_MIRROR: Mirror | None = None


def set_mirror(mirror: Mirror | None) -> None:
    """Share the store through ``mirror`` (``workers.jaxsetup`` sets an object-store one when
    results go to an object store, so workers on other hosts load instead of compiling)."""
    global _MIRROR
    _MIRROR = mirror


def _fetch(path: Path) -> None:
    """Copy ``path``'s entry from the mirror into the local store when it is only there."""
    mirror = _MIRROR
    if mirror is None or path.exists():
        return
    try:
        data = mirror.fetch(path.name)
        if data is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as handle:
            handle.write(data)
            tmp = Path(handle.name)
        os.replace(tmp, path)
    except Exception:  # the mirror is an optimisation: a failed fetch costs a compile
        log.warning("could not fetch %s from the shared store", path.name, exc_info=True)


def _publish(path: Path) -> None:
    mirror = _MIRROR
    if mirror is None or not path.exists():
        return
    try:
        mirror.publish(path.name, path.read_bytes())
    except Exception:
        log.warning("could not publish %s to the shared store", path.name, exc_info=True)


def load_or_compile(
    system, key: tuple, build: Callable[[], Callable], example_args: tuple
) -> tuple[Any, float, float]:
    """The executable of ``build()`` for ``system`` under ``key`` (its role and static
    configuration): loaded from the store, else compiled (and stored). Returns (executable,
    compile seconds, load seconds)."""
    path = _path((system_fingerprint(system), key))
    if path is None:
        start = time.perf_counter()
        executable = _compile(_lower(build, example_args))[0]
        return executable, time.perf_counter() - start, 0.0
    _fetch(path)
    loaded = _load(path)
    if loaded is not None:
        return loaded[0], 0.0, loaded[1]
    # one compile per structure at a time: concurrent first requests (workers sharing the
    # directory, or the cluster's lock) wait for the first compile, then load what it stored
    path.parent.mkdir(parents=True, exist_ok=True)
    with _compile_lock(path):
        _fetch(path)  # another host may have compiled it while this one waited
        loaded = _load(path)
        if loaded is not None:
            return loaded[0], 0.0, loaded[1]
        start = time.perf_counter()
        lowered = _lower(build, example_args)
        executable, hits, own_key = _compile_for_store(lowered, path.stem)
        if hits and own_key:  # this entry was compiled before and lost from the store
            executable, hits, _ = _compile_for_store(lowered, os.urandom(8).hex())
        if not hits:
            _store(path, executable)
            _publish(path)
    return executable, time.perf_counter() - start, 0.0


_IN_PROCESS: weakref.WeakKeyDictionary[Any, dict[tuple, Any]] = weakref.WeakKeyDictionary()
_IN_PROCESS_LOCKS: weakref.WeakKeyDictionary[Any, dict[tuple, threading.Lock]] = (
    weakref.WeakKeyDictionary()
)


def compiled_once(
    system, key: tuple, build: Callable[[], Callable], example_args: Callable[[], tuple]
) -> tuple[Any, float, float]:
    """``load_or_compile`` behind this process's cache of ``system``'s executables (kept while
    the system lives): (executable, compile seconds, load seconds), both 0 when this process
    already has it. ``example_args()`` is called only when it does not. Concurrent first calls
    for the same system and key wait for one compile; other keys proceed."""
    with _LOCK:
        executables = _IN_PROCESS.setdefault(system, {})
        lock = _IN_PROCESS_LOCKS.setdefault(system, {}).setdefault(key, threading.Lock())
    with lock:
        executable = executables.get(key)
        if executable is not None:
            return executable, 0.0, 0.0
        executable, compile_s, load_s = load_or_compile(system, key, build, example_args())
        executables[key] = executable
        return executable, compile_s, load_s


def _entry_options(tag: str) -> dict[str, int]:
    """Compile options that make JAX's persistent-cache key of a stored program its own.

    JAX's cache keys the lowered program (and the compile options), the store keys the
    numerical sources: after an edit of ``models``/``solvers`` that leaves a program unchanged,
    JAX's cache would hand back the program compiled under the old sources, and such a copy
    cannot be stored (serializing a deserialized executable drops its kernels: "Function ...
    not found" when the copy runs; docs/measurements.md), so every process would trace and lower it
    again. A debug option that only bounds what a buffer-assignment dump prints, set to a value
    drawn from the store entry's name (which hashes the sources and the key), gives each entry
    its own JAX key: the first compile under new sources is a real one, and is stored."""
    return {"xla_debug_buffer_assignment_show_max": int(tag[:12], 16)}


def _load(path: Path) -> tuple[Any, float] | None:
    """(executable, seconds) from ``path``, or None when absent or unusable."""
    from jax.experimental import serialize_executable

    if not path.exists():
        return None
    start = time.perf_counter()
    try:
        _prepare_runtime()
        with path.open("rb") as handle:
            payload, in_tree, out_tree = pickle.load(handle)
        executable = serialize_executable.deserialize_and_load(payload, in_tree, out_tree)
    except Exception:  # a stale or unreadable entry: compile anew and replace it
        log.warning("unusable executable %s: compiling anew", path, exc_info=True)
        return None
    return executable, time.perf_counter() - start


def _lower(build: Callable[[], Callable], example_args: tuple):
    """``build()`` traced and lowered for ``example_args``. The function is wrapped anew, so
    JAX's in-memory trace and compilation caches (keyed by the function) cannot hand back an
    executable compiled earlier in this process, perhaps from the persistent cache, without
    it being counted by ``_compile``."""
    fn = build()

    def fresh(*args):
        return fn(*args)

    return jax.jit(fresh).lower(*example_args)


def _compile_for_store(lowered, tag: str) -> tuple[Any, list, bool]:
    """``_compile`` with ``_entry_options(tag)``: (executable, persistent-cache hits, whether
    the options were used). An XLA that does not know the option (a later jaxlib may drop a
    debug option) compiles without it, as JAX would: the store then keeps only programs JAX's
    cache has not seen, as before the option, instead of failing every compile (and the caller
    does not compile again: without the option a second compile of the same program would be
    JAX's in-memory copy of the cached one, which must not be stored either)."""
    options = _entry_options(tag)
    try:
        return (*_compile(lowered, options), True)
    except Exception as error:
        if not any(name in str(error) for name in options):
            raise
        log.warning("compile option %s unknown to this XLA: compiling without it", list(options))
        return (*_compile(lowered), False)


def _compile(lowered, options: dict | None = None) -> tuple[Any, list]:
    """(executable, persistent-cache hits) of compiling ``lowered``. Only the
    program's own compile counts: tracing may compile small programs that the persistent cache
    hands back (diffrax's solve does), which do not make this one a copy."""
    with _persistent_cache_hits() as hits:
        executable = lowered.compile(options)
    return executable, hits


CompileLock = Callable[[str], AbstractContextManager]
"""``factory(name)`` -> a context manager holding the cluster-wide lock called ``name``."""
_CLUSTER_LOCK: CompileLock | None = None


def set_compile_lock(factory: CompileLock | None) -> None:
    """Serialize first compiles through ``factory`` (e.g. a Redis lock, for workers on several
    hosts, where ``flock`` on a network volume is not dependable) instead of the file lock;
    None restores the file lock. A lock that cannot be taken (its server down, or held past
    its wait) falls back to the file lock: at worst a structure is compiled twice, never
    waited on forever."""
    global _CLUSTER_LOCK
    _CLUSTER_LOCK = factory


@contextmanager
def _compile_lock(path: Path):
    factory = _CLUSTER_LOCK
    if factory is not None:
        lock = factory(f"raptorgrid:compile:{path.stem}")
        try:
            acquired = lock.__enter__()
        except Exception:
            log.warning("cluster compile lock unavailable: using the file lock", exc_info=True)
        else:
            try:
                yield acquired
            finally:
                try:
                    lock.__exit__(None, None, None)
                except Exception:  # expired or server gone: the compile is done anyway
                    log.warning("could not release the cluster compile lock", exc_info=True)
            return
    with _file_lock(path.with_suffix(".lock")):
        yield None


@contextmanager
def _file_lock(path: Path):
    """An exclusive advisory lock (``flock``) on ``path`` for the block: processes sharing the
    directory (one host, or a shared POSIX volume) serialize on it."""
    import fcntl

    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def _persistent_cache_hits():
    """Collects the persistent-cache hits of the compilations inside the block."""
    from jax import monitoring

    hits: list[str] = []

    def listener(event: str, **_: object) -> None:
        if event == "/jax/compilation_cache/cache_hits":
            hits.append(event)

    monitoring.register_event_listener(listener)
    try:
        yield hits
    finally:
        monitoring.unregister_event_listener(listener)


def _store(path: Path, executable) -> None:
    from jax.experimental import serialize_executable

    try:
        payload = serialize_executable.serialize(executable)
        path.parent.mkdir(parents=True, exist_ok=True)
        with _LOCK, tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as handle:
            pickle.dump(payload, handle)
            tmp = Path(handle.name)
        os.replace(tmp, path)
    except Exception:  # the store is an optimisation: a failed write costs a compile later
        log.warning("could not store executable %s", path, exc_info=True)


def load_or_compute(system, key: tuple, compute: Callable[[], dict]) -> dict[str, np.ndarray]:
    """Arrays that depend only on the system's structure (e.g. its Jacobian pattern), stored
    beside the executables (NumPy ``.npz``)."""
    return load_or_compute_arrays((system_fingerprint(system), key), compute)


def load_or_compute_arrays(key: tuple, compute: Callable[[], dict]) -> dict[str, np.ndarray]:
    """Arrays that depend only on ``key`` and the numerical sources (e.g. a network's power
    flow), stored in the store as NumPy ``.npz`` (written aside, then renamed)."""
    path = _path(key)
    if path is not None:
        path = path.with_suffix(".npz")
        _fetch(path)
        if path.exists():
            try:
                with np.load(path) as data:
                    return {k: data[k] for k in data.files}
            except Exception:
                log.warning("unusable arrays %s: computing anew", path, exc_info=True)
    arrays = compute()
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=path.parent, delete=False, suffix=".npz") as h:
                np.savez(h, **arrays)
                tmp = Path(h.name)
            os.replace(tmp, path)
            _publish(path)
        except Exception:
            log.warning("could not store arrays %s", path, exc_info=True)
    return arrays
