"""Shared fixtures: isolated settings, migrated databases (SQLite; PostgreSQL when reachable),
Redis, worker subprocesses, and the ``services`` policy: a missing service skips its tests with a
reason naming it, except under ``CI=true`` where it fails them."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

TEST_XLA_FLAGS = "--xla_backend_optimization_level=0"
"""Code generation without LLVM's optimization passes for the suite (and the worker processes
it starts, which inherit the environment): most of a cold suite is XLA compiling hundreds of
small programs that then run for milliseconds, and these flags halve that compile time
(2026-12-05: 72 -> 35 s for two compile-bound tests), for slower executables. The numerics are
the same IEEE arithmetic; speed is measured by ``benchmarks/`` with the default flags. Set
``XLA_FLAGS`` yourself to override; executables are stored per flag set
(``models.executables.source_fingerprint``)."""
if "XLA_FLAGS" not in os.environ:
    os.environ["XLA_FLAGS"] = TEST_XLA_FLAGS

if os.environ.get("RAPTORGRID_TEST_JAX_CACHE_DIR"):
    # the tests' own processes compile into the same folder as the workers they start (the
    # executable store keeps it when ``_no_ambient_settings`` clears the variable)
    os.environ["RAPTORGRID_JAX_CACHE_DIR"] = os.environ["RAPTORGRID_TEST_JAX_CACHE_DIR"]

import models.jaxconfig  # noqa: E402, F401  (float64 in JAX for every test, before any array)

POSTGRES_ADMIN_URL = os.environ.get(
    "RAPTORGRID_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
REDIS_URL = os.environ.get("RAPTORGRID_TEST_REDIS_URL", "redis://127.0.0.1:6379/13")
"""Redis database 13 and a per-session queue name keep the tests apart from anything else."""

WORKER_START_BUDGET = 90.0
"""Seconds a worker subprocess may take to start, build wscc9 and finish a small campaign."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``huge`` only on request (``-m huge``); tests marked ``slow`` first in
    every test process (``_slow_first_in_each_chunk``)."""
    if "huge" not in (config.getoption("markexpr") or ""):
        huge = [item for item in items if item.get_closest_marker("huge") is not None]
        if huge:
            config.hook.pytest_deselected(items=huge)
            items[:] = [item for item in items if item.get_closest_marker("huge") is None]
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    items[:] = _slow_first_in_each_chunk(items, workers)


def _slow_first_in_each_chunk(items: list[pytest.Item], workers: int) -> list[pytest.Item]:
    """The collection ordered so that each of ``workers`` test processes starts with its share
    of the ``slow`` tests (worker kills, outages, big networks: 30-90 s each), dealt round-robin
    in file order, then short tests. xdist's work stealing first hands each process one
    contiguous chunk of the collection (sizes as computed here) and later steals from the end
    of a process's queue; with all slow tests simply sorted first they all fell into the first
    process's chunk, ran one after the other there, and the last of them (the reliability tests,
    which mostly wait on their workers) ended the suite together, leaving cores idle. Dealt
    out, they start early in every process, overlap with each other and with CPU-bound tests,
    and the short tests at the chunks' ends are what gets stolen. Every process computes the
    same order (xdist requires identical collections)."""
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    fast = [item for item in items if item.get_closest_marker("slow") is None]
    ordered: list[pytest.Item] = []
    remaining = len(items)
    for chunk in range(workers):
        size = remaining // (workers - chunk)  # xdist's initial share of what is left
        remaining -= size
        dealt = slow[chunk::workers]
        filler = max(0, size - len(dealt))
        ordered += dealt + fast[:filler]
        fast = fast[filler:]
    return ordered + fast  # empty unless a chunk held more slow tests than its share


def require_service(name: str, problem: str) -> None:
    """Skip (or, under CI=true, fail) a test whose service is not reachable."""
    message = f"{name} not reachable: {problem}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message} (CI=true: services are required)")
    pytest.skip(message)


def _reachable(url: str, default_port: int) -> str | None:
    parsed = urlparse(url.replace("postgresql+psycopg", "postgresql"))
    try:
        with socket.create_connection((parsed.hostname, parsed.port or default_port), timeout=2):
            return None
    except OSError as exc:
        return f"{parsed.hostname}:{parsed.port or default_port}: {exc}"


@pytest.fixture(autouse=True)
def _no_ambient_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests build their settings explicitly; variables of the caller's shell must not leak in."""
    from raptorgrid.settings import get_settings

    for key in list(os.environ):
        if key.startswith("RAPTORGRID_") and not key.startswith("RAPTORGRID_TEST_"):
            monkeypatch.delenv(key)
    get_settings.cache_clear()


