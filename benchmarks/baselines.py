"""Baseline integrators on the WSCC 9-bus system (and, with ``--systems``, larger cases): speed,
work and accuracy per configuration.

For every baseline method and several tolerances (step sizes for the fixed-step methods) on a
bus fault, this measures the solve time (compile time apart), accepted and rejected steps, RHS
calls and the error against a Kvaerno5 reference at rtol 1e-10 computed in the same run; and
the effect of the exact reduced Jacobian (RHS calls and time with and without it, radau and bdf).
Speed-ups are ratios of the fastest accuracy-qualified configuration of each method over Radau's,
measured in the same process on the same inputs. Absolute times are reported, never asserted.

Each system gets a plan (``plan_for``): the 9-bus system and other small cases the full sweep;
larger ones (ieee39, ieee57, ieee118) a reduced one (two tolerances, one step size, one timed
run per configuration) so that ieee118 finishes in minutes, with configurations known to be
hopeless there (BDF with a differenced Jacobian: 39 minutes on ieee118) skipped and listed
with the reason. Failures (an explicit method running out of
steps on a stiff case) are results, recorded with their status.

    python benchmarks/baselines.py                           # human tables, wscc9
    python benchmarks/baselines.py --systems wscc9 ieee118   # both, each with its plan
    python benchmarks/baselines.py --json                    # one JSON object (DESIGN.md 6)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from models.dae import DAESystem, Scenario
from models.disturbances import BusFault
from models.library import build_system, network_names
from models.scenarios import make_scenario
from solvers import METHODS, SolveResult, solve

SYSTEMS = ("wscc9",)
"""The networks benchmarked by default."""
FAULTS = {"wscc9": BusFault(bus="bus7", t_fault=0.1, t_clear=0.2)}
"""The disturbance per network: a 100 ms three-phase fault (x = 1e-3 pu), at bus 7 on the
9-bus system and at the largest load's bus elsewhere (``fault_for``)."""
T_END = 1.0
"""Horizon (s)."""
N_EVAL = 201
"""Evaluation grid on which every run is compared with the reference."""
REFERENCE = ("kvaerno5", {"rtol": 1e-10, "atol": 1e-12})
"""The high-accuracy reference configuration, on every system (the platform's reference;
measured within 4e-10 of Radau at the same tolerances on ieee14/39/57/118 faults)."""
TOLERANCES = (1e-3, 1e-6, 1e-8)
"""rtol of the adaptive methods (atol = rtol / 100)."""
STEPS = (2e-3, 1e-3, 5e-4)
"""dt of the fixed-step methods (s)."""
ADAPTIVE = ("radau", "bdf", "lsoda", "rk45", "dop853", "kvaerno5", "tsit5", "dopri5", "ida")
"""Adaptive methods benchmarked (ida only when scikit-sundae is installed)."""
FIXED = ("trapezoid", "trapezoid-delayed")
"""Fixed-step methods benchmarked."""
JACOBIAN_METHODS = ("radau", "bdf")
"""Methods whose exact-Jacobian effect is measured, at JACOBIAN_RTOL."""
JACOBIAN_RTOL = 1e-6
"""Tolerance of the exact-Jacobian comparison."""
DIFFERENCED_JACOBIAN_MAX_STATES = {"bdf": 200}
"""Above this many states the method's differenced-Jacobian run is skipped (the exact one still
runs): on ieee118 (499 states) SciPy's BDF with a differenced Jacobian took 659,806 RHS calls
and 2,329 s against 398 calls and 7 s with the exact one (Radau: 4,124 calls, 21 s)."""
STATE_ERROR_MAX = 1e-4
"""Qualification: largest state error, each state scaled by max(1, its reference magnitude)."""
VOLTAGE_MAE_MAX = 1e-4
"""Qualification: largest mean absolute bus-voltage error (pu)."""
KCL_MAX = 1e-6
"""Qualification: largest nodal current mismatch at the samples (pu)."""
BASELINE = "radau"
"""Speed-ups are expressed over this method's fastest qualified configuration."""


