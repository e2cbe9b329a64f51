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
"""

from __future__ import annotations

import argparse
import json
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS))
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument("--max-baseline-unknowns", type=int, default=1400)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

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
