"""The embedded default: real Celery worker processes on the serverless SQLAlchemy broker.

``raptorgrid run SPEC`` with no configuration stores everything under ``./raptorgrid-data``
(SQLite, Zarr, broker) and starts ``embedded_workers`` workers (default: the usable cores), each
``celery -A raptorgrid.celery_app worker --concurrency 1 --pool prefork`` pinned to one CPU and
given the CLI's resolved settings through ``RAPTORGRID_*`` variables. The CLI process reconciles
(requeues runs whose worker died) while it waits, and stops the workers at the end.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from raptorgrid.broker import prepare_sqla_broker
from raptorgrid.runtime import die_with_parent, pin_to_cpu, single_thread_env, usable_cpus
from raptorgrid.settings import Settings

if TYPE_CHECKING:  # the launch path stays import-light: `raptorgrid run` starts workers first
    from celery import Celery

    from raptorgrid.db import Database
    from raptorgrid.tables import Campaign

log = logging.getLogger(__name__)

STOP_TIMEOUT = 20.0
"""Seconds a worker gets to finish its warm shutdown before its process group is killed."""


def worker_command(settings: Settings, name: str) -> list[str]:
    """The command line of one worker (one pool process: one run at a time)."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "raptorgrid.celery_app",
        "worker",
        "--concurrency",
        "1",
        "--pool",
        "prefork",
        "--queues",
        settings.queue,
        "--hostname",
        f"{name}@%h",
        "--loglevel",
        settings.log_level,
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    ]


FORK_WARNING = r"os\.fork\(\) was called"
"""JAX's warning when a process that imported it forks (``os.register_at_fork``)."""


@contextmanager
def exec_after_fork() -> Iterator[None]:
    """Start subprocesses that exec at once: JAX's fork warning is a false alarm for them (the
    child only pins its CPU and execs a new interpreter; it never touches JAX's threads), so it
    is silenced here, and only here, instead of alarming every ``raptorgrid run``."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=FORK_WARNING, category=RuntimeWarning)
        yield


def _prepare_child(cpu: int) -> None:
    """In the forked child, before exec (no threads exist yet): one CPU, and die with the CLI."""
    die_with_parent()
    pin_to_cpu(cpu)


@dataclass
class WorkerProcess:
    name: str
    cpu: int
    process: subprocess.Popen
    log_path: Path

    def alive(self) -> bool:
        return self.process.poll() is None


class EmbeddedWorkers:
    """``count`` worker processes, each in its own session (so its pool process can be stopped
    with it) and pinned to one CPU, logging to ``<data_dir>/logs``."""

    def __init__(self, settings: Settings, count: int) -> None:
        self.settings, self.count = settings, count
        self.workers: list[WorkerProcess] = []
        self._tag = uuid.uuid4().hex[:6]

    def start(self, count: int | None = None) -> EmbeddedWorkers:
        """Start ``count`` more workers (default: all not yet started)."""
        if not self.workers and self.settings.broker_is_sqla:
            prepare_sqla_broker(self.settings)
        logs = self.settings.data_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        env = single_thread_env({**os.environ, **self.settings.as_env()})
        cpus = usable_cpus()
        methods = list(self.settings.prebuild_methods)
        first = len(self.workers)
        last = self.count if count is None else min(self.count, first + count)
        for i in range(first, last):
            name = f"embedded{i}-{self._tag}"
            cpu = cpus[i % len(cpus)]
            log_path = logs / f"{name}.log"
            # each worker starts its prebuild at a different method: the first compiles of a
            # cold cluster run side by side (the compile lock makes the others load them)
            k = i % len(methods) if methods else 0
            rotated = {"RAPTORGRID_PREBUILD_METHODS": json.dumps(methods[k:] + methods[:k])}
            with open(log_path, "wb") as sink, exec_after_fork():
                process = subprocess.Popen(
                    worker_command(self.settings, name),
                    env={**env, **rotated},
                    stdin=subprocess.DEVNULL,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=lambda cpu=cpu: _prepare_child(cpu),
                )
            self.workers.append(WorkerProcess(name, cpu, process, log_path))
            log.info("started worker %s (pid %d, CPU %d)", name, process.pid, cpu)
        return self

    def alive(self) -> int:
        return sum(w.alive() for w in self.workers)

    def stop(self) -> None:
        """Warm shutdown (SIGTERM to each worker), then SIGKILL to the groups still running."""
        for w in self.workers:
            if w.alive():
                w.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for w in self.workers:
            try:
                w.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("worker %s did not stop in %.0f s: killing it", w.name, STOP_TIMEOUT)
                os.killpg(w.process.pid, signal.SIGKILL)
                w.process.wait()
        self.kill()  # reap pool processes a killed main left behind

    def kill(self) -> None:
        """Stop every worker at once (SIGKILL to each process group): for workers that were
        started but never given a campaign (its spec was invalid), and after a warm stop for
        the pool processes a killed main left behind."""
        for w in self.workers:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(w.process.pid, signal.SIGKILL)
            w.process.wait()

    def __enter__(self) -> EmbeddedWorkers:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def tail_logs(self, lines: int = 15) -> str:
        out = []
        for w in self.workers:
            text = w.log_path.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {w.name} ({w.log_path})\n" + "\n".join(text))
        return "\n".join(out)


class WorkersDied(RuntimeError):
    """Every embedded worker exited before the campaign finished."""


def wait_for_campaign(
    *,
    db: Database,
    celery: Celery,
    settings: Settings,
    campaign_id: int,
    workers: EmbeddedWorkers | None = None,
    on_progress: Callable[[dict[str, int]], None] | None = None,
    poll_seconds: float = 0.25,
) -> Campaign:
    """Poll the campaign until it is finished or cancelled, reconciling on the way."""
    from raptorgrid import repository as repo
    from raptorgrid.reconcile import reconcile_once
    from raptorgrid.tables import CampaignStatus

    next_reconcile = time.monotonic() + settings.reconcile_seconds
    while True:
        with db.read() as session:
            campaign = repo.get_campaign(session=session, campaign_id=campaign_id)
            counts = repo.run_counts(session=session, campaign_id=campaign_id)
        if on_progress is not None:
            on_progress(counts)
        if campaign is None:
            raise LookupError(f"campaign {campaign_id} does not exist")
        if campaign.finished_at is not None or campaign.status == CampaignStatus.FINISHED.value:
            return campaign
        if workers is not None and workers.alive() == 0:
            raise WorkersDied("every worker exited:\n" + workers.tail_logs())
        if time.monotonic() >= next_reconcile:
            reconcile_once(db=db, celery=celery, settings=settings)
            next_reconcile = time.monotonic() + settings.reconcile_seconds
        time.sleep(poll_seconds)
