"""The schema comes from Alembic only, and the migrations match the models on both engines."""

from __future__ import annotations

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from raptorgrid import migrate
from raptorgrid.db import Database
from raptorgrid.tables import Base
from sqlalchemy import inspect


def test_migrations_match_the_models(any_db: Database) -> None:
    with any_db.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []


def test_sqlite_is_wal_and_downgrade_round_trips(sqlite_settings, sqlite_db: Database) -> None:
    with sqlite_db.engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30_000
    config = migrate.alembic_config(sqlite_settings)
    command.downgrade(config, "base")
    assert set(inspect(sqlite_db.engine).get_table_names()) == {"alembic_version"}
    migrate.upgrade(sqlite_settings)
    assert {"campaigns", "scenarios", "runs", "run_metrics"} <= set(
        inspect(sqlite_db.engine).get_table_names()
    )