@dataclass(frozen=True)
class Plan:
    """The configurations run on one system."""

    name: str
    tolerances: tuple[float, ...]
    steps: tuple[float, ...]
    max_repeats: int | None = None
    """Timed runs per configuration at most (None: ``--repeats``)."""
    skip: dict[str, str] = field(default_factory=dict)
    """``method`` or ``method@value`` (rtol or dt) -> why it is not run."""

    def skipped(self, method: str, value: float) -> str | None:
        return self.skip.get(f"{method}@{value:g}") or self.skip.get(method)


FULL = Plan("full", TOLERANCES, STEPS)
"""Every method, every tolerance and step size, ``--repeats`` timed runs."""
REDUCED = Plan("reduced", (1e-3, 1e-6), (1e-3,), max_repeats=1)
"""Large cases: two tolerances, one step size, one timed run (compile time is apart already;
repeats only trim timing noise). No configuration of the sweep is skipped: on ieee118 each
ran in under 30 s on a loaded two-core machine (the explicit ones are stability-limited, ~350
steps; dop853 fails early, recorded, when a stage leaves the domain of the algebraic solve).
The differenced-Jacobian BDF run is (DIFFERENCED_JACOBIAN_MAX_STATES)."""
FULL_PLAN_MAX_STATES = 60
"""Systems with at most this many differential states get the full plan (wscc9 21, ieee14 58;
ieee57 76, ieee39 103, ieee118 499 get the reduced one)."""


def plan_for(system: DAESystem, choice: str = "auto") -> Plan:
    if choice == "full" or (choice == "auto" and system.n_x <= FULL_PLAN_MAX_STATES):
        return FULL
    return REDUCED


def fault_for(name: str, system: DAESystem) -> BusFault:
    """FAULTS[name], else a 100 ms fault at the bus of the largest load (as the model tests)."""
    if name in FAULTS:
        return FAULTS[name]
    loads = system.names.get("load", ())
    if not loads:
        raise ValueError(f"network {name!r} has no load bus to fault; add it to FAULTS")
    bus = loads[int(np.argmax(system.params["load_g"]))]
    return BusFault(bus=bus, t_fault=0.1, t_clear=0.2)


@dataclass
class Row:
    system: str
    method: str
    config: dict[str, Any]
    result: SolveResult
    runtime_s: float
    error: float
    v_mae: float
    kcl: float

    @property
    def qualified(self) -> bool:
        return (
            self.result.succeeded
            and self.error <= STATE_ERROR_MAX
            and self.v_mae <= VOLTAGE_MAE_MAX
            and self.kcl <= KCL_MAX
        )

    def as_json(self, scenario: str) -> dict[str, Any]:
        s = self.result.stats
        return {
            "system": self.system,
            "scenario": scenario,
            "method": self.method,
            "config": self.config,
            "runtime_s": self.runtime_s,
            "compile_s": s.compile_seconds,
            "accepted": s.accepted,
            "rejected": s.rejected,
            "error": _finite(self.error),
            "qualified": self.qualified,
            "status": str(self.result.status),
            "v_mae": _finite(self.v_mae),
            "kcl_max": _finite(self.kcl),
            "work": {
                "rhs_evaluations": s.rhs_evaluations,
                "newton_iterations": s.newton_iterations,
                "algebraic_iterations": s.algebraic_iterations,
                "lu_factorizations": s.lu_factorizations,
            },
        }


def _finite(value: float) -> float | None:
    """JSON has no infinity: a failed run's errors are null."""
    return value if np.isfinite(value) else None


