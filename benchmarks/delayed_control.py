"""The delayed-control trapezoid against the simultaneous one at the same step, on emt_gfl.

    python benchmarks/delayed_control.py [--dts 1e-4 2e-5] [--t-end 2.0] [--members 4]
                                         [--solo-t-end 0.6] [--json]

``trapezoid-delayed`` solves the network once per step with the controller states held at their
previous values, then the controller states alone (``solvers.trapezoid``); ``trapezoid`` solves
everything together. Both are timed on the process CPU clock in this one process (each solved
once first to compile): batched (``solve_batch``, ``--members`` scenarios of the paper's
two-step event, the platform's path for these small systems) and one run alone (``solve``,
a P-reference step over ``--solo-t-end``). For the solo runs the Newton iterations per step
are split by stage (counted around ``solvers.trapezoid``'s stages). The load average is printed
beside the table: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import load_average  # noqa: E402

METHODS = ("trapezoid", "trapezoid-delayed")


def _scenarios(system, members: int, t_end: float):
    from models.disturbances import DisturbanceSequence, InputStep
    from models.scenarios import make_scenario

    def one(k: int):
        steps = [
            InputStep(input="inv.P_ref", t=0.25 * t_end, scale=0.5 + 0.05 * k),
            InputStep(input="grid.E", t=0.6 * t_end, scale=0.95 - 0.01 * k),
        ]
        return make_scenario(system, DisturbanceSequence(steps=steps), t_end=t_end, n_eval=401)

    return [one(k) for k in range(members)]


def _stage_counts():
    """Wrap the stages of ``solvers.trapezoid`` to record (stage, Newton iterations) per call."""
    from solvers import trapezoid

    calls: list[tuple[str, int]] = []
    stages = [getattr(trapezoid, name, None) for name in ("_Stage", "_ControllerStage")]
    for cls in [stage for stage in stages if stage is not None]:  # older commits: _Stage only
        original = cls.advance

        def advance(self, *args, _original=original, **kwargs):
            out = _original(self, *args, **kwargs)
            calls.append((type(self).__name__, int(out.iterations)))
            return out

        cls.advance = advance
    return calls


def _row(mode: str, dt: float, method: str, cpu: float, stats, **extra) -> dict:
    return {
        "mode": mode,
        "dt": dt,
        "method": method,
        "cpu_s": cpu,
        "steps": stats.accepted,
        "newton_per_step": stats.newton_iterations / stats.accepted,
        "lu": stats.lu_factorizations,
        **extra,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dts", type=float, nargs="+", default=[1e-4, 2e-5])
    parser.add_argument("--t-end", type=float, default=2.0)
    parser.add_argument("--members", type=int, default=4)
    parser.add_argument("--solo-t-end", type=float, default=0.6)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from models.disturbances import InputStep
    from models.library import build_system
    from models.scenarios import make_scenario
    from solvers import solve, solve_batch

    system = build_system("emt_gfl")
    rows = []
    before = load_average()
    batch = _scenarios(system, args.members, args.t_end)
    for dt in args.dts:
        for method in METHODS:
            solve_batch(system, batch, method, dt=dt)  # compile
            start = time.process_time()
            results = solve_batch(system, batch, method, dt=dt)
            cpu = (time.process_time() - start) / len(batch)
            rows.append(_row(f"batched x{len(batch)}", dt, method, cpu, results[0].stats))
    calls = _stage_counts()
    alone = make_scenario(
        system,
        InputStep(input="inv.P_ref", t=0.4 * args.solo_t_end, scale=0.5),
        t_end=args.solo_t_end,
        n_eval=61,
    )
    dt = args.dts[0]
    for method in METHODS:
        solve(system, alone, method, dt=dt)  # compile
        calls.clear()
        start = time.process_time()
        result = solve(system, alone, method, dt=dt)
        cpu = time.process_time() - start
        stats = result.stats
        labels = {"_Stage": "network" if method != "trapezoid" else "step",
                  "_ControllerStage": "controllers"}  # fmt: skip
        per_stage = {
            labels[name]: sum(it for n, it in calls if n == name) / stats.accepted
            for name in sorted({n for n, _ in calls}, reverse=True)
        }
        rows.append(_row("alone", dt, method, cpu, stats, newton_per_step_by_stage=per_stage))
    after = load_average()
    if args.json:
        print(json.dumps({"load_before": before, "load_after": after, "rows": rows}, indent=2))
        return
    print(f"emt_gfl, CPU seconds per run; before: {before}; after: {after}")
    print(
        f"{'mode':12s} {'dt':>7s} {'method':18s} {'CPU s':>8s} {'steps':>7s} {'Newton/step':>12s}"
        f" {'LU':>4s}  by stage"
    )
    for r in rows:
        stages = r.get("newton_per_step_by_stage", {})
        split = ", ".join(f"{k}: {v:.2f}" for k, v in stages.items())
        print(
            f"{r['mode']:12s} {r['dt']:7.0e} {r['method']:18s} {r['cpu_s']:8.3f} "
            f"{r['steps']:7d} {r['newton_per_step']:12.2f} {r['lu']:4d}  {split}"
        )
    for mode in {r["mode"] for r in rows}:
        for dt in args.dts:
            pair = {r["method"]: r["cpu_s"] for r in rows if r["mode"] == mode and r["dt"] == dt}
            if len(pair) == 2:
                ratio = pair["trapezoid-delayed"] / pair["trapezoid"]
                print(f"{mode}, dt {dt:g}: delayed / simultaneous CPU = {ratio:.2f}")


if __name__ == "__main__":
    main()
