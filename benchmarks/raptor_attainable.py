"""RAPTOR's attainable accuracy: the error against a tight reference, as a multiple of the
requested tolerance, for rtol 1e-7 down to 1e-11 (the table behind ``ATTAINABLE_RTOL`` in
``solvers/raptor/runner.py`` and the unattainable-tolerance warning).

Cases: ieee14 with a 1.1 s bolted fault at bus 8 (cleared at 0.183 s), and Robertson's stiff
kinetics (``tests/dae_examples.py``) to t = 40 on a log grid from 1e-4. Reference: Radau at
rtol 1e-12 / atol 1e-15. Error: max over the output grid of |x - x_ref| / max(|x_ref|, 1e-4)
per state (the tests' measure). atol = rtol / 1e4, at least 1e-14 (as the tests). CPU seconds
(``time.process_time``) of the warm solve, with the load average.

    python benchmarks/raptor_attainable.py [--rtols 1e-8 1e-9 ...] [--cases ieee14 robertson]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from dae_examples import robertson  # noqa: E402

from models.dae import Scenario  # noqa: E402
from models.disturbances import BusFault  # noqa: E402
from models.library import build_system  # noqa: E402
from models.scenarios import make_scenario  # noqa: E402
from solvers import solve  # noqa: E402


def case(name: str):  # noqa: ANN201
    if name == "ieee14":
        system = build_system("ieee14")
        scenario = make_scenario(
            system, BusFault(bus="bus8", t_fault=0.1, t_clear=0.183), t_end=1.1
        )
        return system, scenario
    system = robertson()
    grid = np.concatenate([[0.0], np.logspace(-4, 1.6, 40)])
    return system, Scenario(t_end=40.0, t_eval=grid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=["ieee14", "robertson"])
    parser.add_argument("--rtols", nargs="+", type=float,
                        default=[1e-7, 1e-8, 1e-9, 1e-10, 1e-11])  # fmt: skip
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (2 CPUs)")
    print(f"{'case':10} {'rtol':>7} {'error':>9} {'error/rtol':>10} {'accepted':>9} "
          f"{'rejected':>8} {'cpu s':>7}  warning")  # fmt: skip
    for name in args.cases:
        system, scenario = case(name)
        reference = solve(system, scenario, "radau", rtol=1e-12, atol=1e-15)
        scale = np.maximum(np.abs(reference.x_eval).max(axis=0), 1e-4)
        for rtol in args.rtols:
            options = {"rtol": rtol, "atol": max(rtol * 1e-4, 1e-14)}
            solve(system, scenario, "raptor", **options)  # warm: compile outside the timing
            start = time.process_time()
            result = solve(system, scenario, "raptor", **options)
            cpu = time.process_time() - start
            error = float(np.max(np.abs(result.x_eval - reference.x_eval) / scale))
            print(f"{name:10} {rtol:7.0e} {error:9.2e} {error / rtol:10.2f} "
                  f"{result.stats.accepted:9d} {result.stats.rejected:8d} {cpu:7.2f}  "
                  f"{'yes' if result.warnings else 'no'}", flush=True)  # fmt: skip
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (2 CPUs)")


if __name__ == "__main__":
    main()