def _errors(result: SolveResult, reference: SolveResult) -> tuple[float, float, float]:
    if not result.succeeded:
        return np.inf, np.inf, np.inf
    scale = np.maximum(1.0, np.max(np.abs(reference.x_eval), axis=0))
    error = float(np.max(np.abs(result.x_eval - reference.x_eval) / scale))
    volts = [i for i, name in enumerate(reference.output_names) if name.startswith("V[")]
    v_mae = float(np.max(np.mean(np.abs(result.y_eval[:, volts] - reference.y_eval[:, volts]), 0)))
    return error, v_mae, float(np.max(result.output("kcl_max")))


CLOCKS = ("cpu", "wall")
CLOCK = "cpu"
"""Clock of the reported solve times (``--clock``): the process CPU clock by default (wall-clock
ratios flip on a shared machine), or the solver's own wall-clock ``solve_seconds``."""


def _measure(
    system: DAESystem, scenario: Scenario, method: str, config: dict, repeats: int
) -> tuple[SolveResult, float]:
    """The result of the first run (its compile time included in stats) and the fastest solve
    time over ``repeats`` runs on ``CLOCK`` (the first run's compile seconds subtracted); one
    progress line on stderr."""

    def timed() -> tuple[SolveResult, float]:
        start = time.process_time()
        result = solve(system, scenario, method, **config)
        cpu = time.process_time() - start - result.stats.compile_seconds
        return result, cpu if CLOCK == "cpu" else result.stats.solve_seconds

    first, first_time = timed()
    times = [first_time]
    for _ in range(repeats - 1):
        times.append(timed()[1])
    print(
        f"[{system.name}] {method} {_config_text(config)}: {first.status}, {min(times):.2f} s "
        f"(+{first.stats.compile_seconds:.1f} s compile)",
        file=sys.stderr,
        flush=True,
    )
    return first, min(times)


def _available(method: str) -> bool:
    if method != "ida":
        return True
    try:
        import sksundae  # noqa: F401
    except ImportError:
        return False
    return True


def configurations(plan: Plan = FULL) -> tuple[list[tuple[str, dict[str, Any]]], list[dict]]:
    """The configurations to run under ``plan`` and the skipped ones, each with its reason."""
    configs: list[tuple[str, dict[str, Any]]] = []
    skipped: list[dict] = []
    candidates = [
        (m, {"rtol": r, "atol": r * 1e-2}, r) for m in ADAPTIVE for r in plan.tolerances
    ] + [(m, {"dt": dt}, dt) for m in FIXED for dt in plan.steps]
    for method, config, value in candidates:
        reason = None if _available(method) else "scikit-sundae is not installed"
        reason = reason or plan.skipped(method, value)
        if reason is None:
            configs.append((method, config))
        else:
            skipped.append({"method": method, "config": config, "reason": reason})
    return configs, skipped


def run(
    repeats: int, systems: tuple[str, ...] = SYSTEMS, plan_choice: str = "auto"
) -> dict[str, Any]:
    rows: list[Row] = []
    labels: dict[str, str] = {}
    references, jacobian, skipped, plans = [], [], [], {}
    for name in systems:
        system = build_system(name)
        plan = plan_for(system, plan_choice)
        reps = min(repeats, plan.max_repeats or repeats)
        plans[name] = {
            "name": plan.name,
            "tolerances": list(plan.tolerances),
            "steps": list(plan.steps),
            "repeats": reps,
        }
        fault = fault_for(name, system)
        scenario = make_scenario(system, fault, t_end=T_END, n_eval=N_EVAL)
        labels[name] = (
            f"bus_fault {fault.bus} {fault.t_fault:g}-{fault.t_clear:g} s, t_end {T_END:g} s"
        )
        reference, ref_time = _measure(system, scenario, REFERENCE[0], REFERENCE[1], 1)
        if not reference.succeeded:
            raise RuntimeError(f"the reference failed on {name}: {reference.message}")
        references.append(
            {
                "system": name,
                "scenario": labels[name],
                "method": REFERENCE[0],
                "config": REFERENCE[1],
                "runtime_s": ref_time,
                "compile_s": reference.stats.compile_seconds,
                "accepted": reference.stats.accepted,
                "rejected": reference.stats.rejected,
            }
        )
        configs, skips = configurations(plan)
        skipped += [{"system": name, **skip} for skip in skips]
        for method, config in configs:
            result, runtime = _measure(system, scenario, method, config, reps)
            rows.append(Row(name, method, config, result, runtime, *_errors(result, reference)))
        for method in JACOBIAN_METHODS:
            jacobian.append(_jacobian_effect(name, system, scenario, method, reps))
    return {
        "benchmark": "baselines",
        "machine": _machine(),
        "plans": plans,
        "references": references,
        "rows": [row.as_json(labels[row.system]) for row in rows],
        "speedups": _speedups(rows),
        "jacobian": jacobian,
        "skipped": skipped,
    }


