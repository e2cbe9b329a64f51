"""RAPTOR's interval counts and rejection share on every case of the model library, and on the
wide-time-scale Robertson problem against Radau (issue: RAPTOR, step control item).

For each network: one 1 s disturbance (the model-library benchmark's fault at the heaviest load
bus, the cascaded line's load step, the EMT machine's switch-off; the dq networks' and the EMT
inverter's from ``benchmarks/dq_networks.py``; ``--severe`` uses the dq faults), one solve to
compile or load, one timed solve (CPU clock) at rtol 1e-6: accepted and rejected intervals,
rejections as a share of attempts, Newton iterations and numeric factorizations (the
factorization reuse of ``solvers.raptor.runner.H_KEEP`` shows as fewer factorizations than
attempts times slots). Robertson's kinetics (``tests/dae_examples.robertson``) to t = 1e11 with
atol = rtol / 100: RAPTOR's accepted intervals against Radau's steps at the same tolerances and
both errors against Radau at rtol 1e-12.

    python benchmarks/raptor_library.py [--cases wscc9 emt_gfl ...] [--severe]
                                        [--robertson-rtols 1e-6 1e-8] [--json]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from benchmarks.common import dump, print_table  # noqa: E402

LARGE = ("case1354pegase", "case2869pegase")
"""Left out unless named: minutes of network building and compiling."""


def scenario_for(name: str, system, severe: bool):  # noqa: ANN001
    from pydantic import TypeAdapter

    from benchmarks import dq_networks, model_library
    from models.disturbances import Disturbance
    from models.scenarios import make_scenario

    if name.startswith("dq_") or name == "emt_gfl":
        data = dq_networks.disturbance_for(name, system, severe, 1.0)
    else:
        data = model_library.disturbance_for(system)
    return make_scenario(system, TypeAdapter(Disturbance).validate_python(data), t_end=1.0)


def measure_case(name: str, severe: bool) -> dict:
    from models.library import build_system
    from solvers import solve

    system = build_system(name)
    scenario = scenario_for(name, system, severe)
    solve(system, scenario, "raptor")
    start = time.process_time()
    result = solve(system, scenario, "raptor")
    cpu = time.process_time() - start
    s = result.stats
    attempts = s.accepted + s.rejected
    return {
        "case": name,
        "n": system.n_x + system.n_z,
        "cpu_s": round(cpu, 3),
        "accepted": s.accepted,
        "rejected": s.rejected,
        "rejected_share": round(s.rejected / max(attempts, 1), 3),
        "newton": s.newton_iterations,
        "factorizations": s.lu_factorizations,
        "status": result.status.value,
    }


def measure_robertson(rtol: float) -> list[dict]:
    from dae_examples import robertson

    from models.dae import Scenario
    from solvers import solve

    system, scenario = robertson(), Scenario(t_end=1e11)
    reference = solve(system, scenario, "radau", rtol=1e-12, atol=1e-14)
    rows = []
    for method in ("raptor", "radau"):
        solve(system, scenario, method, rtol=rtol, atol=rtol / 100)
        start = time.process_time()
        result = solve(system, scenario, method, rtol=rtol, atol=rtol / 100)
        cpu = time.process_time() - start
        significant = np.abs(reference.x_eval) > 1e-20
        rel = np.abs(result.x_eval - reference.x_eval) / np.maximum(
            np.abs(reference.x_eval), 1e-300
        )
        rows.append(
            {
                "method": method,
                "rtol": rtol,
                "cpu_s": round(cpu, 3),
                "accepted": result.stats.accepted,
                "rejected": result.stats.rejected,
                "max_rel_error": float(np.max(np.where(significant, rel, 0.0))),
                "max_abs_error": float(np.max(np.abs(result.x_eval - reference.x_eval))),
                "status": result.status.value,
            }
        )
    raptor, radau = rows
    raptor["intervals_vs_radau"] = round(raptor["accepted"] / max(radau["accepted"], 1), 2)
    return rows


def main() -> None:
    from models.library import network_names

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = [n for n in network_names() if n not in LARGE]
    parser.add_argument("--cases", nargs="*", default=default, choices=network_names())
    parser.add_argument("--severe", action="store_true", help="faults on the dq networks")
    parser.add_argument("--robertson-rtols", nargs="*", type=float, default=[1e-6, 1e-8])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    cases = [measure_case(name, args.severe) for name in args.cases]
    robertson = [row for rtol in args.robertson_rtols for row in measure_robertson(rtol)]
    if args.json:
        print(dump("raptor_library", cases + robertson, []))
        return
    print(f"RAPTOR on the model library, rtol 1e-6, CPU clock; load average {load}")
    print_table(cases, list(cases[0]) if cases else [])
    print(f"\nRobertson to t = 1e11, atol = rtol / 100, CPU clock; load average {load}")
    print_table(robertson, list(dict.fromkeys(k for row in robertson for k in row)))


if __name__ == "__main__":
    main()
