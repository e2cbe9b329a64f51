"""Tables and summaries printed by the CLI (rich), from the shared column definitions
(``raptorgrid.columns``). Off a terminal the console is 80 columns wide; text columns wrap,
numbers are never cut."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from raptorgrid.columns import CONFIGS_BRIEF, Column

WIDTH = 80
WHOLE = ("method", "label", "stable", "qualified")
"""Text columns never folded (short names)."""
console = Console(width=None if Console().is_terminal else WIDTH)


def table(rows: Iterable[Mapping[str, Any]], columns: list[Column], title: str = "") -> Table:
    """``rows`` under ``columns``: numbers right-aligned and kept whole (their column is at
    least as wide as its longest value and header line), names kept whole, other text folded
    to fit."""
    rows = list(rows)
    cells = [[c.cell(r) for c in columns] for r in rows]
    out = Table(title=escape(title) or None, title_justify="left", box=box.SIMPLE_HEAD,
                pad_edge=False, padding=(0, 0))  # fmt: skip
    for k, column in enumerate(columns):
        widest = max([len(row[k]) for row in cells] + [len(h) for h in column.header.split("\n")])
        if column.numeric or column.key in WHOLE:
            out.add_column(column.header, justify="right" if column.numeric else "left",
                           no_wrap=True, min_width=widest)  # fmt: skip
        else:
            out.add_column(column.header, overflow="fold")
    for row in cells:
        out.add_row(*(escape(c) for c in row))
    return out


def method_table(rows: Iterable[Mapping[str, Any]], title: str = "") -> Table:
    """The per-configuration table (runtime = solve time; compile and overhead apart)."""
    return table(rows, CONFIGS_BRIEF, title)


def counts_line(counts: Mapping[str, int]) -> str:
    return "  ".join(f"{k} {v}" for k, v in counts.items())


def campaign_summary(campaign: Mapping[str, Any]) -> str:
    return (
        f"campaign {campaign['id']} '{campaign['name']}' on {campaign['network']}: "
        f"{campaign['status']}, {campaign['done']}/{campaign['n_runs']} runs done "
        f"({counts_line(campaign['counts'])})"
    )
