"""Shared pieces of the benchmarks: timing runs, scoring against a reference, and output in the
one JSON shape of DESIGN.md section 6 (every speed figure a ratio measured in the same run)."""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from dataclasses import dataclass

import numpy as np

from solvers import METHODS, solve
from solvers.metrics import accuracy


@dataclass(frozen=True)
class Thresholds:
    state: float = 1e-6
    voltage: float = 1e-6
    kcl: float = 1e-8


def machine() -> str:
    return f"{platform.machine()} {platform.processor() or ''} python {platform.python_version()}"


def reference_method() -> tuple[str, dict]:
    """Kvaerno5 at tight tolerance when available, else Radau at tighter tolerance."""
    if "kvaerno5" in METHODS:
        return "kvaerno5", {"rtol": 1e-10, "atol": 1e-12}
    return "radau", {"rtol": 1e-11, "atol": 1e-13}


CLOCKS = ("cpu", "wall")
"""``cpu``: the process CPU clock (``time.process_time``), the default: the solvers run on one
thread, and on a shared machine wall-clock ratios flip with the load; ``wall``: the solver's own
``solve_seconds``."""

METHOD_VARIANTS = {
    "radau_fd": ("radau", {"exact_jacobian": False, "formulation": "reduced"}),
    "radau_dae_fd": ("radau", {"exact_jacobian": False, "formulation": "dae"}),
}
"""Baseline names of the benchmarks that are a method with fixed options: ``radau_fd`` is
SciPy's Radau on the reduced ODE (z solved inside f) with SciPy's dense finite-difference
Jacobian, the paper's configuration; ``radau_dae_fd`` is Radau on the epsilon-embedded DAE with
SciPy's finite differences over the sparse pattern (how far finite differences get once the
Jacobian stays sparse). Plain ``radau`` is the platform's default: exact sparse Jacobian, DAE
formulation above 400 unknowns."""


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} CPUs)"


def measure(
    system,
    scenario,
    method: str,
    config: dict,
    reference,
    thresholds: Thresholds,
    repeats: int,
    clock: str = "cpu",
) -> dict:
    """Run once to warm up (compilation excluded, as the paper does), then ``repeats`` timed
    runs; report the median solve time on ``clock`` and the accuracy of the last run."""
    solver, fixed = METHOD_VARIANTS.get(method, (method, {}))
    config = {**fixed, **config}
    result = solve(system, scenario, solver, **config)
    compile_s = result.stats.compile_seconds
    times = []
    for _ in range(repeats):
        start = time.process_time()
        result = solve(system, scenario, solver, **config)
        cpu = time.process_time() - start
        times.append(cpu if clock == "cpu" else result.stats.solve_seconds)
    row = {
        "method": method,
        "config": config,
        "clock": clock,
        "runtime_s": statistics.median(times),
        "compile_s": compile_s,
        "accepted": result.stats.accepted,
        "rejected": result.stats.rejected,
        "newton_iterations": result.stats.newton_iterations,
        "status": result.status.value,
    }
    if result.succeeded:
        acc = accuracy(result, reference)
        row.update(
            error=acc.state_error,
            voltage_mae=acc.voltage_mae,
            max_kcl=acc.max_kcl,
            qualified=acc.qualified(
                state_tol=thresholds.state,
                voltage_tol=thresholds.voltage,
                kcl_tol=thresholds.kcl,
            ),
        )
    else:
        row.update(error=None, voltage_mae=None, max_kcl=None, qualified=False)
    return row


def fastest_qualified(rows: list[dict], system: str, method: str) -> dict | None:
    candidates = [
        r for r in rows if r["system"] == system and r["method"] == method and r["qualified"]
    ]
    return min(candidates, key=lambda r: r["runtime_s"]) if candidates else None


def fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def print_table(rows: list[dict], columns: list[str]) -> None:
    widths = [max(len(c), *(len(fmt(r.get(c))) for r in rows)) for c in columns]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    for r in rows:
        print("  ".join(fmt(r.get(c)).ljust(w) for c, w in zip(columns, widths, strict=True)))


def dump(benchmark: str, rows: list[dict], speedups: list[dict]) -> str:
    def clean(v):
        if isinstance(v, (np.floating, np.integer)):
            return v.item()
        return v

    rows = [{k: clean(v) for k, v in r.items()} for r in rows]
    return json.dumps(
        {"benchmark": benchmark, "machine": machine(), "rows": rows, "speedups": speedups},
        indent=1,
    )
