"""Schema migrations, run programmatically (``raptorgrid db upgrade``)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

from raptorgrid.settings import Settings

SOURCE_MIGRATIONS = Path(__file__).resolve().parent.parent.parent / "migrations"
"""platform/raptorgrid/ -> ../../migrations in a source checkout (or editable install)."""


def migrations_dir(settings: Settings) -> Path:
    """Where the Alembic scripts are; a missing folder is an error that says how to point at it."""
    folder = settings.migrations_dir or SOURCE_MIGRATIONS
    if not (folder / "env.py").is_file():
        raise FileNotFoundError(
            f"no Alembic migrations at {folder}: install raptorgrid from a source checkout "
            "(pip install -e .) or set RAPTORGRID_MIGRATIONS_DIR"
        )
    return folder


def alembic_config(settings: Settings) -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir(settings)))
    config.attributes["database_url"] = settings.database_url
    return config


def upgrade(settings: Settings, revision: str = "head") -> None:
    """Bring the database to ``revision`` (creates every table on a fresh database)."""
    command.upgrade(alembic_config(settings), revision)
