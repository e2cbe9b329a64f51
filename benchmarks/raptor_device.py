"""RAPTOR throughput with the interval loop on the device: 1,000 ieee118 fault runs against the
one-at-a-time solver on this machine's CPU.

    python benchmarks/raptor_device.py [--network ieee118] [--runs 1000] [--width 250]
        [--cpu-sample 20] [--reference-sample 2] [--save F.npz] [--compare F.npz --device-json F]
        [--budget-s 420] [--json]

Scenarios (``scenarios``): a bolted fault at each bus in turn (x = 1e-3 pu at t = 0.1 s),
cleared after 50-100 ms; every second run also trips a branch at the clearing time; 1 s
horizon, from the equilibrium, 101 grid points. The device program (``solvers.raptor.device``:
the members' whole interval loop in one compiled program, block-Schur linear algebra) solves
all ``--runs`` in groups of ``--width``; it is compiled once (reported apart) and then timed on
the wall clock (the GPU's work is not on the process CPU clock). ``--budget-s`` stops after the
group that crosses it and extrapolates from the groups done (said in the output).

The CPU baseline is ``solve(system, scenario, "raptor")`` one run at a time (default options:
KLU on ieee118), ``--cpu-sample`` runs of the same list, warm, on the process CPU clock,
extrapolated to ``--runs``; the 2-core figure assumes two such workers, one per core (the
platform's deployment), i.e. twice the one-core rate. Accuracy: each device member of the sample
against the same run solved alone, and ``--reference-sample`` of them against a tight
reference (``common.reference_method``), the largest state difference on the grid.

On a machine with an accelerator and no pandapower (``benchmarks/offline_case.py``), run with
``--case-pickle``, ``--cpu-sample 0 --save F.npz``; then here ``--compare F.npz --device-json J``
measures the CPU side on the same scenarios and prints the table with both.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def scenarios(system, count: int, t_end: float = 1.0, n_eval: int = 101) -> list:
    """The campaign's scenarios (module doc)."""
    from pydantic import TypeAdapter

    from models.disturbances import Disturbance
    from models.scenarios import make_scenario

    buses = list(system.names["bus"])
    branches = list(system.names["branch"])
    out = []
    for k in range(count):
        t_clear = round(0.15 + 0.05 * ((k // len(buses)) % 9) / 8, 6)
        fault = {"kind": "bus_fault", "bus": buses[k % len(buses)], "t_fault": 0.1,
                 "t_clear": t_clear, "x": 1e-3}  # fmt: skip
        spec = fault
        if k % 2:
            trip = {"kind": "branch_trip", "branch": branches[(7 * k) % len(branches)],
                    "t": t_clear}  # fmt: skip
            spec = {"kind": "sequence", "steps": [fault, trip]}
        parsed = TypeAdapter(Disturbance).validate_python(spec)
        out.append(make_scenario(system, parsed, t_end=t_end, n_eval=n_eval, label=f"run{k}"))
    return out


def device_side(args) -> dict:
    """Solve the runs with the device program; returns the row (and saves members)."""
    import jax
    import numpy as np

    from benchmarks.common import load_average
    from models.library import build_system
    from solvers.raptor.device import STATUS_NAMES, DeviceProgram, solve_raptor_device
    from solvers.raptor.options import RaptorOptions

    start = time.perf_counter()
    system = build_system(args.network)
    members = scenarios(system, args.runs)
    setup = time.perf_counter() - start
    opts = RaptorOptions()
    program = DeviceProgram(system, opts, args.width, 3, members[0].evaluation_grid(), args.linalg)
    done, results, wall = 0, [], 0.0
    groups = range(0, args.runs, args.width)
    for g0 in groups:
        batch = solve_raptor_device(system, members[g0 : g0 + args.width], opts, program=program)
        results.append(batch)
        wall += batch.run_seconds
        done += len(batch.status)
        print(f"  group at {g0}: {batch.run_seconds:.2f} s wall, rounds {batch.rounds.tolist()}, "
              f"ok {int(batch.succeeded.sum())}/{len(batch.status)}", flush=True)  # fmt: skip
        if wall > args.budget_s:
            break
    cat = {k: np.concatenate([getattr(b, k) for b in results]) for k in
           ("status", "accepted", "rejected", "newton_iterations", "x_eval")}  # fmt: skip
    if args.save:
        k = max(args.sample, 1)
        np.savez_compressed(args.save, x_eval=cat["x_eval"][:k], status=cat["status"][:k],
                            accepted=cat["accepted"][:k], rejected=cat["rejected"][:k])  # fmt: skip
    failed = {STATUS_NAMES[int(s)]: int((cat["status"] == s).sum()) for s in set(cat["status"])}
    per_run = wall / done
    return {
        "network": args.network,
        "unknowns": system.n_x + system.n_z,
        "runs": args.runs,
        "runs_done": done,
        "extrapolated": done < args.runs,
        "width": args.width,
        "linalg": args.linalg,
        "clock": "wall",
        "device_wall_s": wall,
        "device_per_run_s": per_run,
        "device_runs_per_s": 1.0 / per_run,
        "device_wall_for_runs_s": per_run * args.runs,
        "compile_s": program.compile_seconds,
        "setup_s": setup,
        "rounds_per_group": [b.rounds.tolist() for b in results],
        "accepted_mean": float(cat["accepted"].mean()),
        "rejected_mean": float(cat["rejected"].mean()),
        "status_counts": failed,
        "backend": jax.default_backend(),
        "device": str(jax.devices()[0].device_kind),
        "load": load_average(),
    }


def cpu_side(args, device_x_eval, device_status) -> dict:
    """The one-at-a-time CPU baseline and the accuracy of the device members."""
    import numpy as np

    from benchmarks.common import load_average, reference_method
    from models.library import build_system
    from solvers import solve

    system = build_system(args.network)
    sample = scenarios(system, args.runs)[: args.sample]
    solve(system, sample[0], "raptor")  # compiled outside the timing
    alone, cpu = [], []
    for sc in sample:
        start = time.process_time()
        alone.append(solve(system, sc, "raptor"))
        cpu.append(time.process_time() - start)
    per_run = float(np.mean(cpu))
    ok = [i for i in range(len(sample)) if device_status[i] == 1 and alone[i].succeeded]
    vs_solo = max(float(np.max(np.abs(device_x_eval[i] - alone[i].x_eval))) for i in ok)
    method, config = reference_method()
    ref_err, solo_ref_err = [], []
    for i in ok[: args.reference_sample]:
        ref = solve(system, sample[i], method, **config)
        ref_err.append(float(np.max(np.abs(device_x_eval[i] - ref.x_eval))))
        solo_ref_err.append(float(np.max(np.abs(alone[i].x_eval - ref.x_eval))))
    return {
        "cpu_sample": len(sample),
        "cpu_clock": "process CPU (time.process_time), one run at a time, warm",
        "cpu_per_run_s": per_run,
        "cpu_runs_per_s_one_core": 1.0 / per_run,
        "cpu_runs_per_s_two_cores": 2.0 / per_run,
        "cpu_s_for_runs_two_cores": per_run * args.runs / 2.0,
        "cpu_accepted_mean": float(np.mean([r.stats.accepted for r in alone])),
        "members_compared": len(ok),
        "max_state_diff_vs_solo": vs_solo,
        "reference": f"{method} {config}",
        "max_state_err_vs_reference": max(ref_err) if ref_err else None,
        "solo_max_state_err_vs_reference": max(solo_ref_err) if solo_ref_err else None,
        "cpu_load": load_average(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--network", default="ieee118")
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--width", type=int, default=250)
    parser.add_argument("--linalg", choices=["schur", "dense"], default="schur")
    parser.add_argument("--cpu-sample", dest="sample", type=int, default=20)
    parser.add_argument("--reference-sample", type=int, default=2)
    parser.add_argument("--budget-s", type=float, default=420.0)
    parser.add_argument("--save", type=Path, help="device members of the sample (npz)")
    parser.add_argument("--compare", type=Path, help="a --save file from the device run")
    parser.add_argument("--device-json", type=Path, help="the device run's --json output")
    parser.add_argument("--case-pickle", type=Path, help="offline_case.install this first")
    parser.add_argument("--skip-cpu", action="store_true", help="device side only (with --save)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.case_pickle:
        from benchmarks.offline_case import install

        install(args.case_pickle)
    import numpy as np

    if args.compare:
        saved = np.load(args.compare)
        row = json.loads(args.device_json.read_text())["rows"][0] if args.device_json else {}
        args.sample = min(args.sample, len(saved["status"]))
        row.update(cpu_side(args, saved["x_eval"], saved["status"]))
    else:
        if args.save is None and args.sample:
            args.save = Path("/tmp/raptor_device_members.npz")
        row = device_side(args)
        if args.sample and not args.skip_cpu:
            saved = np.load(args.save)
            row.update(cpu_side(args, saved["x_eval"], saved["status"]))
    if "cpu_per_run_s" in row:
        row["speedup_vs_two_cores"] = row["device_runs_per_s"] / row["cpu_runs_per_s_two_cores"]
        row["speedup_vs_one_core"] = row["device_runs_per_s"] / row["cpu_runs_per_s_one_core"]
    if args.json:
        print(json.dumps({"benchmark": "raptor_device", "date": time.strftime("%Y-%m-%d %H:%M"),
                          "rows": [row]}, indent=1))  # fmt: skip
        return
    r = row
    done = f"{r['runs_done']} done" + (", extrapolated" if r["extrapolated"] else "")
    print(f"{r['network']} ({r['unknowns']} unknowns), {r['runs']} runs, device {r['device']} "
          f"[{r['backend']}], width {r['width']}, {r['linalg']}")  # fmt: skip
    print(f"  device: {r['device_per_run_s'] * 1e3:.1f} ms/run wall, "
          f"{r['device_runs_per_s']:.1f} runs/s, {r['device_wall_for_runs_s']:.1f} s for "
          f"{r['runs']} ({done}), compile {r['compile_s']:.1f} s, status {r['status_counts']}, "
          f"{r['load']}")  # fmt: skip
    if "cpu_per_run_s" in r:
        print(f"  CPU one at a time: {r['cpu_per_run_s'] * 1e3:.1f} ms CPU/run "
              f"({r['cpu_sample']} runs), 2 cores {r['cpu_runs_per_s_two_cores']:.2f} runs/s, "
              f"{r['cpu_s_for_runs_two_cores']:.0f} s for {r['runs']}; "
              f"{r['cpu_load']}")  # fmt: skip
        print(f"  ratio: {r['speedup_vs_two_cores']:.2f}x the 2-core CPU "
              f"({r['speedup_vs_one_core']:.2f}x one core)")  # fmt: skip
        print(f"  accuracy: max |x_device - x_alone| {r['max_state_diff_vs_solo']:.2e} over "
              f"{r['members_compared']} members; vs {r['reference']}: device "
              f"{r['max_state_err_vs_reference']}, alone "
              f"{r['solo_max_state_err_vs_reference']}")  # fmt: skip


if __name__ == "__main__":
    main()
