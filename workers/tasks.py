"""Celery tasks and worker-process hooks. The task takes only the run id and re-fetches the
rest, so a redelivered message is harmless (the SQL claim admits one attempt at a time)."""

from __future__ import annotations

import logging
import os

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_init, worker_process_init, worker_process_shutdown
from raptorgrid.celery_app import RUN_TASK
from raptorgrid.runtime import SINGLE_THREAD_ENV
from raptorgrid.settings import get_settings

from workers.runner import execute_run, worker_context

log = logging.getLogger(__name__)


@worker_init.connect
def _single_thread_children(**_: object) -> None:
    """Before the pool starts: the spawned pool process inherits single-threaded BLAS/XLA."""
    for key, value in SINGLE_THREAD_ENV.items():
        os.environ.setdefault(key, value)


@worker_process_init.connect
def _init_pool_process(**_: object) -> None:
    """In the pool process (spawned, so JAX was never initialised in a forked parent)."""
    from workers.jaxsetup import configure_jax, prebuild

    settings = get_settings()
    configure_jax(settings.jax_cache_dir)
    prebuild(settings.prebuild_networks, settings.prebuild_methods)


@worker_process_shutdown.connect
def _close_pool_process(**_: object) -> None:
    worker_context().db.dispose()


@shared_task(name=RUN_TASK, bind=True, ignore_result=True, acks_late=True)
def run(self, run_id: int) -> str:  # noqa: ANN001 - Celery's bound task
    """Execute one run (see ``workers.runner``)."""
    worker = f"{self.request.hostname}:{os.getpid()}"
    outcome = execute_run(int(run_id), worker=worker, time_limit_errors=(SoftTimeLimitExceeded,))
    log.info("run %s: %s", run_id, outcome)
    return outcome
