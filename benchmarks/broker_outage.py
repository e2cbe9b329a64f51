"""Throughput through a broker outage (issue 19 item 5): how long a short Redis outage stops a
campaign, and whether any run is recomputed or lost.

    .venv/bin/python benchmarks/broker_outage.py [--outage 20] [--runs N] [--json]
                                               [--sequence after,before,after]
                                               [--mode restart|freeze]

Each measurement starts its own stack: a private ``redis-server`` (append-only file, as
docker-compose runs it) on a free port, one real ``celery worker`` process (the command line
of ``raptorgrid.embedded.worker_command``, as the tests start it) and the reconciler loop
(``raptorgrid.reconcile.reconcile_forever``, as ``raptorgrid reconcile`` runs it) in a thread;
the database is a fresh PostgreSQL database on the machine's server (``--admin-url``, trust
auth), shared by the measurements and dropped at the end. Every setting is the platform's
default (lease 120 s, reconcile every 5 s, visibility timeout 420 s, batches of up to 64 runs)
except the prebuilt network and method, so that a replaced pool process is warm.

A measurement: a warm-up campaign (starts the worker, compiles or loads wscc9's Radau, gives
the rate used to size the main campaign unless ``--runs``), then the main campaign (wscc9,
Radau rtol 1e-4, 0.3 s load step: ~40 ms runs); once runs have finished steadily for
``--pre`` seconds, the broker goes away for ``--outage`` seconds:

* ``restart`` (default): SIGTERM to redis-server (it flushes its AOF and exits: every client
  connection is closed, as in ``docker restart`` or a crash-and-restart of the broker), then a
  new redis-server on the same port and data folder (queued and unacknowledged messages come
  back from the AOF). This is the outage that the Celery setting is about: the worker sees the
  connection drop.
* ``freeze``: SIGSTOP, then SIGCONT (a hung broker or a silent network partition: the
  connections stay open, nobody sees an error, requests just wait).

Measured from the runs' ``finished_at`` in SQL (the workers' clock is this machine's):

* ``pre runs/s``: runs finished in the ``--pre`` seconds before the outage, per second;
* ``in outage``: runs finished while the broker was away (in-flight runs that carried on);
* ``gap``: the longest time without any run finishing, counted from the outage start (the
  outage start is the first "event"), up to the recovery below;
* ``1st after``: from the broker's return to the first run finishing after it;
* ``recovery``: from the broker's return to the first moment ``t`` (the return itself or a
  finish time) from which the runs finished in ``[t, t + --window)`` are at least 80 % of the
  pre-outage rate;
* ``lost``: the throughput deficit from the outage start to that recovery, in seconds of
  pre-outage throughput (runs that the pre-outage rate would have finished, minus the runs that
  did finish, divided by the rate);
* ``recomputed``: runs with ``attempts > 1``; ``unfinished``: runs not succeeded when the
  measurement stopped waiting (``--finish-timeout`` after the recovery); ``once``: every run
  succeeded with exactly one metrics row of its last attempt;
* ``cancelled``: Celery's "Terminating it instead" warnings in the worker's log (tasks it
  terminated at the connection loss).

``after`` is the platform as it is (``worker_cancel_long_running_tasks_on_connection_loss``
off, ``raptorgrid.celery_app``). The setting is not a ``Settings`` field, so ``before`` starts
the worker on ``benchmarks.broker_outage:old_behaviour_app``: the same app object with only
that setting turned back on (the behaviour before the fix). Wall clock by nature; the load
average is printed beside each row.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import json
import logging
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.throughput import submit  # noqa: E402  (one campaign submission)
from tests.reliability_stack import fresh_database  # noqa: E402  (as the tests' databases)

log = logging.getLogger("broker_outage")

ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
APPS = {"after": "raptorgrid.celery_app", "before": "benchmarks.broker_outage:old_behaviour_app"}
CANCELLED_MARK = "Terminating it instead"
"""Celery's warning when it terminates a task at a connection loss (the old behaviour)."""


