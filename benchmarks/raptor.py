"""RAPTOR against the stiff baselines, side by side in one run (issue: RAPTOR, item 10).

For every system and scenario: a tight reference, a tolerance sweep of RAPTOR and of each
baseline (radau, bdf, lsoda where available), the fastest accuracy-qualified configuration of
each, and RAPTOR's speedup over each baseline's. Times exclude the one-time compilation, as the
paper's do; each configuration is timed ``--repeats`` times after a warm-up and the median kept.

    python benchmarks/raptor.py            # human tables
    python benchmarks/raptor.py --json     # one JSON object (DESIGN.md section 6)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import (  # noqa: E402
    CLOCKS,
    METHOD_VARIANTS,
    Thresholds,
    dump,
    fastest_qualified,
    load_average,
    measure,
    print_table,
    reference_method,
)
from models.disturbances import BranchTrip, BusFault, LoadStep  # noqa: E402
from models.library import build_system  # noqa: E402
from models.scenarios import make_scenario  # noqa: E402
from solvers import METHODS, solve  # noqa: E402

SCENARIOS = {
    "wscc9": [
        ("fault_bus7", BusFault(bus="bus7", t_fault=0.1, t_clear=0.183)),
        ("trip_br_5_6", BranchTrip(branch="br_5_6", t=0.1)),
        ("load_bus5_x1.2", LoadStep(bus="bus5", t=0.1, scale=1.2)),
    ],
    "ieee118": [("fault_bus60", BusFault(bus="bus60", t_fault=0.1, t_clear=0.183))],
}
BASELINES = ("radau", "bdf", "lsoda", "kvaerno5", "dopri5", "tsit5")
"""Default baselines; ``--baselines`` also takes ``ida``, ``radau_fd`` (SciPy's Radau with its
finite-difference Jacobian on the reduced ODE, the paper's configuration) and ``radau_dae_fd``
(finite differences over the sparse DAE pattern; ``benchmarks/common.METHOD_VARIANTS``)."""
RAPTOR_RTOLS = (1e-4, 1e-5, 1e-6, 1e-7)
BASELINE_RTOLS = (1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9)
T_END = 1.1  # 1 s after the disturbance at 0.1 s, as the paper's 1 s horizon


def scenarios_for(name: str, system) -> list[tuple[str, object]]:
    """The named scenarios of a system: the fixed ones above, else a generic fault (a bus in the
    middle of the bus list, cleared after 83 ms) and a 20 % load step at the first load bus."""
    if name in SCENARIOS:
        return SCENARIOS[name]
    buses, loads = system.names.get("bus", ()), system.names.get("load", ())
    out = []
    if buses:
        bus = buses[len(buses) // 2]
        out.append((f"fault_{bus}", BusFault(bus=bus, t_fault=0.1, t_clear=0.183)))
    if loads:
        out.append((f"load_{loads[0]}_x1.2", LoadStep(bus=loads[0], t=0.1, scale=1.2)))
    return out or [("none", None)]


def run(
    systems: list[str],
    repeats: int,
    thresholds: Thresholds,
    quick: bool,
    baselines: tuple[str, ...] = BASELINES,
    reference: str | None = None,
    clock: str = "cpu",
    baseline_rtols: tuple[float, ...] = BASELINE_RTOLS,
) -> dict:
    rows: list[dict] = []
    speedups: list[dict] = []
    ref_method, ref_config = reference_method()
    if reference == "radau":  # a cross-check of the Kvaerno5 reference
        ref_method, ref_config = "radau", {"rtol": 1e-11, "atol": 1e-13}
    for name in systems:
        system = build_system(name)
        for label, disturbance in scenarios_for(name, system):
            scenario = make_scenario(system, disturbance, t_end=T_END, n_eval=221)
            reference = solve(system, scenario, ref_method, **ref_config)
            if not reference.succeeded:
                raise RuntimeError(f"reference failed on {name}/{label}: {reference.message}")
            methods = [("raptor", RAPTOR_RTOLS)] + [
                (m, baseline_rtols) for m in baselines if m in METHODS or m in METHOD_VARIANTS
            ]
            scenario_rows = []
            for method, rtols in methods:
                for rtol in rtols[::2] if quick else rtols:
                    config = {"rtol": rtol, "atol": float(f"{rtol * 1e-2:.0e}")}
                    row = measure(
                        system, scenario, method, config, reference, thresholds, repeats, clock
                    )
                    row.update(system=name, scenario=label)
                    scenario_rows.append(row)
            rows += scenario_rows
            best = fastest_qualified(scenario_rows, name, "raptor")
            for baseline in (m for m, _ in methods[1:]):
                other = fastest_qualified(scenario_rows, name, baseline)
                speedups.append(
                    {
                        "system": name,
                        "scenario": label,
                        "method": "raptor",
                        "over": baseline,
                        "ratio": (other["runtime_s"] / best["runtime_s"])
                        if best and other
                        else None,
                        "raptor_config": best["config"] if best else None,
                        "baseline_config": other["config"] if other else None,
                        "basis": "fastest accuracy-qualified configuration of each, same run",
                    }
                )
    return {"rows": rows, "speedups": speedups, "reference": f"{ref_method} {ref_config}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--systems", nargs="*", default=["wscc9"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="every other tolerance only")
    parser.add_argument("--baselines", nargs="*", default=list(BASELINES))
    parser.add_argument("--reference", choices=["kvaerno5", "radau"], default=None)
    parser.add_argument(
        "--clock", choices=CLOCKS, default="cpu", help="CPU clock (default) or wall clock"
    )
    parser.add_argument(
        "--baseline-rtols",
        nargs="+",
        type=float,
        default=list(BASELINE_RTOLS),
        help="tolerances swept for the baselines (--quick keeps every other one)",
    )
    parser.add_argument("--state-tol", type=float, default=Thresholds.state)
    parser.add_argument("--voltage-tol", type=float, default=Thresholds.voltage)
    parser.add_argument("--kcl-tol", type=float, default=Thresholds.kcl)
    args = parser.parse_args()
    thresholds = Thresholds(args.state_tol, args.voltage_tol, args.kcl_tol)
    out = run(
        args.systems,
        args.repeats,
        thresholds,
        args.quick,
        tuple(args.baselines),
        args.reference,
        args.clock,
        tuple(args.baseline_rtols),
    )
    if args.json:
        print(dump("raptor", out["rows"], out["speedups"]))
        return
    print(f"{load_average()}; {args.clock} clock")
    print(
        f"reference: {out['reference']}; thresholds: state error <= {thresholds.state:g}, "
        f"bus-voltage MAE <= {thresholds.voltage:g} pu, max KCL <= {thresholds.kcl:g} pu"
    )
    print_table(
        out["rows"],
        [
            "system",
            "scenario",
            "method",
            "config",
            "runtime_s",
            "accepted",
            "rejected",
            "error",
            "voltage_mae",
            "qualified",
            "status",
        ],
    )
    print()
    print_table(
        out["speedups"], ["system", "scenario", "over", "ratio", "raptor_config", "baseline_config"]
    )


if __name__ == "__main__":
    main()
