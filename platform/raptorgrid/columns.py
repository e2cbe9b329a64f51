"""The result tables' columns, defined once for the CLI (rich, 80 columns) and the HTML report.

Each column names the row field it shows (the fields of ``repository.stats.ConfigStats``, of
Table I's rows, of the contingency ranking and of failures), a short header, how its values are
written and what it means. "Runtime" is solve time everywhere (compile and executable loading
excluded, worker overhead excluded): those are the ``compile s`` and ``overhead s`` columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

TEXT = "text"


@dataclass(frozen=True)
class Column:
    key: str
    """The row field shown."""
    header: str
    """Short header, a line break where a terminal table may wrap it (they fit 80 columns)."""
    fmt: str = TEXT
    """A format spec for numbers (``.3g``, ``.1f``), or ``text``."""
    meaning: str = ""
    """What the value is, with its unit (the report's header tooltip, the docs)."""
    fallback: str | None = None
    """The field shown instead when this one is missing (e.g. Table I's note)."""

    @property
    def numeric(self) -> bool:
        return self.fmt != TEXT

    @property
    def title(self) -> str:
        """The header on one line."""
        return self.header.replace("\n", " ")

    def cell(self, row: Mapping[str, Any]) -> str:
        value = row.get(self.key)
        if value is None and self.fallback is not None:
            value = row.get(self.fallback) or None
        return format_value(value, self.fmt)


def format_value(value: Any, fmt: str = TEXT) -> str:
    """A cell: "–" for missing, yes/no for booleans, numbers in ``fmt`` (``.3g`` by default)."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and fmt in (TEXT, "d"):
        return str(value)
    if isinstance(value, int | float):
        return format(value, ".3g" if fmt == TEXT else fmt)
    return str(value)


RUNTIME = "median solve seconds per run (compile, load and overhead excluded)"

CONFIGS = [
    Column("method", "method"),
    Column("config", "config", meaning="the method's options"),
    Column("runs", "runs", "d"),
    Column("succeeded", "ok", "d", "runs that succeeded"),
    Column("failed", "failed", "d"),
    Column("median_runtime_s", "runtime\ns", ".3g", RUNTIME),
    Column("p95_runtime_s", "p95\ns", ".3g", "95th percentile of the solve seconds"),
    Column("mean_compile_s", "compile\ns", ".3g", "mean compile + executable-load s per run"),
    Column(
        "mean_overhead_s",
        "overhead\ns",
        ".3g",
        "mean worker s per run outside solve and compile (claim, build, result write)",
    ),
    Column("mean_accepted", "accepted\nadvances", ".1f", "mean accepted steps or intervals"),
    Column("mean_rejected", "rejected", ".1f", "mean rejected attempts"),
    Column("mean_newton_iterations", "Newton\niterations", ".1f", "mean Newton iterations"),
    Column("max_state_error", "state\nerror", ".2g", "worst normalized state error vs reference"),
    Column("max_voltage_mae", "V MAE\npu", ".2g", "worst bus-voltage mean absolute error, pu"),
    Column("qualified", "quali-\nfied", meaning="every run met the accuracy thresholds"),
]
"""Per method configuration (report); the terminal shows ``CONFIGS_BRIEF``."""
CONFIGS_BRIEF = [
    c
    for c in CONFIGS
    if c.key
    in (
        "method",
        "config",
        "runs",
        "succeeded",
        "median_runtime_s",
        "mean_compile_s",
        "mean_overhead_s",
        "mean_accepted",
        "max_state_error",
        "qualified",
    )
]
TABLE_ONE = [
    Column("method", "method"),
    Column("config", "fastest qualified\nconfiguration", fallback="note"),
    Column("runtime_s", "runtime\ns", ".3g", RUNTIME),
    Column("state_error", "state\nerror", ".2g", "worst normalized state error vs reference"),
    Column("voltage_mae", "V MAE\npu", ".2g", "worst bus-voltage mean absolute error, pu"),
    Column("kcl_max", "KCL\npu", ".2g", "largest KCL residual, pu"),
    Column("speedup", "speedup", ".2f", "this method's runtime / the subject's"),
]
RANKING = [
    Column("rank", "#", "d"),
    Column("label", "scenario"),
    Column("severity", "severity", ".3g", "largest rotor-angle separation / 360 deg"),
    Column("tsi", "TSI", ".1f", "transient stability index, > 0 stable (docs/results.md)"),
    Column("stable", "stable"),
    Column("max_angle_spread_deg", "angle\ndeg", ".1f", "largest rotor-angle separation"),
    Column("frequency_nadir_hz", "f min\nHz", ".3f", "lowest centre-of-inertia frequency"),
    Column("frequency_zenith_hz", "f max\nHz", ".3f", "highest centre-of-inertia frequency"),
    Column("min_voltage_pu", "V min\npu", ".3f", "lowest bus voltage"),
    Column("voltage_recovery_t", "V back\nat s", ".3g", "time the voltages stay >= 0.9 pu"),
    Column("failed_runs", "failed\nruns", "d", "runs of this scenario that failed"),
]
RANKING_BRIEF = [c for c in RANKING if c.key not in ("voltage_recovery_t", "failed_runs")]
CCT = [
    Column("scenario", "fault"),
    Column("method", "method"),
    Column("config", "config"),
    Column("cct_s", "CCT\ns", ".3f", "critical clearing time: longest stable fault duration"),
    Column("hi_s", "unstable\nat s", ".3f", "shortest unstable fault duration probed"),
    Column("probes", "probes", "d", "runs of the search"),
    Column("solve_seconds", "solve s\n(all)", ".3g", "solve seconds of all its probes"),
    Column("status", "status"),
]
"""A CCT campaign's searches (``repository.cct.cct_table``), shortest CCT first."""
FAILURES = [
    Column("run_id", "run", "d"),
    Column("method", "method"),
    Column("config", "config"),
    Column("scenario", "scenario"),
    Column("reason", "reason"),
    Column("message", "message"),
]


def rows_as_text(rows: Iterable[Mapping[str, Any]], columns: list[Column]) -> list[list[str]]:
    return [[c.cell(r) for c in columns] for r in rows]