def _jacobian_effect(
    name: str, system: DAESystem, scenario: Scenario, method: str, repeats: int
) -> dict[str, Any]:
    """RHS calls and solve time of ``method`` at JACOBIAN_RTOL with the exact reduced Jacobian
    and with SciPy's differenced one (None where skipped, with the reason)."""
    config = {"rtol": JACOBIAN_RTOL, "atol": JACOBIAN_RTOL * 1e-2}
    with_j, t_with = _measure(system, scenario, method, {**config, "exact_jacobian": True}, repeats)
    limit = DIFFERENCED_JACOBIAN_MAX_STATES.get(method)
    skipped = None
    if limit is not None and system.n_x > limit:
        skipped = (
            f"differenced Jacobian skipped above {limit} states (this system: {system.n_x}); "
            "on ieee118 it took 659,806 RHS calls and 2,329 s"
        )
        without_j, t_without = None, None
    else:
        without_j, t_without = _measure(
            system, scenario, method, {**config, "exact_jacobian": False}, repeats
        )
    return {
        "system": name,
        "method": method,
        "config": {"rtol": JACOBIAN_RTOL},
        "rhs_exact": with_j.stats.rhs_evaluations,
        "rhs_differenced": without_j.stats.rhs_evaluations if without_j else None,
        "status_exact": str(with_j.status),
        "status_differenced": str(without_j.status) if without_j else "skipped",
        "runtime_exact_s": t_with,
        "runtime_differenced_s": t_without,
        "time_ratio": t_without / t_with if t_without is not None else None,
        "skipped": skipped,
    }


def _speedups(rows: list[Row]) -> list[dict[str, Any]]:
    fastest: dict[tuple[str, str], float] = {}
    for row in rows:
        if row.qualified:
            key = (row.system, row.method)
            fastest[key] = min(fastest.get(key, np.inf), row.runtime_s)
    return [
        {
            "system": system,
            "method": method,
            "over": BASELINE,
            "ratio": fastest[(system, BASELINE)] / seconds,
            "basis": "fastest accuracy-qualified configuration of each, same run",
        }
        for (system, method), seconds in sorted(fastest.items())
        if method != BASELINE and (system, BASELINE) in fastest
    ]


def _machine() -> str:
    return (
        f"{platform.machine()} {os.cpu_count()} CPUs, {platform.system()}, Python "
        f"{platform.python_version()}, jax {jax.__version__}"
    )


def _config_text(config: dict[str, Any]) -> str:
    return ", ".join(
        f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in config.items()
    )


def _number(value: float | None) -> str:
    return f"{value:>10.1e}" if value is not None else f"{'-':>10}"


