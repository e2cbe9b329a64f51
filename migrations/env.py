"""Alembic environment: the only place the schema is created or changed.

The database URL comes from ``raptorgrid.settings`` (or from ``raptorgrid.migrate``, which passes
it in ``config.attributes``). Batch mode lets SQLite alter tables; foreign keys are off while a
migration runs on SQLite, because a batch table rebuild with them on deletes child rows.
"""

from __future__ import annotations

from alembic import context
from raptorgrid.db import make_engine
from raptorgrid.settings import get_settings
from raptorgrid.tables import Base
from sqlalchemy import Connection

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    return config.attributes.get("database_url") or get_settings().database_url


def _configure(connection: Connection | None = None, url: str | None = None) -> None:
    context.configure(
        connection=connection,
        url=url,
        target_metadata=target_metadata,
        render_as_batch=True,
        compare_type=True,
        literal_binds=connection is None,
    )


def run_migrations_offline() -> None:
    """Emit SQL to stdout (``alembic upgrade head --sql``)."""
    _configure(url=_url())
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    engine = make_engine(_url(), foreign_keys=False)
    try:
        with engine.connect() as connection:
            _configure(connection=connection)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