def __getattr__(name: str):  # noqa: ANN202 - module attribute hook (PEP 562)
    """``old_behaviour_app``: the platform's Celery app with the setting of before the fix,
    built only when a worker asks for it (``celery -A benchmarks.broker_outage:...``), so that
    importing this module stays cheap in the worker's main process."""
    if name == "old_behaviour_app":
        from raptorgrid.celery_app import app

        app.conf.worker_cancel_long_running_tasks_on_connection_loss = True
        return app
    raise AttributeError(name)


def spec(runs: int, name: str) -> dict:
    """``runs`` short wscc9 runs (~40 ms each): Radau rtol 1e-4, 0.3 s, one load step."""
    return {
        "name": name,
        "network": "wscc9",
        "t_end": 0.3,
        "n_eval": 31,
        "disturbances": [{"kind": "load_step", "bus": "bus5", "t": 0.1, "scale": 1.1}],
        "initial_conditions": {"count": runs, "seed": 0, "spread": 0.5},
        "methods": [{"method": "radau", "options": {"rtol": 1e-4}}],
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_port(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.05)
    raise RuntimeError(f"redis-server did not listen on port {port} in {timeout} s")


class Redis:
    """A private redis-server with an append-only file (``everysec``, as docker-compose)."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.port = folder, free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        from raptorgrid.runtime import die_with_parent

        binary = shutil.which("redis-server")
        if binary is None:
            raise SystemExit("redis-server not found")
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="os.fork", category=RuntimeWarning)
            self.process = subprocess.Popen(
                [
                    binary,
                    "--port",
                    str(self.port),
                    "--bind",
                    "127.0.0.1",
                    "--dir",
                    str(self.folder),
                    "--appendonly",
                    "yes",
                    "--appendfsync",
                    "everysec",
                    "--save",
                    "",
                    "--logfile",
                    str(self.folder / "redis.log"),
                ],
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
        wait_port(self.port, 10)

    def stop(self) -> None:
        """SIGTERM: Redis flushes its AOF and exits, closing every client connection."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)  # in case it is frozen
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def signal(self, sig: int) -> None:
        assert self.process is not None
        self.process.send_signal(sig)


class Worker:
    """One ``celery worker`` process (one pool process), as ``tests/conftest.py`` starts it."""

    def __init__(self, settings, app: str, log_path: Path) -> None:  # noqa: ANN001
        from raptorgrid.embedded import worker_command
        from raptorgrid.runtime import die_with_parent, single_thread_env

        command = worker_command(settings, f"outage-{uuid.uuid4().hex[:6]}")
        command[command.index("raptorgrid.celery_app")] = app
        env = single_thread_env({**os.environ, **settings.as_env()})
        self.log_path = log_path
        # JAX (imported by this process) warns on any fork; the child only calls prctl, execs
        with open(log_path, "wb") as sink, warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="os.fork", category=RuntimeWarning)
            self.process = subprocess.Popen(
                command,
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=20)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


@contextlib.contextmanager
def reconciler(settings) -> Iterator[None]:  # noqa: ANN001
    """``raptorgrid reconcile`` in a thread: every ``reconcile_seconds``, backing off while a
    service is down."""
    from raptorgrid.celery_app import create_celery
    from raptorgrid.db import Database
    from raptorgrid.reconcile import reconcile_forever

    db, celery = Database.from_settings(settings), create_celery(settings)
    stop = threading.Event()
    thread = threading.Thread(
        target=reconcile_forever,
        kwargs={"db": db, "celery": celery, "settings": settings, "stop": stop},
        name="reconciler",
        daemon=True,
    )
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=30)
        db.dispose()


