"""Cost against network size: a 1 s bus fault on every RMS network from 9 to 2,869 buses.

    python benchmarks/scaling.py [--systems ...] [--methods raptor radau bdf lsoda ida trapezoid]
                                 [--max-baseline-unknowns 1400] [--json]

Per network: n_x, n_z, the unreduced Jacobian's non-zeros; per method: CPU seconds of a warm
solve (compilation excluded: every method is solved once before it is timed), accepted steps
(RAPTOR: intervals), rejected, CPU per attempt, and the state error against a reference
(Radau at rtol 1e-10 up to ``--max-baseline-unknowns`` unknowns, above it IDA with its sparse
solver at rtol 1e-9). Then the exponent b of a least-squares fit cost per attempt ~ n^b over the
networks from 118 buses up, per method. Radau and BDF integrate the reduced ODE up to 400
unknowns and the epsilon-embedded DAE with a sparse Jacobian above (``solvers.scipy_dae``);
LSODA the reduced ODE with a dense Jacobian (not run above ``--max-baseline-unknowns``); IDA
the DAE with a dense or sparse direct solver; the trapezoid (fixed dt = 1 ms) the DAE with KLU
above 200 unknowns. CPU clock
(``time.process_time``); the load average is printed beside the table.

    python benchmarks/scaling.py --dq [--dq-systems dq_ieee39 dq_ieee118]
        [--dq-disturbances fault load_step pref_step] [--dq-t-end 0.3] [--json]

The dq rows (issue 16): the full-order dq networks (every line a pi-section, every machine full
order) with a three-phase fault (x = 0.01 pu at the heaviest load bus, 0.1-0.183 s), a 20 % load
step there at 0.1 s and a +0.1 pu P_ref step of the first generator at 0.1 s (the disturbances
of ``benchmarks/dq_networks.py``), per method: RAPTOR, Radau, BDF (rtol 1e-6; Radau and BDF on
the reduced ODE up to 400 unknowns, the sparse DAE above), IDA (rtol 1e-6), the trapezoid at
dt = 1e-4 s; CPU seconds of one solve after a 2 ms warm-up run on the same network (which
compiles), accepted steps, and the state error against a reference at rtol 1e-10 (default IDA
on the sparse DAE, ``--dq-reference``; see ``DQ_REFERENCES``), printed beside the design seed's
figures for the same networks (Radau, full order, disturbance not stated, 1 s presumably).
``--dq-cross-check raptor`` adds a second method at rtol 1e-10 against that reference (two
independent methods agreeing), ``--dq-trapezoid-dts`` more trapezoid steps. The horizon is
shortened (``--dq-t-end``, default 0.3 s) to keep every row bounded; the table says so.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import load_average, print_table  # noqa: E402

SYSTEMS = (
    "wscc9",
    "ieee39",
    "ieee118",
    "case_illinois200",
    "case300",
    "case1354pegase",
    "case2869pegase",
)
METHODS = ("raptor", "radau", "bdf", "lsoda", "ida", "trapezoid")
OPTIONS = {
    "raptor": {"rtol": 1e-6},
    "radau": {"rtol": 1e-6},
    "bdf": {"rtol": 1e-6},
    "lsoda": {"rtol": 1e-6},
    "ida": {"rtol": 1e-6},
    "trapezoid": {"dt": 1e-3},
}
SPARSE_METHODS = {"raptor", "ida", "trapezoid", "radau", "bdf"}
"""Methods whose linear algebra stays sparse on large networks."""
DQ_SYSTEMS = ("dq_ieee39", "dq_ieee118")
DQ_DISTURBANCES = ("fault", "load_step", "pref_step")
DQ_METHODS = ("raptor", "radau", "bdf", "ida", "trapezoid")
DQ_OPTIONS = {**OPTIONS, "trapezoid": {"dt": 1e-4}}
DQ_REFERENCES = {
    "radau": ("radau", {"rtol": 1e-10, "atol": 1e-12, "formulation": "reduced"}),
    "ida": ("ida", {"rtol": 1e-10, "atol": 1e-12}),
    "raptor": ("raptor", {"rtol": 1e-10, "atol": 1e-12}),
    "raptor_1e8": ("raptor", {"rtol": 1e-8, "atol": 1e-10}),
    "ida_1e7": ("ida", {"rtol": 1e-7, "atol": 1e-9, "max_steps": 2_000_000}),
    "ida_1e8": ("ida", {"rtol": 1e-8, "atol": 1e-10, "max_steps": 4_000_000}),
    "trapezoid_1us": ("trapezoid", {"dt": 1e-6}),
    "trapezoid_2us": ("trapezoid", {"dt": 2e-6}),
}
"""Reference candidates (``--dq-reference``, ``--dq-cross-check``): label -> (method, options);
the adaptive ones at rtol 1e-10, or looser for the dq_ieee118 fault, where no adaptive method
reached rtol 1e-10 (RAPTOR at 1e-8 cross-checked by IDA at 1e-7: IDA needed 175,114 steps
at 1e-6 there). The fine trapezoids were tried there
first: second order, so the 2 us one's difference from
the 1 us one is about 3 times the 1 us one's own error (Richardson). Radau on the
reduced ODE takes > 600 s CPU for 0.3 s of the dq_ieee118 load step, and the epsilon-embedded
DAE at rtol 1e-10 (eps = 1e-13 s) fails there at t = 7e-12 s (state not finite after 2,242
steps; 2026-12-03) because the dq network's g_z has eigenvalues in the right half-plane, so the
embedding is unstable (now refused: ``solvers.scipy_dae.embedding_stable``); the default is IDA
on the sparse DAE, cross-checked by RAPTOR."""
SEED_SECONDS = {"dq_ieee39": 267.0, "dq_ieee118": 189.0}
"""Design seed 001, full-order IEEE-39 / IEEE-118: Radau with the exact Jacobian (disturbance not
stated)."""


def scenario_for(system):
    from models.disturbances import BusFault
    from models.scenarios import make_scenario

    buses = system.names["bus"]
    bus = buses[len(buses) // 2]
    fault = BusFault(bus=bus, t_fault=0.1, t_clear=0.15)
    return make_scenario(system, fault, t_end=1.0, n_eval=101), bus


def reference(system, scenario, n: int, limit: int):
    from solvers import solve

    if n <= limit:
        return "radau rtol 1e-10", solve(system, scenario, "radau", rtol=1e-10, atol=1e-12)
    return "ida rtol 1e-9", solve(system, scenario, "ida", rtol=1e-9, atol=1e-11)


def measure(system, scenario, method: str, ref) -> dict:
    from solvers import solve
    from solvers.metrics import accuracy

    options = OPTIONS[method]
    warm = solve(system, scenario, method, **options)
    start = time.process_time()
    result = solve(system, scenario, method, **options)
    cpu = time.process_time() - start
    attempts = result.stats.accepted + result.stats.rejected
    row = {
        "method": method,
        "status": result.status.value,
        "cpu_s": cpu,
        "compile_s": warm.stats.compile_seconds,
        "accepted": result.stats.accepted,
        "rejected": result.stats.rejected,
        "cpu_per_attempt_ms": 1e3 * cpu / max(1, attempts),
        "error": accuracy(result, ref).state_error if result.succeeded else None,
    }
    return row


def fit_exponent(rows: list[dict], method: str, min_n: int = 800) -> float | None:
    """b of log(cost per attempt) = a + b log(n) over the networks with n >= min_n."""
    pts = [
        (r["n"], r["cpu_per_attempt_ms"])
        for r in rows
        if r["method"] == method and r["n"] >= min_n and r.get("status") == "succeeded"
    ]
    if len(pts) < 2:
        return None
    n, cost = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(n, cost, 1)[0])


def dq_scenario(system, name: str, disturbance: str, t_end: float):
    from pydantic import TypeAdapter

    from benchmarks.dq_networks import disturbance_for
    from models.disturbances import Disturbance
    from models.scenarios import make_scenario

    data = disturbance_for(
        name, system, severe=disturbance == "fault", t_end=t_end,
        setpoint=disturbance == "pref_step",
    )  # fmt: skip
    scenario = make_scenario(
        system, TypeAdapter(Disturbance).validate_python(data), t_end=t_end, n_eval=301
    )
    return scenario, data


def dq_rows(args) -> list[dict]:  # noqa: ANN001
    """The dq networks' rows: every disturbance and method of ``args`` on each network."""
    from models.library import build_system
    from models.scenarios import make_scenario
    from solvers import solve
    from solvers.metrics import accuracy

    rows: list[dict] = []
    for name in args.dq_systems:
        system = build_system(name)
        idle = make_scenario(system, None, t_end=2e-3, n_eval=3)
        warm: dict[str, float] = {}
        for disturbance in args.dq_disturbances:
            scenario, data = dq_scenario(system, name, disturbance, args.dq_t_end)
            start = time.process_time()
            ref_method, ref_options = DQ_REFERENCES[args.dq_reference]
            ref = solve(system, scenario, ref_method, **ref_options)
            ref_cpu = time.process_time() - start
            base = {
                "system": name,
                "n": system.n_x + system.n_z,
                "disturbance": disturbance,
                "t_end": args.dq_t_end,
                "seed_s": SEED_SECONDS.get(name),
                "reference": f"{args.dq_reference} {ref_options}",
                "reference_s": ref_cpu,
                "reference_steps": ref.stats.accepted,
            }
            if not ref.succeeded:
                base["reference_status"] = f"{ref.status.value}: {ref.message}"[:120]
                print(f"{name} {disturbance}: reference {base['reference_status']}", flush=True)
                ref = None
            if args.dq_cross_check and ref is not None:  # a second, independent reference
                label = args.dq_cross_check
                method, options = DQ_REFERENCES[label]
                start = time.process_time()
                check = solve(system, scenario, method, **options)
                base["cross_check"] = (
                    f"{label}: {accuracy(check, ref).state_error:.2e} "
                    f"({time.process_time() - start:.0f} s)"
                    if check.succeeded
                    else f"{label} {check.status.value}"
                )
                print(f"{name} {disturbance}: cross-check {base['cross_check']}", flush=True)
            runs = [
                (method, {"dt": dt} if method == "trapezoid" else DQ_OPTIONS[method])
                for method in args.dq_methods
                if method != "raptor"
                for dt in (args.dq_trapezoid_dts if method == "trapezoid" else [None])
            ]
            if "raptor" in args.dq_methods:
                runs = [("raptor", {"rtol": r}) for r in args.dq_raptor_rtols] + runs
            for method, options in runs:
                if method not in warm:  # compile on a 2 ms run of the same network
                    warm[method] = solve(system, idle, method, **options).stats.compile_seconds
                start = time.process_time()
                result = solve(system, scenario, method, **options)
                cpu = time.process_time() - start
                error = accuracy(result, ref).state_error if result.succeeded and ref else None
                label = method + (f" dt {options['dt']:g}" if method == "trapezoid" else "")
                if method == "raptor" and args.dq_raptor_rtols != [DQ_OPTIONS["raptor"]["rtol"]]:
                    label += f" rtol {options['rtol']:g}"
                rows.append({
                    **base, "method": label, "status": result.status.value, "cpu_s": cpu,
                    "compile_s": warm[method], "accepted": result.stats.accepted,
                    "rejected": result.stats.rejected, "error": error,
                    "load": os.getloadavg()[0],
                })  # fmt: skip
                if not args.json:
                    r = rows[-1]
                    print(
                        f"{name} {disturbance} {label}: {r['cpu_s']:.2f} s CPU, "
                        f"{r['accepted']} + {r['rejected']} steps, error {r['error']} "
                        f"({load_average()})",
                        flush=True,
                    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS))
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument("--max-baseline-unknowns", type=int, default=1400)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dq", action="store_true", help="instead: the dq networks' rows")
    parser.add_argument("--dq-systems", nargs="+", default=list(DQ_SYSTEMS))
    parser.add_argument("--dq-disturbances", nargs="+", default=list(DQ_DISTURBANCES))
    parser.add_argument("--dq-methods", nargs="+", default=list(DQ_METHODS))
    parser.add_argument("--dq-t-end", type=float, default=0.3)
    parser.add_argument("--dq-trapezoid-dts", nargs="+", type=float, default=[1e-4])
    parser.add_argument(
        "--dq-raptor-rtols", nargs="+", type=float, default=[DQ_OPTIONS["raptor"]["rtol"]],
        help="RAPTOR's relative tolerances on the dq rows (one row each)",
    )  # fmt: skip
    parser.add_argument("--dq-reference", choices=list(DQ_REFERENCES), default="ida")
    parser.add_argument(
        "--dq-cross-check", choices=list(DQ_REFERENCES), default=None,
        help="a second method at rtol 1e-10 against the reference (two independent methods)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.dq:
        rows = dq_rows(args)
        if args.json:
            print(json.dumps({"load": load_average(), "rows": rows}, indent=1))
            return
        print(
            f"\ndq networks, {args.dq_t_end} s horizon (shortened to bound the runs; the seed's "
            f"figures are for its own, unstated disturbance), CPU clock ({load_average()})"
        )
        print_table(
            rows,
            ["system", "n", "disturbance", "method", "status", "cpu_s", "accepted",
             "rejected", "error", "seed_s", "reference", "reference_s", "cross_check"],
        )  # fmt: skip
        return

    from models.library import build_system
    from models.sparsity import jacobian_structure

    rows: list[dict] = []
    for name in args.systems:
        system = build_system(name)
        structure, _, _ = jacobian_structure(system)
        n = system.n_x + system.n_z
        scenario, bus = scenario_for(system)
        ref_label, ref = reference(system, scenario, n, args.max_baseline_unknowns)
        for method in args.methods:
            base = {
                "system": name,
                "n_x": system.n_x,
                "n_z": system.n_z,
                "n": n,
                "nnz": structure.nnz,
                "fault_bus": bus,
                "reference": ref_label,
            }
            if method not in SPARSE_METHODS and n > args.max_baseline_unknowns:
                rows.append({**base, "method": method, "status": "not run (dense, n > limit)"})
                continue
            rows.append({**base, **measure(system, scenario, method, ref)})
            if not args.json:
                print(
                    f"{name} {method}: {rows[-1]['cpu_s']:.3f} s CPU ({load_average()})",
                    flush=True,
                )
    fits = {m: fit_exponent(rows, m) for m in args.methods}
    if args.json:
        print(json.dumps({"load": load_average(), "rows": rows, "exponents": fits}, indent=1))
        return
    print(f"\n1 s bus fault, CPU clock ({load_average()})")
    print_table(
        rows,
        [
            "system",
            "n",
            "nnz",
            "method",
            "status",
            "cpu_s",
            "accepted",
            "rejected",
            "cpu_per_attempt_ms",
            "error",
            "reference",
        ],
    )
    for method, b in fits.items():
        if b is not None:
            print(f"{method}: cost per attempt ~ n^{b:.2f} (networks with n >= 800)")


if __name__ == "__main__":
    main()
