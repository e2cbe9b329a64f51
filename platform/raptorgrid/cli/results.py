"""``raptorgrid report`` and ``raptorgrid export``: a finished campaign's numbers, on the local
database (the embedded default or whatever ``RAPTORGRID_DATABASE_URL`` points to)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from raptorgrid.cli.errors import UserError, existing_database, user_errors

console = Console()
TABLE_ONE_COLUMNS = ["method", "config", "runtime_s", "state_error", "speedup", "note"]
CONFIG_COLUMNS = [
    "method",
    "config",
    "runs",
    "failed",
    "median_solve_s",
    "mean_accepted",
    "mean_rejected",
    "max_state_error",
    "qualified",
]
RANKING_COLUMNS = [
    "rank",
    "label",
    "severity",
    "stable",
    "max_angle_spread_deg",
    "min_voltage_pu",
    "voltage_recovery_t",
]
OutOpt = Annotated[Path, typer.Option("--out", "-o", help="folder for the files")]


def _table(title: str, rows: list[dict[str, Any]], columns: list[str]) -> Table:
    from raptorgrid.report import _fmt

    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*(_fmt(row.get(c)) for c in columns))
    return table


def _with_campaign(campaign_id: int, action):
    from raptorgrid import repository as repo
    from raptorgrid.settings import get_settings

    settings = get_settings()
    db = existing_database(settings)
    try:
        with db.read() as session:
            if repo.get_campaign(session=session, campaign_id=campaign_id) is None:
                raise UserError(f"campaign {campaign_id} not found in {settings.database_url}")
            return action(session, settings)
    finally:
        db.dispose()


def report(campaign_id: int, out: OutOpt = Path("reports")) -> None:
    """Print Table I, the per-configuration table and the contingency ranking; write the
    accuracy- and work-against-runtime plots (PNG) and a self-contained HTML report."""
    from raptorgrid.report import _fmt, write_report

    with user_errors():
        data, files = _with_campaign(
            campaign_id,
            lambda session, _: write_report(session=session, campaign_id=campaign_id, out_dir=out),
        )
    t1 = data.table_one
    console.print(
        f"Table I: {t1['subject']} {_fmt(t1['subject_config'])}, "
        f"{_fmt(t1['subject_runtime_s'])} s, state error {_fmt(t1['subject_state_error'])} "
        f"({t1['basis']})",
        markup=False,
    )
    console.print(_table("speedups over each baseline", t1["rows"], TABLE_ONE_COLUMNS))
    console.print(_table("per method and configuration", data.configs, CONFIG_COLUMNS))
    console.print(_table("contingency ranking (worst first)", data.ranking, RANKING_COLUMNS))
    for path in (files.accuracy_png, files.accepted_png, files.html):
        console.print(f"wrote {path}", markup=False)


def export(campaign_id: int, out: OutOpt = Path("exports")) -> None:
    """Write the run table (CSV, Parquet) and the trajectories as one xarray dataset (Zarr)."""
    from raptorgrid.export import export_campaign

    with user_errors():
        paths = _with_campaign(
            campaign_id,
            lambda session, settings: export_campaign(
                session=session,
                zarr_root=settings.zarr_root,
                campaign_id=campaign_id,
                out_dir=out,
            ),
        )
    console.print(
        f"{paths.n_runs} runs -> {paths.csv}, {paths.parquet}; {paths.n_stacked} trajectories "
        f"-> {paths.dataset}",
        markup=False,
    )


def register(app: typer.Typer) -> None:
    app.command()(report)
    app.command()(export)