class Reader:
    """The campaign's rows, read on one engine."""

    def __init__(self, settings) -> None:  # noqa: ANN001
        from raptorgrid.db import Database

        self.db = Database.from_settings(settings)

    def finishes(self, campaign_id: int) -> list[float]:
        """Finish times (epoch seconds) of the runs that finished, sorted."""
        from raptorgrid.tables import Run
        from sqlalchemy import select

        with self.db.read() as session:
            rows = session.scalars(
                select(Run.finished_at).where(
                    Run.campaign_id == campaign_id, Run.finished_at.is_not(None)
                )
            )
            return sorted(t.timestamp() for t in rows)

    def finished(self, campaign_id: int) -> bool:
        from raptorgrid.tables import Campaign

        with self.db.read() as session:
            return session.get(Campaign, campaign_id).finished_at is not None

    def outcome(self, campaign_id: int) -> dict:
        from raptorgrid.tables import Campaign, Run, RunMetrics
        from sqlalchemy import select

        with self.db.read() as session:
            campaign = session.get(Campaign, campaign_id)
            runs = list(session.scalars(select(Run).where(Run.campaign_id == campaign_id)))
            metrics = {
                m.run_id: m.attempt
                for m in session.scalars(
                    select(RunMetrics).where(RunMetrics.run_id.in_([r.id for r in runs]))
                )
            }
        statuses: dict[str, int] = {}
        for run in runs:
            statuses[run.status] = statuses.get(run.status, 0) + 1
        once = all(
            r.status == "succeeded" and metrics.get(r.id) == r.attempts for r in runs
        ) and len(metrics) == len(runs)
        return {
            "campaign_finished": campaign.finished_at is not None,
            "statuses": statuses,
            "recomputed": sum(r.attempts > 1 for r in runs),
            "max_attempts": max((r.attempts for r in runs), default=0),
            "unfinished": sum(r.status != "succeeded" for r in runs),
            "metrics_rows": len(metrics),
            "once": once,
        }

    def dispose(self) -> None:
        self.db.dispose()


