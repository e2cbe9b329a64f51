"""The ``raptorgrid`` command line (typer). Heavy imports happen inside each command so that
``raptorgrid --help`` is instant and ``raptorgrid worker`` never imports the API stack."""

from __future__ import annotations

import logging

import typer

from raptorgrid.cli import campaigns, cases, check, explore, results, services, tokens

app = typer.Typer(
    name="raptorgrid",
    help="Power-system transient study campaigns: run, submit, inspect, serve.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _main(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="log at INFO level"),
) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


campaigns.register(app)
services.register(app)
explore.register(app)
tokens.register(app)
results.register(app)
cases.register(app)
check.register(app)

__all__ = ["app"]
