"""Servers and helpers the reliability tests start and always stop: a private Redis (AOF) and
a private PostgreSQL (initdb in a temp folder) on free ports, a reconciler thread, and readers of
a campaign's rows. Imported by ``tests/test_reliability_*.py``."""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_port(port: int, timeout: float, up: bool = True, host: str = "127.0.0.1") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                if up:
                    return
        except OSError:
            if not up:
                return
        time.sleep(0.1)
    raise AssertionError(f"port {port} did not go {'up' if up else 'down'} in {timeout} s")


@dataclass
class RedisServer:
    """``redis-server`` with append-only persistence, as docker-compose runs it."""

    folder: Path
    port: int
    process: subprocess.Popen | None = None
    host: str = "127.0.0.1"

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                shutil.which("redis-server") or "redis-server",
                "--port", str(self.port), "--bind", self.host, "--dir", str(self.folder),
                "--appendonly", "yes", "--appendfsync", "always", "--save", "",
                "--logfile", str(self.folder / "redis.log"),
                # clients on a namespace's veth are not "loopback" to Redis; the address is
                "--protected-mode", "no" if self.host != "127.0.0.1" else "yes",
            ],
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        _wait_port(self.port, 10, host=self.host)

    def stop(self) -> None:
        """SIGTERM: Redis flushes its AOF and exits."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


@contextlib.contextmanager
def redis_server(folder: Path, host: str = "127.0.0.1") -> Iterator[RedisServer]:
    if shutil.which("redis-server") is None:
        import pytest

        pytest.skip("redis-server binary not found")
    server = RedisServer(folder, free_port(), host=host)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _pg_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}")) or [shutil.which(name) or ""]
    if not found[-1]:
        import pytest

        pytest.skip(f"PostgreSQL's {name} not found")
    return found[-1]


def _as_postgres() -> list[str]:
    """PostgreSQL refuses to run as root: run its binaries as the ``postgres`` user then."""
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


@dataclass
class PostgresServer:
    """A throw-away PostgreSQL cluster (trust auth, user postgres) on a free port."""

    folder: Path
    port: int
    host: str = "127.0.0.1"

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@{self.host}:{self.port}/postgres"

    def _ctl(self, *args: str) -> None:
        subprocess.run(
            [*_as_postgres(), _pg_bin("pg_ctl"), "-D", str(self.folder / "data"), "-w", *args],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def init(self) -> None:
        subprocess.run(
            [*_as_postgres(), _pg_bin("initdb"), "-D", str(self.folder / "data"), "-U", "postgres",
             "--auth=trust", "--no-sync", "-E", "UTF8"],
            check=True,
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        # clients from the whole loopback range (workers in network namespaces, 127.77.n.2)
        with open(self.folder / "data" / "pg_hba.conf", "a") as hba:
            hba.write("host all all 127.0.0.0/8 trust\n")

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses={self.host} -c fsync=off"
        self._ctl("-o", options, "-l", str(self.folder / "postgres.log"), "start")
        _wait_port(self.port, 30, host=self.host)

    def stop(self) -> None:
        """Fast shutdown: every connection is cut, as in a real outage."""
        if (self.folder / "data" / "postmaster.pid").exists():
            self._ctl("-m", "fast", "stop")
        _wait_port(self.port, 10, up=False, host=self.host)


@contextlib.contextmanager
def postgres_server(host: str = "127.0.0.1") -> Iterator[PostgresServer]:
    """A cluster in a fresh folder outside pytest's (root-only) temp tree, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="raptorgrid-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    server = PostgresServer(folder, free_port(), host=host)
    try:
        server.init()
        server.start()
        yield server
    finally:
        with contextlib.suppress(Exception):
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def fresh_database(admin_url: str, prefix: str = "raptorgrid_test") -> Iterator[str]:
    """A new, uniquely named PostgreSQL database (its URL, from the server's admin URL),
    dropped afterwards whatever happened. Raises when the server refuses to create it."""
    from sqlalchemy import create_engine, make_url, text

    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
        finally:
            with admin.connect() as connection:
                connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


@contextlib.contextmanager
def reconciler(settings, interval: float = 0.5) -> Iterator[None]:  # noqa: ANN001
    """The reconciler loop in a thread (as ``raptorgrid reconcile``), surviving outages."""
    from raptorgrid.celery_app import create_celery
    from raptorgrid.db import Database
    from raptorgrid.reconcile import reconcile_once

    db, celery = Database.from_settings(settings), create_celery(settings)
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(interval):
            try:
                reconcile_once(db=db, celery=celery, settings=settings)
            except Exception as exc:  # an outage: the next pass tries again
                log.info("reconciler pass failed: %s", exc)

    thread = threading.Thread(target=loop, name="reconciler", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=30)
        db.dispose()


def campaign_rows(settings, campaign_id: int):  # noqa: ANN001, ANN201
    """(campaign, runs, metrics by run id) read on a fresh engine."""
    from raptorgrid.db import Database
    from raptorgrid.tables import Campaign, Run, RunMetrics
    from sqlalchemy import select

    db = Database.from_settings(settings)
    try:
        with db.read() as session:
            campaign = session.get(Campaign, campaign_id)
            runs = list(
                session.scalars(select(Run).where(Run.campaign_id == campaign_id).order_by(Run.id))
            )
            metrics = {
                m.run_id: m
                for m in session.scalars(
                    select(RunMetrics).where(RunMetrics.run_id.in_([r.id for r in runs]))
                )
            }
        return campaign, runs, metrics
    finally:
        db.dispose()


def pid_of(worker_field: str | None) -> int | None:
    """The pool process id recorded on a run row (``host:pid``)."""
    if not worker_field or ":" not in worker_field:
        return None
    return int(worker_field.rsplit(":", 1)[1])


def kill(pid: int) -> bool:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True
