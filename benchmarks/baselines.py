"""Baseline integrators on the WSCC 9-bus system: speed, work and accuracy per configuration.

For every baseline method and several tolerances (step sizes for the fixed-step methods) on a
bus fault, this measures the solve time (compile time apart), accepted and rejected steps, RHS
calls and the error against a Kvaerno5 reference at rtol 1e-10 computed in the same run; and
the effect of the exact reduced Jacobian (RHS calls and time with and without it, radau and bdf).
Speed-ups are ratios of the fastest accuracy-qualified configuration of each method over Radau's,
measured in the same process on the same inputs. Absolute times are reported, never asserted.

    python benchmarks/baselines.py            # human tables
    python benchmarks/baselines.py --json     # one JSON object (docs: DESIGN.md section 6)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from models.dae import DAESystem, Scenario
from models.disturbances import BusFault
from models.library import build_system
from models.scenarios import make_scenario
from solvers import METHODS, SolveResult, solve

SYSTEM = "wscc9"
"""The network every configuration runs on."""
FAULT = BusFault(bus="bus7", t_fault=0.1, t_clear=0.2)
"""The disturbance: a 100 ms three-phase fault at bus 7 (x = 1e-3 pu)."""
T_END = 1.0
"""Horizon (s)."""
N_EVAL = 201
"""Evaluation grid on which every run is compared with the reference."""
REFERENCE = ("kvaerno5", {"rtol": 1e-10, "atol": 1e-12})
"""The high-accuracy reference configuration."""
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
STATE_ERROR_MAX = 1e-4
"""Qualification: largest state error, each state scaled by max(1, its reference magnitude)."""
VOLTAGE_MAE_MAX = 1e-4
"""Qualification: largest mean absolute bus-voltage error (pu)."""
KCL_MAX = 1e-6
"""Qualification: largest nodal current mismatch at the samples (pu)."""
BASELINE = "radau"
"""Speed-ups are expressed over this method's fastest qualified configuration."""


@dataclass
class Row:
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
            "system": SYSTEM,
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


def _measure(
    system: DAESystem, scenario: Scenario, method: str, config: dict, repeats: int
) -> tuple[SolveResult, float]:
    """The result of the first run (its compile time included in stats) and the fastest solve
    time over ``repeats`` runs."""
    first = solve(system, scenario, method, **config)
    times = [first.stats.solve_seconds]
    for _ in range(repeats - 1):
        times.append(solve(system, scenario, method, **config).stats.solve_seconds)
    return first, min(times)


def _available(method: str) -> bool:
    if method != "ida":
        return True
    try:
        import sksundae  # noqa: F401
    except ImportError:
        return False
    return True


def configurations() -> list[tuple[str, dict[str, Any]]]:
    configs: list[tuple[str, dict[str, Any]]] = []
    for method in ADAPTIVE:
        if _available(method):
            configs += [(method, {"rtol": r, "atol": r * 1e-2}) for r in TOLERANCES]
    for method in FIXED:
        configs += [(method, {"dt": dt}) for dt in STEPS]
    return configs


def run(repeats: int) -> dict[str, Any]:
    system = build_system(SYSTEM)
    scenario = make_scenario(system, FAULT, t_end=T_END, n_eval=N_EVAL)
    label = f"bus_fault {FAULT.bus} {FAULT.t_fault:g}-{FAULT.t_clear:g} s, t_end {T_END:g} s"
    reference, ref_time = _measure(system, scenario, REFERENCE[0], REFERENCE[1], 1)
    if not reference.succeeded:
        raise RuntimeError(f"the reference failed: {reference.message}")
    rows = []
    for method, config in configurations():
        result, runtime = _measure(system, scenario, method, config, repeats)
        rows.append(Row(method, config, result, runtime, *_errors(result, reference)))
    jacobian = []
    for method in JACOBIAN_METHODS:
        pair = {}
        for exact in (True, False):
            config = {"rtol": JACOBIAN_RTOL, "atol": JACOBIAN_RTOL * 1e-2, "exact_jacobian": exact}
            pair[exact] = _measure(system, scenario, method, config, repeats)
        (with_j, t_with), (without_j, t_without) = pair[True], pair[False]
        jacobian.append(
            {
                "system": SYSTEM,
                "method": method,
                "config": {"rtol": JACOBIAN_RTOL},
                "rhs_exact": with_j.stats.rhs_evaluations,
                "rhs_differenced": without_j.stats.rhs_evaluations,
                "runtime_exact_s": t_with,
                "runtime_differenced_s": t_without,
                "time_ratio": t_without / t_with,
            }
        )
    return {
        "benchmark": "baselines",
        "machine": _machine(),
        "reference": {
            "method": REFERENCE[0],
            "config": REFERENCE[1],
            "runtime_s": ref_time,
            "compile_s": reference.stats.compile_seconds,
            "accepted": reference.stats.accepted,
        },
        "rows": [row.as_json(label) for row in rows],
        "speedups": _speedups(rows),
        "jacobian": jacobian,
    }