@pytest.fixture(scope="session")
def jax_cache_dir() -> Path:
    """The executable store and persistent compilation cache shared by every worker the tests
    start and by the tests' own process, across test sessions too: entries are keyed by the
    numerical sources and the JAX versions (``models.executables``), so a changed model or
    method compiles anew and never loads a stale executable, while an unchanged one is compiled
    once per machine instead of once per worker and session (the suite took 19 min from a fresh
    clone with a per-session cache for the workers). ``RAPTORGRID_TEST_JAX_CACHE_DIR``, else
    the default store."""
    from models.executables import DEFAULT_DIR

    path = Path(os.environ.get("RAPTORGRID_TEST_JAX_CACHE_DIR", DEFAULT_DIR)).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def make_settings(tmp_path: Path, jax_cache_dir: Path) -> Callable[..., object]:
    from raptorgrid.settings import Settings

    def make(**overrides: object) -> Settings:
        values = {"data_dir": tmp_path / "data", "jax_cache_dir": jax_cache_dir, **overrides}
        return Settings(**values)

    return make


@pytest.fixture
def sqlite_settings(make_settings):
    return make_settings()


@pytest.fixture
def sqlite_db(sqlite_settings):
    from raptorgrid import migrate
    from raptorgrid.db import Database

    migrate.upgrade(sqlite_settings)
    db = Database.from_settings(sqlite_settings)
    yield db
    db.dispose()


@pytest.fixture(scope="session")
def postgres_server() -> str:
    problem = _reachable(POSTGRES_ADMIN_URL, 5432)
    if problem:
        require_service("PostgreSQL", problem)
    return POSTGRES_ADMIN_URL


