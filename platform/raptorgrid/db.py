"""Database engines and transactions.

SQLite (the embedded default) gets WAL, a busy timeout, and explicit ``BEGIN``: plain reads use
``BEGIN DEFERRED`` so they never block, and every read-then-write transaction uses
``BEGIN IMMEDIATE`` so two writers never both read a snapshot and then fail to upgrade it
(``SQLITE_BUSY_SNAPSHOT``, 35-47 % of transactions under contention without it; DESIGN §7).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, make_url, text
from sqlalchemy.orm import Session, sessionmaker

from raptorgrid.settings import Settings

_BEGIN_OPTION = "raptorgrid_sqlite_begin"


def _configure_sqlite(engine: Engine, *, busy_timeout_ms: int, foreign_keys: bool) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:  # noqa: ANN001 - DBAPI objects
        # Take transaction control away from pysqlite so the "begin" hook below decides.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute(f"PRAGMA foreign_keys = {'ON' if foreign_keys else 'OFF'}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection) -> None:  # noqa: ANN001 - SQLAlchemy Connection
        mode = connection.get_execution_options().get(_BEGIN_OPTION, "DEFERRED")
        connection.exec_driver_sql(f"BEGIN {mode}")


def make_engine(url: str, *, busy_timeout_ms: int = 30_000, foreign_keys: bool = True) -> Engine:
    """An engine for ``url``; SQLite files get their folder created and the pragmas above."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": busy_timeout_ms / 1000})
        _configure_sqlite(engine, busy_timeout_ms=busy_timeout_ms, foreign_keys=foreign_keys)
        return engine
    return create_engine(url, pool_pre_ping=True)


@dataclass
class Database:
    """An engine with two session factories: reads, and read-then-write transactions."""

    engine: Engine

    def __post_init__(self) -> None:
        self._read = sessionmaker(self.engine, expire_on_commit=False)
        writer = self.engine.execution_options(**{_BEGIN_OPTION: "IMMEDIATE"})
        self._write = sessionmaker(writer, expire_on_commit=False)

    @classmethod
    def from_settings(cls, settings: Settings) -> Database:
        engine = make_engine(settings.database_url, busy_timeout_ms=settings.sqlite_busy_timeout_ms)
        return cls(engine)

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A read transaction; closing the session rolls it back (the pool resets the
        connection) and leaves loaded objects usable, detached."""
        with self._read() as session:
            yield session

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A read-then-write transaction, committed when the block ends without error."""
        with self._write() as session, session.begin():
            yield session

    def ping(self) -> None:
        """Raise if the database cannot be reached."""
        with self.engine.connect() as connection:
            connection.execute(text("SELECT 1"))

    def dispose(self) -> None:
        self.engine.dispose()