def print_tables(report: dict[str, Any]) -> None:
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"baselines ({report['machine']}); load average {load}; {CLOCK} clock")
    for ref in report["references"]:
        system = ref["system"]
        plan = report["plans"][system]
        print(
            f"\n== {system}: {ref['scenario']}; {plan['name']} plan: rtol "
            f"{', '.join(f'{r:g}' for r in plan['tolerances'])} (atol = rtol / 100), dt "
            f"{', '.join(f'{d:g}' for d in plan['steps'])} s, fastest of {plan['repeats']} run(s)"
        )
        print(
            f"reference {ref['method']} {_config_text(ref['config'])}: {ref['runtime_s']:.3f} s "
            f"(+{ref['compile_s']:.1f} s compile), {ref['accepted']} steps, "
            f"{ref['rejected']} rejected"
        )
        head = (
            f"{'method':<18}{'config':<24}{'time s':>9}{'compile':>9}{'acc':>7}{'rej':>6}"
            f"{'rhs':>8}{'newton':>8}{'error':>10}{'V mae':>10}  {'ok':<4}status"
        )
        print(head)
        print("-" * len(head))
        for row in (r for r in report["rows"] if r["system"] == system):
            print(
                f"{row['method']:<18}{_config_text(row['config']):<24}{row['runtime_s']:>9.3f}"
                f"{row['compile_s']:>9.2f}{row['accepted']:>7}{row['rejected']:>6}"
                f"{row['work']['rhs_evaluations']:>8}{row['work']['newton_iterations']:>8}"
                f"{_number(row['error'])}{_number(row['v_mae'])}  "
                f"{'yes' if row['qualified'] else 'no':<4}{row['status']}"
            )
        for skip in (s for s in report["skipped"] if s["system"] == system):
            print(
                f"{skip['method']:<18}{_config_text(skip['config']):<24}skipped: {skip['reason']}"
            )
        print(
            f"\nqualified: state error <= {STATE_ERROR_MAX:g}, voltage MAE <= "
            f"{VOLTAGE_MAE_MAX:g} pu, KCL <= {KCL_MAX:g} pu. Speed-up over {BASELINE} (fastest "
            "qualified of each):"
        )
        for s in (s for s in report["speedups"] if s["system"] == system):
            print(f"  {s['method']:<18}{s['ratio']:>8.2f}x")
        print(f"\nexact reduced Jacobian, rtol {JACOBIAN_RTOL:g}:")
        print(
            f"{'method':<10}{'rhs exact':>11}{'rhs diff.':>11}{'time exact':>12}"
            f"{'time diff.':>12}  status (exact / differenced)"
        )
        for j in (j for j in report["jacobian"] if j["system"] == system):
            rhs_diff = "-" if j["rhs_differenced"] is None else j["rhs_differenced"]
            t_diff = j["runtime_differenced_s"]
            print(
                f"{j['method']:<10}{j['rhs_exact']:>11}{rhs_diff:>11}"
                f"{j['runtime_exact_s']:>12.3f}{'-' if t_diff is None else f'{t_diff:.3f}':>12}  "
                f"{j['status_exact']} / {j['status_differenced']}"
            )
            if j["skipped"]:
                print(f"  {j['method']}: {j['skipped']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--clock", choices=CLOCKS, default="cpu", help="CPU clock (default) or wall clock"
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="runs per configuration (fastest time kept)"
    )
    parser.add_argument(
        "--systems",
        nargs="+",
        default=list(SYSTEMS),
        choices=network_names(),
        metavar="NAME",
        help=f"networks to benchmark (default wscc9; any of {', '.join(network_names())})",
    )
    parser.add_argument(
        "--plan",
        choices=["auto", "full", "reduced"],
        default="auto",
        help=f"auto: full sweep up to {FULL_PLAN_MAX_STATES} states, reduced above",
    )
    parser.add_argument("--json-out", metavar="PATH", help="also write the JSON object to PATH")
    args = parser.parse_args(argv)
    global CLOCK
    CLOCK = args.clock
    unknown = [m for m in (*ADAPTIVE, *FIXED) if m not in METHODS]
    if unknown:
        raise SystemExit(f"methods missing from the catalogue: {unknown}")
    report = run(max(1, args.repeats), tuple(args.systems), args.plan)
    if args.json_out:
        with open(args.json_out, "w") as out:
            json.dump(report, out, default=float)
            out.write("\n")
    if args.json:
        json.dump(report, sys.stdout, default=float)
        sys.stdout.write("\n")
    else:
        print_tables(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
