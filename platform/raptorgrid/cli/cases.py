"""``raptorgrid case add``: store a PSS/E ``.raw`` + ``.dyr`` pair as a network for campaigns,
in the local (embedded) database or through a running API (``--api``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from raptorgrid.cli.errors import UserError, user_errors

case_app = typer.Typer(help="Uploaded cases (PSS/E .raw + .dyr).", no_args_is_help=True)


@case_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="a file-like name for the case")],
    raw: Annotated[Path, typer.Option("--raw", exists=True, dir_okay=False, help=".raw file")],
    dyr: Annotated[Path, typer.Option("--dyr", exists=True, dir_okay=False, help=".dyr file")],
    substitute: Annotated[
        bool,
        typer.Option(
            "--substitute",
            help="leave unsupported exciters, governors and stabilizers out (stored as warnings)",
        ),
    ] = False,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="refuse data that fail a model's plausibility rules (default: warnings)",
        ),
    ] = False,
    api: Annotated[str | None, typer.Option("--api", help="base URL of a raptorgrid API")] = None,
) -> None:
    """Validate and store a PSS/E case; prints the network name campaigns use (case:<id>)."""
    from raptorgrid.cli.campaigns import _api_call

    with user_errors():
        body = {
            "raw": raw.read_text(encoding="utf-8", errors="strict"),
            "dyr": dyr.read_text(encoding="utf-8", errors="strict"),
            "raw_file": raw.name,
            "dyr_file": dyr.name,
            "substitute": substitute,
            "strict": strict,
        }
        if api:
            url = f"{api.rstrip('/')}/cases"
            stored = _api_call("POST", url, params={"name": name, "format": "psse"}, json=body)
            case_id, summary = stored["id"], stored["summary"]
        else:
            case_id, summary = _store_locally(name, json.dumps(body).encode())
        typer.echo(
            f"case {case_id} stored: {summary['n_bus']} buses, {summary['n_generator']} machines "
            f"({', '.join(summary['models'])}); campaigns use  network: case:{case_id}"
        )
        for warning in summary.get("warnings", []):
            typer.echo(f"  warning: {warning}")


def _store_locally(name: str, data: bytes) -> tuple[int, dict]:
    from raptorgrid import migrate
    from raptorgrid.case_store import store_case
    from raptorgrid.cases import CaseError, CaseFormat
    from raptorgrid.db import Database
    from raptorgrid.settings import get_settings

    settings = get_settings()
    migrate.upgrade(settings)
    db = Database.from_settings(settings)
    try:
        row = store_case(db, name=name, fmt=CaseFormat.PSSE, data=data, owner=None)
    except CaseError as exc:
        where = ".".join(part for part in exc.loc if part != "body")
        raise UserError(f"{where}: {exc.message}") from None
    finally:
        db.dispose()
    return row.id, row.summary


def register(app: typer.Typer) -> None:
    app.add_typer(case_app, name="case")
