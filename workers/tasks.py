"""Celery tasks and worker-process hooks. The task takes only run ids and re-fetches the
rest, so a redelivered message is harmless (the SQL claim admits one attempt at a time).

The worker's main process imports this module only to register the task: the solver stack
(JAX, the models, Zarr) is imported in the pool process, where it runs (the main process is
ready sooner: docs/measurements.md)."""

from __future__ import annotations

import faulthandler
import logging
import os
import signal
import sys

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_init, worker_process_init, worker_process_shutdown
from raptorgrid.celery_app import RUN_TASK
from raptorgrid.runtime import SINGLE_THREAD_ENV
from raptorgrid.settings import get_settings

log = logging.getLogger(__name__)

STACK_DUMP_SIGNAL = signal.SIGUSR2
"""``kill -USR2`` writes every thread's Python stack to the worker's stderr (its log), in the
main process and in the pool process: how a stuck worker is diagnosed without a debugger."""
if sys.__stderr__ is not None:  # Celery replaces sys.stderr with a logger; fd 2 is the log
    faulthandler.register(STACK_DUMP_SIGNAL, file=sys.__stderr__, all_threads=True)


@worker_init.connect
def _single_thread_children(**_: object) -> None:
    """Before the pool starts: the spawned pool process inherits single-threaded BLAS/XLA."""
    for key, value in SINGLE_THREAD_ENV.items():
        os.environ.setdefault(key, value)


@worker_process_init.connect
def _init_pool_process(**_: object) -> None:
    """In the pool process (spawned, so JAX was never initialised in a forked parent)."""
    from workers.jaxsetup import configure_jax, freeze_startup_heap, prebuild

    settings = get_settings()
    configure_jax(
        settings.jax_cache_dir, lock_url=settings.broker_url, shared_url=str(settings.zarr_root)
    )
    prebuild(settings.prebuild_networks, settings.prebuild_methods)
    freeze_startup_heap()


@worker_process_shutdown.connect
def _close_pool_process(**_: object) -> None:
    from workers.context import worker_context

    worker_context().db.dispose()


@shared_task(name=RUN_TASK, bind=True, ignore_result=True, acks_late=True)
def run(self, run_ids: int | list[int]) -> str:  # noqa: ANN001 - Celery's bound task
    """Execute one run or a batch of runs (``raptorgrid.batching``), one after the other, each
    claimed and recorded on its own, the solved ones published together (``workers.runner.
    execute_batch``): a redelivered batch skips the runs already final."""
    from workers.context import worker_context
    from workers.lease import InTransit
    from workers.runner import execute_batch

    worker = f"{self.request.hostname}:{os.getpid()}"
    ids = [int(run_ids)] if isinstance(run_ids, int) else [int(r) for r in run_ids]
    ctx = worker_context()
    with InTransit(ctx, ids):  # the unstarted runs' lease while this host lives
        outcomes = execute_batch(
            ids, worker=worker, ctx=ctx, time_limit_errors=(SoftTimeLimitExceeded,)
        )
    for run_id, outcome in zip(ids, outcomes, strict=True):
        log.info("run %s: %s", run_id, outcome)
    return ", ".join(outcomes)
