"""``raptorgrid check``: is the database consistent with itself and with the results store?
(``raptorgrid.check``). Exit status 0 when it is, 1 when something was found."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Annotated

import typer

from raptorgrid.cli.errors import user_errors


def check(
    campaign: Annotated[
        int | None, typer.Option("--campaign", min=1, help="check this campaign only")
    ] = None,
    stale: Annotated[
        float | None,
        typer.Option(
            "--stale",
            min=0,
            help="s after which an expired lease or an unsent run is stuck "
            "(default: the visibility timeout)",
        ),
    ] = None,
    results: Annotated[
        bool, typer.Option("--results/--no-results", help="open every succeeded run's result")
    ] = True,
    as_json: Annotated[bool, typer.Option("--json", help="the report as JSON")] = False,
) -> None:
    """Check that every succeeded run has exactly one readable result, that campaign and
    configuration totals equal their runs, and that nothing is stuck; report what was found."""
    from raptorgrid.check import check as run_check
    from raptorgrid.db import Database
    from raptorgrid.settings import get_settings
    from raptorgrid.tables import utcnow

    with user_errors():
        settings = get_settings()
        assert settings.zarr_root is not None  # derived by Settings
        db = Database.from_settings(settings)
        try:
            with db.read() as session:
                report = run_check(
                    session=session,
                    zarr_root=settings.zarr_root,
                    now=utcnow(),
                    stale=timedelta(
                        seconds=settings.visibility_timeout if stale is None else stale
                    ),
                    campaign_id=campaign,
                    read_results=results,
                )
        finally:
            db.dispose()
    if as_json:
        typer.echo(json.dumps(report.as_dict(), indent=2))
    else:
        scope = f"campaign {campaign}" if campaign is not None else "all campaigns"
        for f in report.findings:
            where = f"campaign {f.campaign_id}" + (f" run {f.run_id}" if f.run_id else "")
            typer.echo(f"{f.kind:<18} {where}: {f.detail}")
        for kind in report.truncated:
            typer.echo(f"(only the first findings of {kind} are listed)")
        verdict = "consistent" if report.ok else f"{len(report.findings)} problems found"
        typer.echo(f"{scope}: {report.results_read} results read; {verdict}")
    raise typer.Exit(0 if report.ok else 1)


def register(app: typer.Typer) -> None:
    app.command()(check)
