"""Tables and summaries printed by the CLI (rich)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

console = Console(width=None if Console().is_terminal else 132)
"""Rich wraps at 80 columns when output is not a terminal: the tables need more."""


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def method_table(rows: Iterable[Mapping[str, Any]], title: str = "") -> Table:
    table = Table(title=title or None)
    for column, justify in [
        ("method", "left"),
        ("config", "left"),
        ("runs", "right"),
        ("succeeded", "right"),
        ("failed", "right"),
        ("median runtime s", "right"),
        ("mean accepted", "right"),
        ("mean rejected", "right"),
        ("mean Newton", "right"),
    ]:
        table.add_column(column, justify=justify, no_wrap=column in ("method", "config"))
    for r in rows:
        table.add_row(
            escape(r["method"]),
            escape(r["config"]),
            str(r["runs"]),
            str(r["succeeded"]),
            str(r["failed"]),
            _num(r["median_runtime_s"], ".3f"),
            _num(r["mean_accepted"], ".1f"),
            _num(r["mean_rejected"], ".1f"),
            _num(r["mean_newton_iterations"], ".1f"),
        )
    return table


def counts_line(counts: Mapping[str, int]) -> str:
    return "  ".join(f"{k} {v}" for k, v in counts.items())


def campaign_summary(campaign: Mapping[str, Any]) -> str:
    return (
        f"campaign {campaign['id']} '{campaign['name']}' on {campaign['network']}: "
        f"{campaign['status']}, {campaign['done']}/{campaign['n_runs']} runs done "
        f"({counts_line(campaign['counts'])})"
    )