def wait_for(predicate, timeout: float, what: str, worker: Worker, poll: float = 0.5) -> bool:  # noqa: ANN001
    """Poll until ``predicate()``; False after ``timeout``; raises if the worker exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not worker.alive():
            raise RuntimeError(f"the worker exited waiting for {what}\n{worker.log()[-3000:]}")
        if predicate():
            return True
        time.sleep(poll)
    log.warning("timed out after %.0f s waiting for %s", timeout, what)
    return False


def analyse(
    finishes: list[float],
    *,
    outage_start: float,
    broker_back: float,
    pre: float,
    window: float,
    threshold: float = 0.8,
) -> dict:
    """The figures of the module docstring from the sorted finish times (epoch seconds)."""

    def count(lo: float, hi: float) -> int:  # finishes in [lo, hi)
        return bisect.bisect_left(finishes, hi) - bisect.bisect_left(finishes, lo)

    pre_count = count(outage_start - pre, outage_start)
    rate = pre_count / pre
    during = count(outage_start, broker_back)
    after = finishes[bisect.bisect_left(finishes, broker_back) :]
    last = finishes[-1] if finishes else broker_back
    recovered = None
    for start in [broker_back, *after]:
        if start + window > last:  # no data past this window yet (or the campaign ran out)
            break
        if count(start, start + window) >= threshold * rate * window:
            recovered = start
            break
    end = recovered if recovered is not None else last
    events = [outage_start, *finishes[bisect.bisect_left(finishes, outage_start) :]]
    events = [t for t in events if t <= end]
    gap = max((b - a for a, b in zip(events, events[1:], strict=False)), default=None)
    lost = None
    if recovered is not None and rate > 0:
        lost = (rate * (recovered - outage_start) - count(outage_start, recovered)) / rate
    return {
        "pre_rate": rate,
        "pre_runs": pre_count,
        "in_outage": during,
        "gap_s": gap,
        "first_after_back_s": (after[0] - broker_back) if after else None,
        "recovery_s": (recovered - broker_back) if recovered is not None else None,
        "lost_s": lost,
    }


def measure(config: str, index: int, args: argparse.Namespace, database_url: str) -> dict:
    """One measurement on a fresh Redis and worker (module docstring)."""
    from raptorgrid import migrate
    from raptorgrid.settings import Settings

    from benchmarks.common import load_average
    from models.executables import DEFAULT_DIR

    with tempfile.TemporaryDirectory(prefix="raptorgrid-outage-") as tmp:
        folder = Path(tmp)
        redis = Redis(folder)
        redis.start()
        cache = Path(os.environ.get("RAPTORGRID_JAX_CACHE_DIR", DEFAULT_DIR)).expanduser()
        settings = Settings(
            data_dir=folder / "data",
            database_url=database_url,
            broker_url=redis.url,
            queue=f"raptorgrid.outage.{uuid.uuid4().hex[:8]}",
            jax_cache_dir=cache,
            prebuild_networks=["wscc9"],
            prebuild_methods=["radau"],
        )
        migrate.upgrade(settings)
        reader = Reader(settings)
        worker = Worker(settings, APPS[config], folder / "worker.log")
        started = time.monotonic()
        try:
            with reconciler(settings):
                warm = submit(settings, spec(args.warmup, f"outage warm-up {config}"))
                if not wait_for(lambda: reader.finished(warm), 300, "the warm-up", worker):
                    raise RuntimeError(f"warm-up not finished\n{worker.log()[-3000:]}")
                times = reader.finishes(warm)
                warm_rate = (len(times) - 1) / max(times[-1] - times[0], 1e-3)
                seconds = args.pre + 2 + args.outage + args.post
                runs = args.runs or min(10_000, math.ceil(warm_rate * seconds))
                log.warning(
                    "%s #%d: warm-up %.1f runs/s: main campaign of %d runs",
                    config,
                    index,
                    warm_rate,
                    runs,
                )
                main = submit(settings, spec(runs, f"outage {config} {index}"))
                if not wait_for(lambda: bool(reader.finishes(main)), 120, "a first run", worker):
                    raise RuntimeError(f"no run finished\n{worker.log()[-3000:]}")
                first = reader.finishes(main)[0]
                time.sleep(max(0.0, first + 2 + args.pre - time.time()))
                if reader.finished(main):
                    raise RuntimeError("the campaign finished before the outage: raise --runs")
                outage_start = time.time()
                if args.mode == "restart":
                    redis.stop()
                else:
                    redis.signal(signal.SIGSTOP)
                time.sleep(max(0.0, outage_start + args.outage - time.time()))
                if args.mode == "restart":
                    redis.start()
                else:
                    redis.signal(signal.SIGCONT)
                broker_back = time.time()
                log.warning("%s #%d: broker away %.1f s", config, index, broker_back - outage_start)

                def settled() -> bool:
                    figures = analyse(
                        reader.finishes(main),
                        outage_start=outage_start,
                        broker_back=broker_back,
                        pre=args.pre,
                        window=args.window,
                    )
                    return figures["recovery_s"] is not None or reader.finished(main)

                wait_for(settled, args.finish_timeout, "the recovery", worker, poll=1.0)
                # a campaign not finished by then is reported as such (unfinished runs)
                wait_for(
                    lambda: reader.finished(main),
                    args.finish_timeout,
                    "the campaign's end",
                    worker,
                    poll=1.0,
                )
            finishes = reader.finishes(main)
            figures = analyse(
                finishes,
                outage_start=outage_start,
                broker_back=broker_back,
                pre=args.pre,
                window=args.window,
            )
            outcome = reader.outcome(main)
            text = worker.log()
            return {
                "config": config,
                "index": index,
                "mode": args.mode,
                "cancel_on_connection_loss": config == "before",
                "outage_s": broker_back - outage_start,
                "runs": runs,
                **figures,
                **outcome,
                "cancelled": text.count(CANCELLED_MARK),
                "worker_alive": worker.alive(),
                "campaign_span_s": (finishes[-1] - finishes[0]) if finishes else None,
                "wall_s": time.monotonic() - started,
                "load": load_average(),
            }
        finally:
            worker.stop()
            reader.dispose()
            redis.stop()
            if args.keep_logs:
                keep = Path(args.keep_logs)
                keep.mkdir(parents=True, exist_ok=True)
                for name in ("worker.log", "redis.log"):
                    with contextlib.suppress(OSError):
                        shutil.copy(folder / name, keep / f"{config}-{index}-{name}")


def fmt(value, pattern: str = ".1f") -> str:  # noqa: ANN001
    return "-" if value is None else format(value, pattern)


def table(rows: list[dict]) -> str:
    head = (
        "config",
        "#",
        "outage s",
        "runs",
        "pre runs/s",
        "in outage",
        "gap s",
        "1st after s",
        "recovery s",
        "lost s",
        "recomputed",
        "unfinished",
        "once",
        "cancelled",
        "load",
    )
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = (
            r["config"],
            str(r["index"]),
            fmt(r["outage_s"]),
            str(r["runs"]),
            fmt(r["pre_rate"], ".2f"),
            str(r["in_outage"]),
            fmt(r["gap_s"]),
            fmt(r["first_after_back_s"]),
            fmt(r["recovery_s"]),
            fmt(r["lost_s"]),
            str(r["recomputed"]),
            str(r["unfinished"]),
            "yes" if r["once"] else "no",
            str(r["cancelled"]),
            r["load"].removeprefix("load average "),
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--outage", type=float, default=20.0, help="s the broker is away")
    parser.add_argument(
        "--runs",
        type=int,
        default=0,
        help="runs of the main campaign (default: sized from the warm-up rate)",
    )
    parser.add_argument(
        "--sequence",
        default="after,before,after",
        help="measurements in order: after (the platform) or before (old setting)",
    )
    parser.add_argument("--mode", choices=("restart", "freeze"), default="restart")
    parser.add_argument("--pre", type=float, default=20.0, help="s of steady runs measured before")
    parser.add_argument(
        "--post",
        type=float,
        default=90.0,
        help="s of work the campaign is sized to hold after the outage",
    )
    parser.add_argument("--window", type=float, default=5.0, help="s; the recovery's rate window")
    parser.add_argument("--warmup", type=int, default=100, help="runs of the warm-up campaign")
    parser.add_argument(
        "--finish-timeout",
        type=float,
        default=150.0,
        help="s to wait for the recovery, then for the campaign's end",
    )
    parser.add_argument(
        "--admin-url",
        default=os.environ.get("RAPTORGRID_TEST_POSTGRES_URL", ADMIN_URL),
        help="PostgreSQL server (a database is created on it and dropped at the end)",
    )
    parser.add_argument("--keep-logs", default="", help="folder to copy worker and Redis logs to")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    from benchmarks.common import load_average

    sequence = [c.strip() for c in args.sequence.split(",") if c.strip()]
    unknown = set(sequence) - set(APPS)
    if unknown:
        parser.error(f"unknown configurations {sorted(unknown)}: use after, before")
    rows: list[dict] = []
    with fresh_database(args.admin_url, "raptorgrid_bench_outage") as database_url:
        counts: dict[str, int] = {}
        for config in sequence:
            counts[config] = counts.get(config, 0) + 1
            rows.append(measure(config, counts[config], args, database_url))
            if not args.json:
                print(table(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    document = {
        "benchmark": "broker_outage",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "outage_s": args.outage,
        "mode": args.mode,
        "window_s": args.window,
        "pre_s": args.pre,
        "load": load_average(),
        "rows": rows,
    }
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        print(
            f"broker outage {args.outage:.0f} s ({args.mode}), wscc9 radau rtol 1e-4 t_end 0.3 "
            f"s, one worker; {document['load']}"
        )
        print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
