"""Where one RAPTOR interval spends its time (issue: RAPTOR, item 8).

Solves a bus-7 fault on ``--system`` once (warm), then times each compiled stage of one interval
attempt (``solvers.raptor.interval.make_stages``) on a representative interval taken from that run —
factorizations, initial guess, one chord iteration, the acceptance indicator, the whole compiled
attempt — and the work per interval outside it (reduced Jacobian with its spectral radius on
the host, the compiled dense output).

    python benchmarks/raptor_profile.py [--json] [--system wscc9] [--reps 200] [--clock cpu]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.common import machine  # noqa: E402
from models.disturbances import BusFault  # noqa: E402
from models.kernels import SAMPLE_BATCH, as_device_params, kernels_for  # noqa: E402
from models.library import build_system  # noqa: E402
from models.scenarios import make_scenario  # noqa: E402
from solvers import solve  # noqa: E402
from solvers.raptor.basis import build_banks  # noqa: E402
from solvers.raptor.interval import compiled_attempt, compiled_dense, make_stages  # noqa: E402
from solvers.raptor.options import RaptorOptions  # noqa: E402
from solvers.raptor.runner import _attempt_args, spectral_radius  # noqa: E402

CLOCK = {"wall": time.perf_counter, "cpu": time.process_time}
"""``--clock cpu`` times with the process CPU clock: on a machine shared with other jobs it
is far less noisy than wall time (the solver runs single-threaded, see models/jaxconfig.py)."""
clock = CLOCK["wall"]


def timed(fn, *args, reps: int) -> float:
    """Median seconds of ``fn(*args)`` with results fetched (device work included)."""
    jax.block_until_ready(fn(*args))
    samples = []
    for _ in range(reps):
        start = clock()
        jax.block_until_ready(fn(*args))
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
    kernels, _ = kernels_for(system)
    params = dict(system.params)
    params.update({"fault_g": np.zeros_like(params["fault_g"])})
    p = as_device_params(params)
    f_k = np.asarray(kernels.f(x_k, z_k, p))
    banks = build_banks(
        options.n_rbf,
        options.n_colloc,
        options.seed,
        tuple(options.a_max_levels),
        options.draws,
        options.continuation,
    )
    device_banks = {name: jnp.asarray(v) for name, v in banks.stacked.items()}
    bank = {name: v[0] for name, v in device_banks.items()}
    w_prev = np.zeros((options.n_rbf, system.n_x))

    def host_jacobian():
        a0 = np.asarray(kernels.ode_jacobian(x_k, z_k, p))
        return spectral_radius(a0)

    a0 = np.asarray(kernels.ode_jacobian(x_k, z_k, p))
    stages = make_stages(system)
    factorize = jax.jit(stages.factorize)
    slot_lam = bank["lam"][bank["slot_owner"]]
    chord, filt = factorize(h, slot_lam, a0)
    factorize_algebraic = jax.jit(stages.factorize_algebraic)
    g_lu = factorize_algebraic(x_k, z_k, p)
    initial_guess = jax.jit(stages.initial_guess)
    y0, zc0, _ = initial_guess(x_k, z_k, f_k, h, p, filt, g_lu, bank, w_prev, 0.0, 1.0)
    chord_update = jax.jit(stages.chord_update)
    indicator = jax.jit(stages.indicator)
    args = _attempt_args(x_k, z_k, f_k, h, p, a0, device_banks, 0, w_prev, 0.0, options)
    attempt, _ = compiled_attempt(system, args, options.max_newton)
    out = attempt(*args)
    iterations = int(out["newton_iterations"])
    rows = banks.bank(0, 0).value_rows(np.linspace(0.05, 0.95, 10))
    out = jax.device_get(out)
    pad = SAMPLE_BATCH - len(rows)
    dense_args = (
        x_k,
        np.concatenate([rows, np.repeat(rows[-1:], pad, 0)]),
        out["y"],
        np.repeat(out["zc"][-1:], SAMPLE_BATCH, 0),
        p,
        out["g_lu"],
    )
    dense, _ = compiled_dense(system, dense_args)

    parts = {
        "factorize (complex LU per eigenvalue pair + 1 real, n_x)": timed(
            factorize, h, slot_lam, a0, reps=reps
        ),
        "g_z at the interval start, LU": timed(factorize_algebraic, x_k, z_k, p, reps=reps),
        "initial guess (predictor + fit)": timed(
            initial_guess, x_k, z_k, f_k, h, p, filt, g_lu, bank, w_prev, 0.0, 1.0, reps=reps
        ),
        "one chord iteration (z at M points, F, M solves)": timed(
            chord_update, y0, zc0, x_k, h, p, g_lu, bank, chord, reps=reps
        ),
        "acceptance indicator (M checkpoints)": timed(
            indicator,
            x_k,
            z_k,
            y0,
            zc0,
            h,
            p,
            filt,
            g_lu,
            bank,
            options.rtol,
            options.atol,
            reps=reps,
        ),
        "whole compiled attempt": timed(attempt, *args, reps=reps),
        "host: reduced Jacobian + spectral radius": timed(host_jacobian, reps=reps),
        "dense output, 10 samples (batch of 32)": timed(dense, *dense_args, reps=reps),
    }
    attempts = stats.accepted + stats.rejected
    per_attempt = run_seconds / max(attempts, 1)
    return {
        "system": system_name,
        "n_x": system.n_x,
        "n_z": system.n_z,
        "N": options.n_rbf,
        "M": options.n_colloc,
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
    parser.add_argument("--clock", choices=list(CLOCK), default="wall")
    args = parser.parse_args()
    global clock
    clock = CLOCK[args.clock]
    out = profile(args.system, args.reps)
    if args.json:
        print(json.dumps({"benchmark": "raptor_profile", "machine": machine(), **out}, indent=1))
        return
    run = out["run"]
    print(
        f"{out['system']}: n_x={out['n_x']} n_z={out['n_z']} N={out['N']} M={out['M']}; "
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
