"""User errors: one clear message on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

err_console = Console(stderr=True)

EXIT_USER_ERROR = 2
EXIT_FAILED = 1


class UserError(Exception):
    """A mistake in what the user asked for; the message says what to change."""


def _loc(loc: tuple | list) -> str:
    return ".".join(str(part) for part in loc if part != "body") or "spec"


def _msg(text: str) -> str:
    """pydantic's message without its 'Value error, ' prefix (the message says what is wrong)."""
    return text.removeprefix("Value error, ")


def describe(exc: BaseException) -> str:
    from raptorgrid.spec_errors import SpecError

    if isinstance(exc, ValidationError):
        return "\n".join(f"  {_loc(e['loc'])}: {_msg(e['msg'])}" for e in exc.errors())
    if isinstance(exc, SpecError):
        return "\n".join(f"  {_loc(loc)}: {msg}" for loc, msg in exc.errors)
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    return str(exc)


def fail(message: str, code: int = EXIT_USER_ERROR) -> typer.Exit:
    # soft_wrap: the terminal wraps long lines; Rich's own wrapping would put newlines inside
    # file paths and field names that a user copies from the message
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the errors a user can cause into a message and exit status 2."""
    from raptorgrid.spec_errors import SpecError

    try:
        yield
    except (ValidationError, SpecError) as exc:
        raise fail(f"invalid input:\n{describe(exc)}") from None
    except (UserError, KeyError, FileNotFoundError, json.JSONDecodeError, ValueError) as exc:
        raise fail(describe(exc)) from None


@contextmanager
def under(option: str) -> Iterator[None]:
    """Report the user errors raised inside as errors of ``option`` (e.g. ``--disturbance``)."""
    from raptorgrid.spec_errors import SpecError

    try:
        yield
    except ValidationError as exc:
        problems = [
            f"{_loc(e['loc'])}: {_msg(e['msg'])}" if e["loc"] else _msg(e["msg"])
            for e in exc.errors()
        ]
        raise UserError(f"{option}: " + "; ".join(problems)) from None
    except SpecError as exc:
        lines = describe(exc).splitlines()
        raise UserError(f"{option}: " + "; ".join(line.strip() for line in lines)) from None
    except (KeyError, json.JSONDecodeError, ValueError) as exc:
        raise UserError(f"{option}: {describe(exc)}") from None


def existing_database(settings):  # noqa: ANN001, ANN201 - Settings -> raptorgrid.db.Database
    """The campaigns database, refused with a clear message (and without creating a file) when
    there is none yet: SQLite creates an empty file on connect, and the first query then failed
    with a SQLAlchemy traceback."""
    from sqlalchemy import inspect
    from sqlalchemy.engine import make_url

    from raptorgrid.db import Database

    url = make_url(settings.database_url)
    where = url.database if url.get_backend_name() == "sqlite" else url.render_as_string()
    missing = UserError(
        f"no campaigns database at {where}; set RAPTORGRID_DATA_DIR (or RAPTORGRID_DATABASE_URL) "
        "to where your campaigns are, or run a campaign first (raptorgrid run SPEC)"
    )
    if url.get_backend_name() == "sqlite" and (
        not url.database or not Path(url.database).is_file()
    ):
        raise missing
    db = Database.from_settings(settings)
    try:
        with db.engine.connect() as connection:
            has_campaigns = inspect(connection).has_table("campaigns")
    except Exception:
        db.dispose()
        raise
    if not has_campaigns:
        db.dispose()
        raise missing
    return db
