"""JAX configuration of a worker process, done once after the pool process starts.

The executable store and the persistent compilation cache let a fresh worker reuse the
executables another worker compiled for the same network (``models.executables``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

log = logging.getLogger(__name__)


COMPILE_LOCK_SECONDS = 900
"""Expiry of a Redis compile lock (s): a worker that dies while compiling frees it after this;
the longest compile measured (IEEE 118 dq RAPTOR, cold) took 34 s."""


def configure_jax(
    cache_dir: Path, lock_url: str | None = None, shared_url: str | None = None
) -> None:
    """Point the executable store and JAX's persistent cache at the settings' directory, which
    workers on one data volume share (``models.executables``). With a Redis ``lock_url`` (the
    broker's), first compiles are serialized by a Redis lock per structure, which holds across
    hosts (``models.executables.set_compile_lock``). With an object-store ``shared_url`` (the
    results root when it is one), the store is mirrored to ``<shared_url>/executables/`` so
    that workers on hosts without a shared disk load what another host compiled."""
    import os

    from raptorgrid import zarr_object

    from models.executables import ENV, enable_persistent_cache, set_compile_lock, set_mirror

    cache_dir.mkdir(parents=True, exist_ok=True)
    os.environ[ENV] = str(cache_dir)
    enable_persistent_cache(cache_dir)
    if lock_url and lock_url.startswith(("redis://", "rediss://")):
        set_compile_lock(redis_compile_lock(lock_url))
        log.info("first compiles are serialized by a Redis lock at the broker")
    if zarr_object.is_object_url(shared_url):
        set_mirror(zarr_object.FileMirror(zarr_object.join(str(shared_url), "executables")))
        log.info("executables are shared through %s/executables", shared_url)
    log.info("JAX executable store and persistent compilation cache at %s", cache_dir)


def redis_compile_lock(url: str):
    """A ``models.executables.CompileLock`` factory of Redis locks (redis-py's ``Lock``:
    SET NX with an expiry and a token), waiting at most as long as a lock lives."""
    import redis

    client = redis.Redis.from_url(url, socket_timeout=10)

    def factory(name: str):
        return client.lock(
            name, timeout=COMPILE_LOCK_SECONDS, blocking_timeout=COMPILE_LOCK_SECONDS
        )

    return factory


PREBUILD_HORIZON = 1e-3
"""s: the scenario a method is prebuilt with (its compile, not its solve, is the point)."""


def prebuild(networks: Sequence[str], methods: Sequence[str] = ()) -> None:
    """Build and compile ``networks`` now, while the process would otherwise wait for its first
    task (the embedded CLI names the campaign's network and methods): the reduced-ODE kernels,
    and every method in ``methods`` (RAPTOR included) by a 1 ms solve with its default options,
    which compiles, or loads from the executable store, what that method's runs use. A failure
    is logged; the runs on that network then report it themselves."""
    import time

    import raptorgrid.case_store  # noqa: F401  (case:<id> networks)

    from models.dae import Scenario
    from models.kernels import kernels_for
    from models.library import build_system
    from solvers import solve

    for name in networks:
        start = time.perf_counter()
        compiled = 0.0  # s of compiling and loading executables (the rest builds the network)
        try:
            system = build_system(name)
            built = time.perf_counter() - start
            if not methods:
                compiled += kernels_for(system)[1]
            for method in methods:  # each compiles (or loads) what it uses, kernels included
                stats = solve(system, Scenario(t_end=PREBUILD_HORIZON), method).stats
                compiled += stats.compile_seconds + stats.load_seconds
        except Exception:
            log.exception("prebuilding network %r failed", name)
            continue
        log.info(
            "prebuilt network %r (%s) in %.1f s (network build %.2f s, compile and load %.2f s)",
            name,
            ", ".join(methods) or "kernels",
            time.perf_counter() - start,
            built,
            compiled,
        )


def freeze_startup_heap() -> None:
    """Take what the process holds after start-up (modules, JAX, compiled kernels, networks)
    out of the garbage collector's sight (``gc.freeze``), so a full collection walks only what
    runs create (measured: docs/measurements.md, ``freeze_startup_heap``)."""
    import gc

    gc.collect()
    gc.freeze()
