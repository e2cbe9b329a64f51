"""The EMT and dq-network cases through the platform: sizes, fastest modes and 1 s runtimes of
Radau and the trapezoidal baselines (issue: EMT benchmark cases and dq-frame networks).

For each case this prints the sizes and the small-signal summary at the equilibrium (fastest
mode |lambda| in rad/s, largest real part), then runs a one-scenario campaign with
``raptorgrid run`` on the embedded platform (SQLite, local Zarr, one real Celery worker, a
scratch data directory per case): Radau at rtol 1e-6 / atol 1e-8, the trapezoid at dt = 1e-4 s,
the delayed-control trapezoid at dt = 1e-4 s (cases that declare controller states) and a
reference (Radau rtol 1e-10 / atol 1e-12), and reads the scored runs back from the campaign's
database. Runtime is the worker's solve time (compilation excluded).

Disturbances (``--severe`` for the hard ones):

* ``emt_sm``: source switch-off at 0.05 s (the paper's), severe: the same with the load x1.25;
* ``emt_gfl``: P_ref x0.5 at 0.3 s then grid voltage x0.95 at 0.6 s (the paper's two
  consecutive steps, fitted in 1 s); severe: a fault at the PCC;
* the dq networks: a 20 % load step at the heaviest load at 0.1 s (SMIB, which has no load: a
  +0.1 pu P_ref step of the machine); severe: a three-phase fault (x = 0.01 pu) at that bus,
  0.1-0.183 s.

    python benchmarks/dq_networks.py [--cases emt_sm emt_gfl dq_smib ...] [--severe]
                                     [--setpoint] [--no-reference] [--t-end 1.0]
                                     [--trapezoid-dt 1e-4]
                                     [--json]
    python benchmarks/dq_networks.py --fine 0.001 --cases dq_ieee118   # fine trapezoid check
    python benchmarks/dq_networks.py --jacobians --cases dq_ieee39 dq_ieee118 [--setpoint]
        [--jacobian-modes dense auto]   # reduced Jacobians by mode; Radau reduced, CPU clock

``--jacobians`` (no platform): per Jacobian mode of ``models.kernels`` (``dense``: forward mode
over all unknowns, the code before issue 16; ``auto``: the coloured pattern above
``DENSE_MAX_UNKNOWNS``), CPU milliseconds of one fused reduced Jacobian (Newton + J) and of one
reduced right-hand side at the equilibrium, then a whole Radau solve of the reduced ODE (rtol
1e-6, atol 1e-8, the load step, ``--setpoint`` the P_ref step) with compilation excluded,
with its steps, Jacobian evaluations and its largest state difference from the first mode's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import dump, load_average, print_table  # noqa: E402
from models.library import build_system  # noqa: E402
from models.smallsignal import modes  # noqa: E402

CASES = ("emt_sm", "emt_gfl", "dq_smib", "dq_ninebus", "dq_microgrid", "dq_ieee39", "dq_ieee118")
RADAU = {"rtol": 1e-6, "atol": 1e-8}
TRAPEZOID_DT = 1e-4
REFERENCE = {"method": "radau", "options": {"rtol": 1e-10, "atol": 1e-12}}
THRESHOLDS = {"state_error": 1e-4, "voltage_mae": 1e-4, "kcl_max": 1e-6}


def disturbance_for(  # noqa: ANN001
    case: str, system, severe: bool, t_end: float, setpoint: bool = False
) -> dict:
    if case == "emt_sm":
        return {"kind": "source_switch", "t": 0.05, "load": "term",
                "load_scale": 1.25 if severe else 1.0}  # fmt: skip
    if case == "emt_gfl" and not severe:
        return {"kind": "sequence", "steps": [
            {"kind": "input_step", "input": "inv.P_ref", "t": 0.3 * t_end, "scale": 0.5},
            {"kind": "input_step", "input": "grid.E", "t": 0.6 * t_end, "scale": 0.95},
        ]}  # fmt: skip
    loads = system.names.get("load", ())
    if not loads or setpoint:
        gen = system.names["generator"][0]
        return {"kind": "input_step", "input": f"{gen}.P_ref", "t": 0.1, "delta": 0.1}
    heaviest = loads[int(np.argmax(np.asarray(system.params["load_g"])))]
    if severe:
        return {"kind": "bus_fault", "bus": heaviest, "t_fault": 0.1, "t_clear": 0.183, "x": 0.01}
    return {"kind": "load_step", "bus": heaviest, "t": 0.1, "scale": 1.2}


def spec_for(case: str, system, args) -> dict:  # noqa: ANN001
    methods = [
        {"method": "radau", "options": RADAU},
        {"method": "trapezoid", "options": {"dt": args.trapezoid_dt}},
    ]
    if system.controller_states:
        methods.append({"method": "trapezoid-delayed", "options": {"dt": args.trapezoid_dt}})
    spec = {
        "name": f"dq networks: {case}, {args.t_end} s",
        "network": case,
        "t_end": args.t_end,
        "n_eval": 201,
        "disturbances": [
            disturbance_for(case, system, args.severe, args.t_end, setpoint=args.setpoint)
        ],
        "methods": methods,
        "thresholds": THRESHOLDS,
    }
    if not args.no_reference:
        spec["reference"] = REFERENCE
    return spec


def run_case(case: str, args, workdir: Path) -> list[dict]:  # noqa: ANN001
    start = time.perf_counter()
    system = build_system(case)
    build_s = time.perf_counter() - start
    m = modes(system)
    spec = spec_for(case, system, args)
    data_dir = workdir / case
    data_dir.mkdir(parents=True, exist_ok=True)
    spec_path = data_dir / "spec.json"
    spec_path.write_text(json.dumps(spec, indent=1))
    env = dict(os.environ, RAPTORGRID_DATA_DIR=str(data_dir))
    for var in ("RAPTORGRID_DATABASE_URL", "RAPTORGRID_BROKER_URL"):
        env.pop(var, None)
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "raptorgrid"), "run", str(spec_path), "--workers", "1"],
        env=env, cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    head = {
        "case": case,
        "n_x": system.n_x,
        "n_z": system.n_z,
        "build_s": round(build_s, 1),
        "fastest_rad_s": m.fastest,
        "max_real": m.max_real,
        "disturbance": spec["disturbances"][0]["kind"],
    }
    if proc.returncode != 0:
        return [{**head, "method": "-", "status": f"campaign failed (exit {proc.returncode})",
                 "detail": proc.stdout[-400:] + proc.stderr[-400:]}]  # fmt: skip
    return [{**head, **row} for row in _results(data_dir)]


def _results(data_dir: Path) -> list[dict]:
    from raptorgrid.db import Database
    from raptorgrid.repository.stats import Filters, config_stats
    from raptorgrid.settings import Settings

    db = Database.from_settings(Settings(data_dir=data_dir, database_url=""))
    try:
        with db.read() as session:
            configs, _ = config_stats(
                session=session, campaign_id=1, filters=Filters(include_reference=True)
            )
    finally:
        db.dispose()
    return [
        {
            "method": ("reference " if c.is_reference else "") + c.method,
            "config": c.config,
            "status": "succeeded" if c.succeeded == c.runs else "failed",
            "runtime_s": c.median_solve_s,
            "steps": c.mean_accepted,
            "state_error": c.max_state_error,
            "voltage_mae": c.max_voltage_mae,
            "qualified": c.qualified if not c.is_reference else None,
        }
        for c in configs
    ]


def fine_check(case: str, window: float) -> dict:
    """Trapezoid at dt = 1e-6 s against Radau rtol 1e-10 over ``window`` seconds of a 20 %
    load step (P_ref step where there is no load) at 0.2 ms: the largest output difference
    against the size of the response."""
    from pydantic import TypeAdapter

    from models.disturbances import Disturbance
    from models.scenarios import make_scenario
    from solvers import solve

    system = build_system(case)
    data = disturbance_for(case, system, severe=False, t_end=window)
    if "t" in data:
        data["t"] = 2e-4
    disturbance = TypeAdapter(Disturbance).validate_python(data)
    scenario = make_scenario(system, disturbance, t_end=window, n_eval=41)
    radau = solve(system, scenario, "radau", rtol=1e-10, atol=1e-12)
    trap = solve(system, scenario, "trapezoid", dt=1e-6)
    diff = float(np.max(np.abs(radau.y_eval[:, :-1] - trap.y_eval[:, :-1])))
    moved = float(np.max(np.abs(radau.y_eval[-1, :-1] - radau.y_eval[0, :-1])))
    return {
        "case": case, "window_s": window, "radau_steps": radau.stats.accepted,
        "radau_s": radau.stats.solve_seconds, "trapezoid_steps": trap.stats.accepted,
        "trapezoid_s": trap.stats.solve_seconds, "max_output_difference": diff,
        "response": moved, "relative": diff / moved if moved else float("nan"),
    }  # fmt: skip


def jacobian_check(case: str, modes: list[str], setpoint: bool, t_end: float) -> list[dict]:
    """Reduced-kernel Jacobians and a Radau reduced solve per Jacobian mode (``--jacobians``)."""
    import jax.numpy as jnp
    from pydantic import TypeAdapter

    import models.kernels as mk
    from models.disturbances import Disturbance
    from models.scenarios import make_scenario
    from solvers import solve

    system = build_system(case)
    data = disturbance_for(case, system, severe=False, t_end=t_end, setpoint=setpoint)
    scenario = make_scenario(
        system, TypeAdapter(Disturbance).validate_python(data), t_end=t_end, n_eval=201
    )
    x, z = jnp.asarray(system.x0), jnp.asarray(system.z0)
    p = mk.as_device_params(system.params)
    rows, first = [], None
    for mode in modes:
        mk.JACOBIAN_MODE = mode
        mk._CACHE.pop(system, None)
        start = time.process_time()
        kernels, _ = mk.kernels_for(system)
        compile_cpu = time.process_time() - start

        def per_call(fn, reps=5):  # noqa: ANN001, ANN202
            fn()
            start = time.process_time()
            for _ in range(reps):
                fn()
            return 1e3 * (time.process_time() - start) / reps

        jac_ms = per_call(lambda k=kernels: k.reduced_jacobian(x, z, p)[0].block_until_ready())
        rhs_ms = per_call(lambda k=kernels: k.reduced_rhs(x, z, p).block_until_ready())
        start = time.process_time()
        result = solve(system, scenario, "radau", formulation="reduced", **RADAU)
        cpu = time.process_time() - start
        first = result if first is None else first
        diff = (
            float(np.max(np.abs(result.x_eval - first.x_eval)))
            if result.succeeded and first.succeeded
            else None
        )
        rows.append({
            "case": case, "disturbance": data["kind"], "mode": mode,
            "kernel_mode": kernels.jacobian_mode, "compile_cpu_s": compile_cpu,
            "jacobian_ms": jac_ms, "rhs_ms": rhs_ms, "status": result.status.value,
            "radau_cpu_s": cpu, "steps": result.stats.accepted,
            "rejected": result.stats.rejected,
            "jacobians": result.stats.jacobian_evaluations,
            "max_diff_vs_first": diff, "load": os.getloadavg()[0],
        })  # fmt: skip
        print(rows[-1], flush=True)
    mk.JACOBIAN_MODE = "auto"
    mk._CACHE.pop(system, None)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--severe", action="store_true", help="faults instead of steps")
    parser.add_argument(
        "--setpoint", action="store_true", help="a +0.1 pu P_ref step instead of a load step"
    )
    parser.add_argument("--no-reference", action="store_true", help="skip the reference run")
    parser.add_argument("--t-end", type=float, default=1.0)
    parser.add_argument("--trapezoid-dt", type=float, default=TRAPEZOID_DT)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--fine", type=float, metavar="WINDOW", default=None,
        help="instead: trapezoid dt=1e-6 vs Radau 1e-10 over WINDOW seconds (no platform)",
    )  # fmt: skip
    parser.add_argument(
        "--jacobians", action="store_true",
        help="instead: reduced Jacobians and a Radau reduced solve per Jacobian mode",
    )  # fmt: skip
    parser.add_argument("--jacobian-modes", nargs="+", default=["dense", "auto"])
    args = parser.parse_args()
    if args.jacobians:
        rows = []
        for case in args.cases:
            rows.extend(jacobian_check(case, args.jacobian_modes, args.setpoint, args.t_end))
        if args.json:
            print(dump("dq_reduced_jacobians", rows, []))
            return
        print(f"\nreduced Jacobians and Radau (reduced ODE), CPU clock ({load_average()})")
        print_table(rows, [k for k in rows[0] if k != "load"])
        return
    if args.fine is not None:
        fine = [fine_check(case, args.fine) for case in args.cases]
        print(dump("dq_fine_trapezoid", fine, []) if args.json else "")
        if not args.json:
            print_table(fine, list(fine[0]))
        return
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="raptorgrid-dq-") as tmp:
        for case in args.cases:
            rows.extend(run_case(case, args, Path(tmp)))
            if not args.json:
                print(f"{case}: done", flush=True)
    if args.json:
        print(dump("dq_networks", rows, []))
        return
    columns = ["case", "n_x", "n_z", "fastest_rad_s", "max_real", "disturbance", "method",
               "config", "status", "runtime_s", "steps", "state_error", "voltage_mae",
               "qualified"]  # fmt: skip
    print_table(rows, columns)
    for r in rows:
        if "detail" in r:
            print(f"\n{r['case']}: {r['detail']}")


if __name__ == "__main__":
    main()
