"""Effect of the BLAS thread count on the small factorizations every solver does.

Times ten 103 x 103 complex LUs (RAPTOR's chord matrices on ieee39, batched in JAX) and one
SciPy real LU of the same size, in fresh subprocesses with ``RAPTORGRID_BLAS_THREADS`` = 0 (the
libraries' own default) and 1 (the project default, ``models/jaxconfig.py``), each with and
without a competing busy process (as when several workers share the machine). Prints median
times and the ratio default / one-thread measured in the same run.

    python benchmarks/blas_threads.py [--reps 50] [--json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import dump, print_table  # noqa: E402

PROBE = """
import json, sys, time
import numpy as np
import models.jaxconfig  # noqa: F401  (applies RAPTORGRID_BLAS_THREADS)
import jax, jax.numpy as jnp, scipy.linalg
from jax.scipy.linalg import lu_factor

reps = int(sys.argv[1])
rng = np.random.default_rng(0)
a0 = rng.standard_normal((103, 103))
lam = rng.standard_normal(10) + 1j * rng.standard_normal(10)
batched = jax.jit(lambda h, lam, a: jax.vmap(
    lambda l: lu_factor(jnp.eye(103, dtype=lam.dtype) - h * l * a))(lam))
jax.block_until_ready(batched(0.1, lam, a0))

def median(fn):
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return float(np.median(samples))

print(json.dumps({
    "jax_10_complex_lu_s": median(lambda: jax.block_until_ready(batched(0.1, lam, a0))),
    "scipy_real_lu_s": median(lambda: scipy.linalg.lu_factor(a0)),
}))
"""


def _busy(stop) -> None:  # noqa: ANN001
    while not stop.is_set():
        sum(i * i for i in range(10_000))


def probe(threads: int, reps: int) -> dict:
    env = dict(os.environ, RAPTORGRID_BLAS_THREADS=str(threads))
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.pop(var, None)
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(reps)],
        env=env, cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for load in (0, 1):
        stop = multiprocessing.Event()
        workers = [multiprocessing.Process(target=_busy, args=(stop,)) for _ in range(load)]
        for w in workers:
            w.start()
        try:
            for threads in (0, 1):
                times = probe(threads, args.reps)
                rows.append({"busy_processes": load, "blas_threads": threads or "default",
                             **times})  # fmt: skip
        finally:
            stop.set()
            for w in workers:
                w.join()
    ratios = []
    for load in (0, 1):
        default, one = (r for r in rows if r["busy_processes"] == load)
        for key in ("jax_10_complex_lu_s", "scipy_real_lu_s"):
            ratios.append({"busy_processes": load, "operation": key,
                           "default_over_one_thread": default[key] / one[key]})  # fmt: skip
    if args.json:
        print(dump("blas_threads", rows, ratios))
        return
    print_table(rows, list(rows[0]))
    print()
    print_table(ratios, list(ratios[0]))


if __name__ == "__main__":
    main()