def _speedups(rows: list[Row]) -> list[dict[str, Any]]:
    fastest: dict[str, float] = {}
    for row in rows:
        if row.qualified:
            fastest[row.method] = min(fastest.get(row.method, np.inf), row.runtime_s)
    if BASELINE not in fastest:
        return []
    return [
        {
            "system": SYSTEM,
            "method": method,
            "over": BASELINE,
            "ratio": fastest[BASELINE] / seconds,
            "basis": "fastest accuracy-qualified configuration of each, same run",
        }
        for method, seconds in sorted(fastest.items())
        if method != BASELINE
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
    ref = report["reference"]
    print(f"baselines on {SYSTEM} ({report['machine']})")
    print(
        f"reference {ref['method']} {_config_text(ref['config'])}: {ref['runtime_s']:.3f} s "
        f"(+{ref['compile_s']:.1f} s compile), {ref['accepted']} steps"
    )
    head = (
        f"{'method':<18}{'config':<24}{'time s':>9}{'compile':>9}{'acc':>7}{'rej':>6}"
        f"{'rhs':>8}{'newton':>8}{'error':>10}{'V mae':>10}  {'ok':<4}status"
    )
    print(head)
    print("-" * len(head))
    for row in report["rows"]:
        print(
            f"{row['method']:<18}{_config_text(row['config']):<24}{row['runtime_s']:>9.3f}"
            f"{row['compile_s']:>9.2f}{row['accepted']:>7}{row['rejected']:>6}"
            f"{row['work']['rhs_evaluations']:>8}{row['work']['newton_iterations']:>8}"
            f"{_number(row['error'])}{_number(row['v_mae'])}  "
            f"{'yes' if row['qualified'] else 'no':<4}{row['status']}"
        )
    print(
        f"\nqualified: state error <= {STATE_ERROR_MAX:g}, voltage MAE <= {VOLTAGE_MAE_MAX:g} pu, "
        f"KCL <= {KCL_MAX:g} pu. Speed-up over {BASELINE} (fastest qualified of each):"
    )
    for s in report["speedups"]:
        print(f"  {s['method']:<18}{s['ratio']:>8.2f}x")
    print(f"\nexact reduced Jacobian, rtol {JACOBIAN_RTOL:g}:")
    print(f"{'method':<10}{'rhs exact':>11}{'rhs diff.':>11}{'time exact':>12}{'time diff.':>12}")
    for j in report["jacobian"]:
        print(
            f"{j['method']:<10}{j['rhs_exact']:>11}{j['rhs_differenced']:>11}"
            f"{j['runtime_exact_s']:>12.3f}{j['runtime_differenced_s']:>12.3f}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--repeats", type=int, default=3, help="runs per configuration (fastest time kept)"
    )
    args = parser.parse_args(argv)
    unknown = [m for m in (*ADAPTIVE, *FIXED) if m not in METHODS]
    if unknown:
        raise SystemExit(f"methods missing from the catalogue: {unknown}")
    report = run(max(1, args.repeats))
    if args.json:
        json.dump(report, sys.stdout, default=float)
        sys.stdout.write("\n")
    else:
        print_tables(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
