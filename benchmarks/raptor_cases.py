"""RAPTOR on one fault or switching case per model family: CPU seconds of a warm solve,
intervals and error, for comparing two versions of the code side by side.

For every case: one solve to compile (or load), one timed solve on the process CPU clock, and a
Radau reference at rtol 1e-10 (error normalised by max(1, the state's range)). The scenarios:
wscc9 bus-7 fault, ieee39 bus-20 fault, ieee118 bus-60 fault (0.1-0.183 s, 1.1 s horizon),
emt_sm source switch-off at 0.05 s (0.5 s), emt_gfl's first two-step event (2 s).

    python benchmarks/raptor_cases.py [--cases wscc9 ieee39 ...] [--json]

To compare with an earlier commit, run the same file from a checkout of it, e.g.
``git worktree add /tmp/old COMMIT && cd /tmp/old && python /path/to/benchmarks/raptor_cases.py``
(the file puts the current directory first on ``sys.path``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.getcwd())

import numpy as np  # noqa: E402

CASES = ("wscc9", "ieee39", "emt_sm", "emt_gfl", "ieee118")


def scenario_for(name: str, system):  # noqa: ANN001
    from models.disturbances import BusFault, SourceSwitch
    from models.scenarios import make_scenario

    if name == "emt_sm":
        switch = SourceSwitch(source=system.names["source"][0], t=0.05)
        return make_scenario(system, switch, t_end=0.5)
    if name == "emt_gfl":
        from models.dq.presets import emt_gfl_events

        return make_scenario(system, next(iter(emt_gfl_events().values())), t_end=2.0)
    bus = {"wscc9": "bus7", "ieee39": "bus20", "ieee118": "bus60"}[name]
    return make_scenario(system, BusFault(bus=bus, t_fault=0.1, t_clear=0.183), t_end=1.1)


def measure(name: str) -> dict:
    from models.library import build_system
    from solvers import solve

    system = build_system(name)
    scenario = scenario_for(name, system)
    solve(system, scenario, "raptor")
    start = time.process_time()
    result = solve(system, scenario, "raptor")
    cpu = time.process_time() - start
    reference = solve(system, scenario, "radau", rtol=1e-10, atol=1e-12)
    scale = np.maximum(1.0, np.abs(reference.x_eval).max(axis=0))
    error = float(np.max(np.abs(result.x_eval - reference.x_eval) / scale))
    attempts = result.stats.accepted + result.stats.rejected
    return {
        "case": name,
        "cpu_s": cpu,
        "accepted": result.stats.accepted,
        "rejected": result.stats.rejected,
        "ms_per_attempt": 1e3 * cpu / max(attempts, 1),
        "error": error,
        "status": result.status.value,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    parser.add_argument("--json", action="store_true", help="one JSON object per case")
    args = parser.parse_args()
    import solvers

    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"code: {os.path.dirname(solvers.__file__)}; load average {load}; CPU clock")
    for name in args.cases:
        row = measure(name)
        if args.json:
            print(json.dumps(row))
        else:
            print(
                f"{name:8s} {row['cpu_s']:8.3f} s  {row['accepted']:5d} + {row['rejected']:<4d} "
                f"{row['ms_per_attempt']:7.2f} ms/attempt  error {row['error']:.2e}  "
                f"{row['status']}",
                flush=True,
            )


if __name__ == "__main__":
    main()
