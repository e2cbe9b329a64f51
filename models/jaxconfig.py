"""Process-wide numerical configuration, applied before any array is created (every numerical
module imports this).

* float64 in JAX.
* JAX's persistent compilation cache under ``RAPTORGRID_JAX_CACHE_DIR`` (``models.executables``,
  which also keeps the serialized executables of RAPTOR and the sparse Jacobians).
* One BLAS/LAPACK thread per process by default (``RAPTORGRID_BLAS_THREADS`` overrides). A
  worker runs on one CPU, and the factorizations here are small (n ~ 10-1000): OpenBLAS's
  threads only contend with the other workers. ``benchmarks/blas_threads.py`` on the 2-core
  development machine: ten 103 x 103 complex LUs (RAPTOR's chord matrices on ieee39) took
  1.6-1.7 ms with one thread, 3.4 ms with OpenBLAS's default and 38 ms with the default next to
  one busy process (24x). JAX's CPU LAPACK calls go through
  SciPy's OpenBLAS, so the limit covers them too. The environment variables cover libraries
  loaded later; ``threadpoolctl`` covers the ones already loaded.
* Equinox's runtime checks (inside diffrax's solves: ``EQX_ON_ERROR``) return NaN instead of
  raising through a host callback. JAX neither writes a program with a host callback to its
  persistent cache nor can serialize it, so with Equinox's default every process traced and
  compiled each diffrax solve anew (docs/measurements.md, ``EQX_ON_ERROR``). A NaN ends the
  solve as a non-finite failure, recorded like any other. It must be set before Equinox is
  imported: the diffrax modules import this one first.
"""

import os

os.environ.setdefault("EQX_ON_ERROR", "nan")

BLAS_THREADS = int(os.environ.get("RAPTORGRID_BLAS_THREADS", "1"))
"""BLAS/LAPACK threads per process (0 keeps the libraries' own default)."""

if BLAS_THREADS > 0:
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, str(BLAS_THREADS))

import jax  # noqa: E402
import scipy.linalg  # noqa: E402, F401  (load SciPy's LAPACK so the limit below reaches it)
from threadpoolctl import threadpool_limits  # noqa: E402

jax.config.update("jax_enable_x64", True)
from models.executables import enable_persistent_cache  # noqa: E402

enable_persistent_cache()
if BLAS_THREADS > 0:
    threadpool_limits(limits=BLAS_THREADS, user_api="blas")
