"""Sending run ids to the broker (always after the rows are committed) and reading its depth."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from celery import Celery
from kombu.exceptions import ChannelError

from raptorgrid.celery_app import RUN_TASK

log = logging.getLogger(__name__)


def enqueue_runs(celery: Celery, run_ids: Iterable[int], *, queue: str) -> int:
    """One message per run id, on one producer connection; returns how many were sent."""
    ids = list(run_ids)
    if not ids:
        return 0
    with celery.producer_or_acquire() as producer:
        for run_id in ids:
            celery.send_task(RUN_TASK, args=[run_id], queue=queue, producer=producer)
    log.info("enqueued %d runs on %s", len(ids), queue)
    return len(ids)


def queue_depth(celery: Celery, *, queue: str) -> int:
    """Messages waiting in ``queue`` (not counting those a worker holds). Redis deletes an
    empty list, so a queue that does not exist (yet, or any more) holds 0 messages."""
    with celery.connection_for_write() as connection:
        try:
            declared = connection.default_channel.queue_declare(queue=queue, passive=True)
        except ChannelError:
            return 0
        return declared.message_count
