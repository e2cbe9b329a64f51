"""The project's power flow (``models.powerflow``) against pandapower's own Newton on the same
networks: largest voltage difference, iterations, and CPU seconds of each in this process.

    python benchmarks/power_flow.py [--cases case9 case118 ...] [--json]

For each pandapower case, the grid is imported through pandapower's converter
(``models.cases.pandapower_grid``) and solved by the project's Newton; then pandapower's
``runpp`` (``numba=False``, 1e-10 MVA, the tolerance the library used before) solves the same
network. CPU seconds on the process clock (``time.process_time``); the ratio is pandapower's
over ours, measured in the same process. The load average is printed beside the table.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import dump, load_average, print_table  # noqa: E402

CASES = ("case9", "case14", "case39", "case57", "case118", "case_illinois200", "case300",
         "case1354pegase", "case2869pegase", "case9241pegase")  # fmt: skip


def measure(case: str) -> dict:
    import pandapower as pp
    import pandapower.networks as pn

    from models.cases.pandapower_grid import grid_from_pandapower
    from models.powerflow import solve_power_flow

    net = getattr(pn, case)()
    start = time.process_time()
    solved = solve_power_flow(grid_from_pandapower(net, case))
    ours = time.process_time() - start
    start = time.process_time()
    pp.runpp(net, numba=False, tolerance_mva=1e-10, calculate_voltage_angles=True)
    theirs = time.process_time() - start
    bus = np.real(np.asarray(net._ppc["bus"]))
    v_pp = bus[:, 7] * np.exp(1j * np.deg2rad(bus[:, 8]))
    return {
        "case": case,
        "buses": solved.n_bus,
        "max_dv_pu": float(np.max(np.abs(solved.voltage - v_pp))),
        "iterations": solved.info["power_flow_iterations"],
        "pandapower_iterations": int(net._ppc.get("iterations", -1)),
        "cpu_s": ours,
        "pandapower_cpu_s": theirs,
        "ratio": theirs / ours,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rows = [measure(case) for case in args.cases]
    if args.json:
        print(dump("power_flow", rows, []))
        return
    print(f"load average: {load_average()}")
    print_table(rows, list(rows[0]))


if __name__ == "__main__":
    main()
