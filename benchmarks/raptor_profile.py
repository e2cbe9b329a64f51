"""Where one RAPTOR interval spends its time (issue: RAPTOR at the paper's cost per interval).

Solves a bus-7 fault on ``--system`` once (warm), then times each compiled stage of one interval
attempt (``solvers.raptor.interval.make_stages``) on a representative interval taken from that
run: the factorizations (every slot's E - h lam J, E - h J and g_z), the initial guess, one chord
iteration, the acceptance indicator and the whole compiled attempt; and the work per Jacobian
refresh outside it (the sparse Jacobian, one JVP per colour; g_z's host factorization with the
spectral radius of the reduced operator) and the compiled dense output.

    python benchmarks/raptor_profile.py [--json] [--system wscc9] [--reps 200] [--clock cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.common import machine  # noqa: E402
from models.disturbances import BusFault  # noqa: E402
from models.library import build_system  # noqa: E402
from models.scenarios import make_scenario  # noqa: E402
from models.sparsity import jacobian_structure  # noqa: E402
from solvers import solve  # noqa: E402
from solvers.dae_eval import DAEEvaluator  # noqa: E402
from solvers.raptor.interval import make_stages  # noqa: E402
from solvers.raptor.options import RaptorOptions  # noqa: E402
from solvers.raptor.runner import (  # noqa: E402
    _attempt_args,
    _Compiled,
    banks_for,
    level_for,
    spectral_radius,
)
from solvers.result import Stats  # noqa: E402
from solvers.shifted_lu import AlgebraicLU, choose_backend  # noqa: E402
from solvers.trajectory import segments  # noqa: E402

CLOCK = {"wall": time.perf_counter, "cpu": time.process_time}
"""``--clock cpu`` (the default) times with the process CPU clock: on a machine shared with
other jobs it is far less noisy than wall time (the solver runs single-threaded)."""
clock = CLOCK["cpu"]


def timed(fn, *args, reps: int) -> float:
    """Median seconds of ``fn(*args)``."""
    fn(*args)
    samples = []
    for _ in range(reps):
        start = clock()
        fn(*args)
        samples.append(clock() - start)
    return float(np.median(samples))


def profile(system_name: str, reps: int) -> dict:
    system = build_system(system_name)
    scenario = make_scenario(
        system, BusFault(bus="bus7", t_fault=0.1, t_clear=0.183), t_end=1.1, n_eval=221
    )
    options = RaptorOptions()
    solve(system, scenario, "raptor")  # warm: compile once
    start = clock()
    result = solve(system, scenario, "raptor")
    run_seconds = clock() - start
    stats = result.stats
    # a representative interval: the longest accepted one after the fault is cleared
    t = result.t
    k = int(np.argmax(np.where(t[:-1] >= 0.183, np.diff(t), 0.0)))
    x_k, z_k, h = result.x[k], result.z[k], float(t[k + 1] - t[k])
    params = [seg.params for seg in segments(system, scenario) if seg.t_start <= t[k]][-1]
    structure = jacobian_structure(system)[0]
    backend = choose_backend(structure, options.linear_solver)
    banks = banks_for(options)
    code = _Compiled(system, structure, banks, options, backend)
    ev = DAEEvaluator(system, params, backend, Stats(), structure=structure)
    p = ev.p
    jvals = np.asarray(structure.values(x_k, z_k, p))
    rho = spectral_radius(AlgebraicLU(structure, jvals, backend).reduced_matvec, system.n_x)
    idx = banks.flat_index(level_for(h * rho, tuple(options.level_thresholds)), 0)
    bank = {name: arr[idx] for name, arr in code.device_banks.items()}
    f_k = ev.f(x_k, z_k)
    args = _attempt_args(
        x_k,
        z_k,
        f_k,
        h,
        p,
        jvals,
        code.handles,
        code.device_banks,
        idx,
        np.zeros((options.n_rbf, system.n_x)),
        0.0,
        options,
        code.no_factors,
    )
    st = make_stages(system, code.linalg)
    lam = bank["lam"][bank["slot_owner"]]
    factorize = jax.jit(st["factorize"])
    slots, filt, gz = factorize(jvals, h, lam, code.handles)
    initial = jax.jit(st["initial_guess"])
    y0, zc0 = initial(x_k, z_k, f_k, h, p, filt, gz, jvals, bank, args[9], 0.0, 1.0)
    chord = jax.jit(st["chord_update"])
    indicator = jax.jit(st["indicator"])
    out = jax.device_get(code.attempt(*args))
    iterations = int(out["newton_iterations"])
    rows = banks.bank(0, 0).value_rows(np.linspace(0.0, 1.0, 32))
    zs = np.repeat(z_k[None], 32, 0)

    def run(fn, *a):
        return lambda: jax.block_until_ready(fn(*a))

    with code.linalg.lock:
        parts = {
            "sparse Jacobian (one JVP per colour)": timed(
                run(structure.values, x_k, z_k, p), reps=reps
            ),
            "host: g_z LU + spectral radius of the reduced operator": timed(
                lambda: spectral_radius(
                    AlgebraicLU(structure, jvals, backend).reduced_matvec, system.n_x
                ),
                reps=reps,
            ),
            "factorize (slots E - h lam J, filter E - h J, g_z)": timed(
                run(factorize, jvals, h, lam, code.handles), reps=reps
            ),
            "initial guess (predictor + fit)": timed(
                run(initial, x_k, z_k, f_k, h, p, filt, gz, jvals, bank, args[9], 0.0, 1.0),
                reps=reps,
            ),
            "one chord iteration (F, G at M points, solves, z pass)": timed(
                run(chord, y0, zc0, x_k, h, p, slots, gz, bank), reps=reps
            ),
            "acceptance indicator (M checkpoints)": timed(
                run(
                    indicator,
                    x_k,
                    z_k,
                    out["y"],
                    out["zc"],
                    h,
                    p,
                    filt,
                    gz,
                    bank,
                    options.rtol,
                    options.atol,
                ),
                reps=reps,
            ),
            "whole compiled attempt": timed(run(code.attempt, *args), reps=reps),
            "dense output, 32 samples": timed(
                run(code.dense, x_k, rows, out["y"], zs, p, out["gz"]), reps=reps
            ),
        }
    attempts = stats.accepted + stats.rejected
    per_attempt = run_seconds / max(attempts, 1)
    return {
        "system": system_name,
        "n_x": system.n_x,
        "n_z": system.n_z,
        "N": options.n_rbf,
        "M": options.n_colloc,
        "backend": backend,
        "nnz": structure.nnz,
        "load_average": os.getloadavg(),
        "interval": {"t_k": float(t[k]), "h": h, "chord_iterations": iterations},
        "run": {
            "solve_s": run_seconds,
            "clock": "cpu" if clock is time.process_time else "wall",
            "accepted": stats.accepted,
            "rejected": stats.rejected,
            "jacobian_evaluations": stats.jacobian_evaluations,
            "seconds_per_attempt": per_attempt,
        },
        "stages_s": parts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--system", default="wscc9")
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--clock", choices=list(CLOCK), default="cpu")
    args = parser.parse_args()
    global clock
    clock = CLOCK[args.clock]
    out = profile(args.system, args.reps)
    if args.json:
        print(json.dumps({"benchmark": "raptor_profile", "machine": machine(), **out}, indent=1))
        return
    run = out["run"]
    print(f"load average {out['load_average']}, {out['run']['clock']} clock")
    print(
        f"{out['system']}: n_x={out['n_x']} n_z={out['n_z']} nnz={out['nnz']} "
        f"({out['backend']}) N={out['N']} M={out['M']}; "
        f"run: {run['accepted']} accepted + {run['rejected']} rejected intervals in "
        f"{run['solve_s'] * 1e3:.1f} ms = {run['seconds_per_attempt'] * 1e3:.2f} ms/attempt"
    )
    print(
        f"interval at t={out['interval']['t_k']:.3f} s, h={out['interval']['h'] * 1e3:.1f} ms, "
        f"{out['interval']['chord_iterations']} chord iterations"
    )
    whole = out["stages_s"]["whole compiled attempt"]
    for name, seconds in out["stages_s"].items():
        print(f"  {name:52s} {seconds * 1e6:9.1f} us  ({seconds / whole:5.2f} x attempt)")


if __name__ == "__main__":
    main()
