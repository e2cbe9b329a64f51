"""The Celery application, configured from ``Settings`` only.

The platform package never imports ``workers``: it enqueues the run task by name and lists
``workers.tasks`` in ``include`` so that worker processes register it. ``celery -A
raptorgrid.celery_app worker`` finds the module-level ``app``.
"""

from __future__ import annotations

from typing import Any

from celery import Celery
from kombu import Queue

from raptorgrid.broker import sqla_transport_options, tune_sqla_transport
from raptorgrid.settings import Settings, get_settings

RUN_TASK = "raptorgrid.run"
"""Name of the task that executes one run; its only argument is the run id."""


def task_time_limits(soft: float, hard: float, n_runs: int = 1) -> tuple[float, float]:
    """Celery's (soft, hard) time limits in s for a task of ``n_runs`` runs, each run limited
    to ``soft`` and ``hard`` s. Each run's own limit (the progress check, ``workers.lease``,
    and the run's alarm, ``workers.limits``) acts first; Celery's soft limit is a backstop a
    margin later (10 %, at least 2 s, at most half-way to the hard limit), so the two
    asynchronous exceptions never race: one arriving while the other's failure was being
    written could interrupt that database write. The hard limit is the runs' hard limits,
    unchanged."""
    task_soft = n_runs * soft + min(max(2.0, 0.1 * soft), (hard - soft) / 2)
    return task_soft, n_runs * hard


def celery_config(settings: Settings) -> dict[str, Any]:
    """Every Celery setting the platform relies on, in one dict (asserted in the tests)."""
    visibility = {"visibility_timeout": settings.visibility_timeout}
    task_soft, task_hard = task_time_limits(settings.soft_time_limit, settings.hard_time_limit)
    if settings.broker_is_sqla:
        # Serverless transport: no redelivery timeout exists; its options go to create_engine.
        broker_options: dict[str, Any] = sqla_transport_options(settings)
    else:
        broker_options = dict(visibility)
    return {
        "broker_url": settings.broker_url,
        "broker_transport_options": broker_options,
        "result_backend_transport_options": dict(visibility),
        "visibility_timeout": settings.visibility_timeout,
        "broker_connection_retry_on_startup": True,
        "task_default_queue": settings.queue,
        "task_queues": (Queue(settings.queue, routing_key=settings.queue),),
        "task_routes": {RUN_TASK: {"queue": settings.queue}},
        "task_serializer": "json",
        "accept_content": ["json"],
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "task_ignore_result": True,
        "task_soft_time_limit": task_soft,
        "task_time_limit": task_hard,
        "task_track_started": False,
        "worker_prefetch_multiplier": 1,
        "worker_concurrency": 1,
        "worker_pool_start_method": "spawn",
        # a broker blip must not stop the runs in flight: their results go to SQL and Zarr,
        # and their messages, unacknowledged, come back after the visibility timeout and are
        # skipped then (the runs are final; claims are idempotent)
        "worker_cancel_long_running_tasks_on_connection_loss": False,
        # A pool process replacing a killed one imports JAX and prebuilds networks before it
        # reports UP; Celery's default 4 s wait killed it again, forever (measured).
        "worker_proc_alive_timeout": settings.worker_start_timeout,
        "worker_send_task_events": False,
        "worker_hijack_root_logger": True,
    }


def create_celery(settings: Settings | None = None) -> Celery:
    """A Celery app for ``settings`` (default: the process settings)."""
    settings = settings or get_settings()
    if settings.broker_is_sqla:
        tune_sqla_transport(settings.broker_polling_interval)
    celery = Celery("raptorgrid", include=["workers.tasks"])
    celery.conf.update(celery_config(settings))
    return celery


app = create_celery()
