"""Runs solved together: CPU seconds per run and runs per CPU second for batch sizes 1, 8, 64.

    python benchmarks/batched.py [--networks wscc9 ieee39] [--batches 1 8 64] [--t-end 1.0]
                                 [--dt 1e-3] [--method trapezoid|raptor] [--json] [--out F]
                                 [--alone-sample K]

For each network, ``B`` scenarios of one campaign (a bolted fault at each bus in turn, cleared
after 50 ms, each from its own perturbed initial condition) are solved by the fixed-step
trapezoid through ``solvers.solve_batch``: B = 1 is the one-at-a-time path (``solve``), larger
B the vectorized batch (``solvers.trapezoid_batch``). ``--method raptor`` solves the members
with RAPTOR (default options, dense linear algebra) through its lockstep batch
(``solvers.raptor.batch``, called directly: the platform does not select it).
The same members are also solved one after the other with ``solve`` (warm), and the ratio
against them is printed beside the ratio against B = 1. Each batch is solved once to compile (the
compile seconds are reported apart), then timed on the process CPU clock (``time.process_time``;
XLA may use a second thread for large batches, which the CPU clock counts). Every batched
member is checked against its solo solve (largest state difference on the output grid).
The load average is printed beside the table: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import load_average  # noqa: E402


def scenarios(system, count: int, t_end: float):
    from pydantic import TypeAdapter

    from models.disturbances import Disturbance
    from models.scenarios import make_scenario

    buses = list(system.names["bus"])
    out = []
    for k in range(count):
        fault = {"kind": "bus_fault", "bus": buses[k % len(buses)], "t_fault": 0.1,
                 "t_clear": 0.15}  # fmt: skip
        parsed = TypeAdapter(Disturbance).validate_python(fault)
        out.append(
            make_scenario(
                system,
                parsed,
                t_end=t_end,
                ic_seed=k,
                ic_spread=0.2,
                n_eval=101,
                label=f"{fault['bus']} ic{k}",
            )  # fmt: skip
        )
    return out


def measure(
    network: str,
    batch: int,
    t_end: float,
    dt: float,
    method: str = "trapezoid",
    alone_sample: int | None = None,
) -> dict:
    """One row; ``alone_sample`` solves only that many members alone for the comparison (where a
    run alone is slow, as the trapezoid's per-step dispatches are on a GPU)."""
    import jax
    import numpy as np

    from models.library import build_system
    from solvers import solve, solve_batch
    from solvers.raptor.batch import solve_raptor_batch
    from solvers.raptor.options import RaptorOptions

    system = build_system(network)
    members = scenarios(system, batch, t_end)
    options = {"dt": dt} if method == "trapezoid" else {"linear_solver": "dense"}

    def together():
        if method == "raptor" and batch > 1:
            return solve_raptor_batch(system, members, RaptorOptions(**options))
        return solve_batch(system, members, method, **options)

    start = time.process_time()
    first = together()
    first_cpu = time.process_time() - start
    start, wall = time.process_time(), time.perf_counter()
    results = together()
    cpu, wall = time.process_time() - start, time.perf_counter() - wall
    sample = members[: alone_sample or batch]
    solve(system, sample[0], method, **options)  # compiled once, outside the timing
    start, alone_wall = time.process_time(), time.perf_counter()
    alone = [solve(system, sc, method, **options) for sc in sample]
    alone_cpu, alone_wall = time.process_time() - start, time.perf_counter() - alone_wall
    check = sample[: min(batch, 4)]
    worst = max(
        float(np.max(np.abs(r.x_eval - a.x_eval)))
        for r, a in zip(results[: len(check)], alone, strict=False)
    )
    return {
        "network": network,
        "method": method,
        "unknowns": system.n_x + system.n_z,
        "batch": batch,
        "cpu_per_run_s": cpu / batch,
        "runs_per_cpu_s": batch / cpu,
        "same_runs_alone_cpu_per_run_s": alone_cpu / len(sample),
        "wall_per_run_s": wall / batch,
        "same_runs_alone_wall_per_run_s": alone_wall / len(sample),
        "alone_sample": len(sample),
        "backend": jax.default_backend(),
        "device": str(jax.devices()[0]),
        "first_call_cpu_s": first_cpu,
        "compile_load_s": sum(r.stats.compile_seconds + r.stats.load_seconds for r in first),
        "steps_per_run": results[0].stats.accepted,
        "succeeded": sum(r is not None and r.succeeded for r in results),
        "max_diff_vs_solo": worst,
        "load": load_average(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--networks", nargs="+", default=["wscc9", "ieee39"])
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 8, 64])
    parser.add_argument("--t-end", type=float, default=1.0)
    parser.add_argument("--dt", type=float, default=1e-3)
    parser.add_argument("--method", choices=["trapezoid", "raptor"], default="trapezoid")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--alone-sample", type=int, help="members solved alone (default all)")
    parser.add_argument("--out", type=Path, help="also write the rows as JSON here, after each")
    args = parser.parse_args()
    rows = []
    for network in args.networks:
        for batch in args.batches:
            row = measure(network, batch, args.t_end, args.dt, args.method, args.alone_sample)
            rows.append(row)
            if args.out:
                args.out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M"),
                                                "rows": rows}, indent=1))  # fmt: skip
            if not args.json:
                r = rows[-1]
                solo = next(x for x in rows if x["network"] == network)["cpu_per_run_s"]
                print(
                    f"{network:7s} B={batch:3d}  {r['cpu_per_run_s'] * 1e3:8.1f} ms CPU/run  "
                    f"{r['runs_per_cpu_s']:7.2f} runs/CPU-s  x{solo / r['cpu_per_run_s']:5.2f} "
                    f"vs B=1  x{r['same_runs_alone_cpu_per_run_s'] / r['cpu_per_run_s']:5.2f} vs "
                    f"the same runs alone  compile+load {r['compile_load_s']:5.1f} s  "
                    f"ok {r['succeeded']}/{batch}  max|dx| vs solo {r['max_diff_vs_solo']:.1e}  "
                    f"{r['load']}  wall {r['wall_per_run_s'] * 1e3:.1f} ms/run, "
                    f"x{r['same_runs_alone_wall_per_run_s'] / r['wall_per_run_s']:.2f} vs alone "
                    f"[{r['backend']}]",
                    flush=True,
                )
    if args.json:
        print(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M"), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
