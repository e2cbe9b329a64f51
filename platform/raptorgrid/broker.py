"""Broker specifics: the serverless kombu SQLAlchemy transport used by the embedded default.

Measured in kombu 5.7's source (``kombu/transport/sqlalchemy``): the channel passes *every*
``broker_transport_options`` entry to ``create_engine``, so ``polling_interval`` or
``visibility_timeout`` there raise ``TypeError`` at connection time. The idle polling interval
(default 1 s: at most one task per second per worker) is therefore set on the transport class,
and the transport options carry only engine arguments (the SQLite lock timeout).
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import create_engine, make_url

from raptorgrid.settings import Settings


def sqla_engine_url(broker_url: str) -> str:
    """``sqla+sqlite:///x`` -> ``sqlite:///x``."""
    return broker_url.split("+", 1)[1]


def sqla_transport_options(settings: Settings) -> dict:
    """``create_engine`` arguments for the SQLA transport (nothing else is accepted there)."""
    url = make_url(sqla_engine_url(settings.broker_url))
    if url.get_backend_name() == "sqlite":
        return {"connect_args": {"timeout": settings.sqlite_busy_timeout_ms / 1000}}
    return {}


def tune_sqla_transport(polling_interval: float) -> None:
    """Lower the SQLA transport's idle polling interval (a class attribute in kombu 5.7)."""
    from kombu.transport.sqlalchemy import Transport

    Transport.polling_interval = polling_interval


def prepare_sqla_broker(settings: Settings) -> None:
    """Create the transport's tables and the run queue (and WAL) before any worker starts: two
    workers on a fresh broker database race to create them and one fails."""
    from kombu import Connection

    url = make_url(sqla_engine_url(settings.broker_url))
    if url.get_backend_name() == "sqlite" and url.database:
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, **sqla_transport_options(settings))
        try:
            with engine.connect() as connection:
                connection.exec_driver_sql("PRAGMA journal_mode = WAL")
        finally:
            engine.dispose()
    options = sqla_transport_options(settings)
    with Connection(settings.broker_url, transport_options=options) as connection:
        # Opening a channel creates the tables; declaring the queue creates its row.
        connection.default_channel.queue_declare(queue=settings.queue)
