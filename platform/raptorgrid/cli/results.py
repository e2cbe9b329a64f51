"""``raptorgrid report`` and ``raptorgrid export``: a finished campaign's numbers, on the local
database (the embedded default or whatever ``RAPTORGRID_DATABASE_URL`` points to)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from raptorgrid.cli.errors import UserError, existing_database, user_errors
from raptorgrid.cli.render import console, method_table, table

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

OutOpt = Annotated[Path, typer.Option("--out", "-o", help="folder for the files")]


def print_results(session: Session, campaign_id: int, *, ranking_limit: int = 10) -> None:
    """Per-configuration table, Table I (when scored against a reference) and the worst
    contingencies, each fitting the console (80 columns off a terminal)."""
    from raptorgrid.columns import CCT, RANKING_BRIEF, TABLE_ONE, format_value
    from raptorgrid.repository import stats
    from raptorgrid.repository.cct import cct_table

    searches = cct_table(session=session, campaign_id=campaign_id)
    if searches:
        shown = searches[:ranking_limit]
        more = f" ({len(shown)} of {len(searches)})" if len(searches) > len(shown) else ""
        console.print(table(shown, CCT, f"critical clearing times, shortest first{more}"))
    configs, _ = stats.config_stats(session=session, campaign_id=campaign_id)
    if searches:  # a CCT campaign: no reference, and its ranking is the table above
        console.print(method_table([c.as_dict() for c in configs], "per method and configuration"))
        return
    console.print(method_table([c.as_dict() for c in configs], "per method and configuration"))
    t1 = stats.table_one(configs)
    if t1["subject_config"] is not None:
        console.print(
            f"Table I: {t1['subject']} {t1['subject_config']}, runtime "
            f"{format_value(t1['subject_runtime_s'])} s, state error "
            f"{format_value(t1['subject_state_error'], '.2g')}; speedup = each method's "
            f"fastest accuracy-qualified runtime / {t1['subject']}'s (runtime = solve time)",
            markup=False,
            highlight=False,
        )
        console.print(table(t1["rows"], TABLE_ONE))
    elif any(c.scored for c in configs):
        console.print(f"Table I: no accuracy-qualified {t1['subject']} configuration", markup=False)
    else:
        console.print("Table I: no reference in this campaign (add \"reference\" to the spec)",
                      markup=False)  # fmt: skip
    ranking, total = stats.contingency_ranking(
        session=session, campaign_id=campaign_id, limit=ranking_limit
    )
    if ranking:
        shown = f" ({len(ranking)} of {total})" if total > len(ranking) else ""
        console.print(table(ranking, RANKING_BRIEF, f"contingency ranking, worst first{shown}"))


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
    plots (accuracy and work against runtime, trajectories of the worst contingencies) as PNG
    and a self-contained HTML report."""
    from raptorgrid.report import write_report

    def action(session: Session, settings: Any) -> Any:
        print_results(session, campaign_id)
        return write_report(
            session=session, campaign_id=campaign_id, out_dir=out, zarr_root=settings.zarr_root
        )

    with user_errors():
        _data, files = _with_campaign(campaign_id, action)
    for path in files.all():
        console.print(f"wrote {path}", markup=False, highlight=False)


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