@contextlib.contextmanager
def _fresh_database(admin_url: str) -> Iterator[str]:
    """``reliability_stack.fresh_database``, a refusal reported as the service being unusable."""
    from reliability_stack import fresh_database

    with contextlib.ExitStack() as stack:
        try:
            url = stack.enter_context(fresh_database(admin_url))
        except Exception as exc:  # noqa: BLE001 - whatever the server said
            require_service("PostgreSQL", f"cannot create a database: {exc}")
        yield url


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A database of this test's own, dropped after it. Each test that starts workers or a
    reconciler needs one: a reconciler re-sends every expired or stale run of its database to
    its own queue, so a run an earlier test left unfinished in a shared database was solved by
    the next test's worker (a CI run's worker-kill test timed out solving runs of other tests'
    campaigns, 2026-12-05). Creating and dropping one costs ~0.2-1 s."""
    with _fresh_database(postgres_server) as url:
        yield url


@pytest.fixture(scope="session")
def session_postgres_url(postgres_server: str) -> Iterator[str]:
    """One database for this test session, for tests of the repository alone (no workers, no
    reconciler), dropped at the end."""
    with _fresh_database(postgres_server) as url:
        yield url


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    problem = _reachable(REDIS_URL, 6379)
    if problem:
        require_service("Redis", problem)
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.RedisError as exc:
        require_service("Redis", str(exc))
    yield REDIS_URL
    client.close()


@pytest.fixture
def redis_queue(redis_url: str) -> Iterator[str]:
    """A queue name used by one test only; its keys are removed afterwards."""
    import redis

    queue = f"raptorgrid.test.{uuid.uuid4().hex[:10]}"
    yield queue
    client = redis.Redis.from_url(redis_url)
    for key in client.scan_iter(f"*{queue}*"):
        client.delete(key)
    client.close()


class WorkerProcess:
    """A real ``celery worker`` subprocess with the given settings, logging to a file."""

    def __init__(  # noqa: ANN001
        self, settings, name: str, log_path: Path, prefix: tuple[str, ...] = (), env=None
    ) -> None:
        """``prefix`` runs the worker under a launcher (``ip netns exec NS``: another host);
        ``env`` adds variables (an object store's endpoint)."""
        from raptorgrid.embedded import worker_command
        from raptorgrid.runtime import die_with_parent, single_thread_env

        env = single_thread_env({**os.environ, **(env or {}), **settings.as_env()})
        self.log_path = log_path
        with open(log_path, "wb") as sink, warnings.catch_warnings():
            # JAX (initialised by earlier tests in this process) warns on any fork; the child
            # only calls prctl and then execs, so no lock of a JAX thread is ever needed.
            warnings.filterwarnings("ignore", message="os.fork", category=RuntimeWarning)
            self.process = subprocess.Popen(
                [*prefix, *worker_command(settings, name)],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=die_with_parent,  # never outlives a killed test session
            )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    EVENTS = ("received", "succeeded", "SIGKILL", "pausing", "not claimable", "failed", "lost")
    """Words of the log lines that make a worker's timeline (``events``)."""

    def events(self) -> str:
        """The log's task and fault lines alone (tasks received and ended, kills, pauses): the
        timeline a test prints when a wait fails."""
        lines = self.log().splitlines()
        return "\n".join(
            line for line in lines if line.startswith("[") and any(w in line for w in self.EVENTS)
        )

    def stacks(self) -> str:
        """The log after every process of the worker has written its threads' Python stacks
        (``workers.tasks.STACK_DUMP_SIGNAL``): what a test prints when a worker seems stuck."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGUSR2)
            time.sleep(1.0)
        return self.log()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)


@pytest.fixture
def start_worker(tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    started: list[WorkerProcess] = []

    def start(settings, name: str = "test", **kwargs) -> WorkerProcess:  # noqa: ANN001
        log = tmp_path / f"{name}.log"
        worker = WorkerProcess(settings, f"{name}-{uuid.uuid4().hex[:6]}", log, **kwargs)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


def _wait_until(
    predicate: Callable[[], bool],
    timeout: float,
    what: str | Callable[[], str],
    poll: float = 0.25,
) -> None:
    """Poll ``predicate``; on timeout fail naming ``what`` (a callable is called then, so that
    a worker's log and stacks are read when the wait failed, not when it began)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(poll)
    described = what() if callable(what) else what
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {described}")


def run_campaign_through_api(client, spec: dict, workers: list, timeout: float) -> dict:  # noqa: ANN001
    """Authorize ``client`` (a TestClient of the API) with a fresh token, POST ``spec``, and
    wait until the campaign has finished while every worker stays alive; returns the created
    campaign's JSON (id, n_runs, ...)."""
    from raptorgrid.auth import create_token

    with client.app.state.db.write() as session:
        client.headers["Authorization"] = f"Bearer {create_token(session=session, owner='t')[1]}"
    created = client.post("/campaigns", json=spec)
    assert created.status_code == 201, created.text
    campaign_id = created.json()["id"]

    def finished() -> bool:
        for worker in workers:
            assert worker.process.poll() is None, worker.log()[-3000:]
        return client.get(f"/campaigns/{campaign_id}").json()["finished_at"] is not None

    _wait_until(
        finished,
        timeout,
        lambda: f"campaign {campaign_id}\n" + "\n".join(w.stacks()[-6000:] for w in workers),
    )
    return created.json()


@pytest.fixture
def wait_until() -> Callable[..., None]:
    """``wait_until(predicate, timeout, what)``: poll until true, else fail naming ``what``."""
    return _wait_until


SMALL_SPEC = {
    "name": "small",
    "network": "wscc9",
    "t_end": 1.0,
    "n_eval": 51,
    "disturbances": [{"kind": "bus_fault", "bus": "bus7", "t_fault": 0.1, "t_clear": 0.2}],
    "initial_conditions": {"count": 2, "seed": 3, "spread": 0.5},
    "methods": [{"method": "radau", "options": {"rtol": [1e-3, 1e-5]}}],
}
"""2 initial conditions x 2 configurations = 4 short runs on wscc9."""


@pytest.fixture
def small_spec() -> dict:
    import copy

    return copy.deepcopy(SMALL_SPEC)


@pytest.fixture(scope="session")
def postgres_db(session_postgres_url: str, tmp_path_factory: pytest.TempPathFactory):
    """The session's PostgreSQL database, migrated (shared by the tests that need it)."""
    from raptorgrid import migrate
    from raptorgrid.db import Database
    from raptorgrid.settings import Settings

    settings = Settings(
        data_dir=tmp_path_factory.mktemp("pg-data"), database_url=session_postgres_url
    )
    migrate.upgrade(settings)
    db = Database.from_settings(settings)
    yield db
    db.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.services)])
def any_db(request: pytest.FixtureRequest):
    """The repository's database on SQLite and on PostgreSQL (the production engine)."""
    if request.param == "sqlite":
        return request.getfixturevalue("sqlite_db")
    return request.getfixturevalue("postgres_db")
