"""Process-level runtime choices shared by the CLI and the workers: one CPU per worker."""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1
"""prctl option: signal this process when its parent exits (linux/prctl.h)."""


def _load_prctl():  # noqa: ANN202 - a ctypes function or None
    if not sys.platform.startswith("linux"):
        return None
    return ctypes.CDLL(None, use_errno=True).prctl  # libc's symbols are in the process


_PRCTL = _load_prctl()
"""Resolved here, in the parent: a forked child (``preexec_fn``) must only make the call."""

SINGLE_THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
}
"""Thread-count variables read by BLAS and XLA when they load (so: set before a worker process
imports NumPy or JAX). DESIGN §7: XLA_FLAGS alone did not make XLA single-threaded; a CPU
affinity mask did, so workers also get one (``pin_to_cpu``, ``taskset``, compose ``cpuset``)."""


def single_thread_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with the variables above added; values
    already set win, so a deployment can override them."""
    env = dict(os.environ if base is None else base)
    for key, value in SINGLE_THREAD_ENV.items():
        env.setdefault(key, value)
    return env


def usable_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """Ask Linux to send ``sig`` to this process when its parent dies (``PR_SET_PDEATHSIG``), so
    embedded workers never outlive a CLI that was killed. A no-op elsewhere."""
    if _PRCTL is None:
        return
    if _PRCTL(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")


def pin_to_cpu(cpu: int) -> None:
    """Restrict this process (and the processes it starts) to one CPU."""
    os.sched_setaffinity(0, {cpu})
    log.info("pinned process %d to CPU %d", os.getpid(), cpu)
