"""``raptorgrid token create|list|revoke``: API tokens, administered on the database directly
(whoever can run this holds the database credentials, so it is the admin's tool)."""

from __future__ import annotations

from typing import Annotated

import typer

from raptorgrid.cli.errors import UserError, user_errors

token_app = typer.Typer(help="API tokens (stored hashed).", no_args_is_help=True)


def _database():  # noqa: ANN202 - raptorgrid.db.Database
    from raptorgrid.db import Database
    from raptorgrid.settings import get_settings

    return Database.from_settings(get_settings())


@token_app.command("create")
def create(
    name: Annotated[str, typer.Argument(help="the owner: campaigns submitted with it are NAME's")],
    admin: Annotated[bool, typer.Option("--admin", help="may cancel/delete any campaign")] = False,
) -> None:
    """Issue a token for NAME and print it once (only its sha256 is stored)."""
    from raptorgrid.auth import create_token

    with user_errors():
        db = _database()
        try:
            with db.write() as session:
                row, token = create_token(session=session, owner=name, is_admin=admin)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        finally:
            db.dispose()
        kind = "admin token" if admin else "token"
        typer.echo(token)
        typer.echo(
            f"{kind} {row.prefix} for {row.owner}: shown once, store it now "
            "(send it as 'Authorization: Bearer <token>' or RAPTORGRID_API_TOKEN)",
            err=True,
        )


@token_app.command("list")
def list_() -> None:
    """Tokens by prefix, owner, role and state (never the secrets)."""
    from raptorgrid.auth import list_tokens

    with user_errors():
        db = _database()
        with db.read() as session:
            rows = list_tokens(session=session)
        db.dispose()
        for row in rows:
            state = f"revoked {row.revoked_at:%Y-%m-%d}" if row.revoked_at else "active"
            role = "admin" if row.is_admin else "user"
            typer.echo(f"{row.prefix}  {row.owner}  {role}  {state}")


@token_app.command("revoke")
def revoke(prefix: Annotated[str, typer.Argument(help="the token's prefix (8 hex)")]) -> None:
    """Revoke a token: requests with it get 401 from now on."""
    from raptorgrid.auth import revoke_token

    with user_errors():
        db = _database()
        with db.write() as session:
            done = revoke_token(session=session, prefix=prefix)
        db.dispose()
        if not done:
            raise UserError(f"no active token with prefix {prefix!r}")
        typer.echo(f"revoked {prefix}")


def register(app: typer.Typer) -> None:
    app.add_typer(token_app, name="token")
