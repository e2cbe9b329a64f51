"""Sending run ids to the broker (always after the rows are committed) and reading its depth."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence

from celery import Celery
from kombu.exceptions import ChannelError

from raptorgrid.celery_app import RUN_TASK

log = logging.getLogger(__name__)


def enqueue_runs(
    celery: Celery,
    run_ids: Iterable[int],
    *,
    queue: str,
    batches: Sequence[Sequence[int]] | None = None,
    time_limits: tuple[float, float] | None = None,
) -> int:
    """Send the runs on one producer connection: one message per run, or per batch when
    ``batches`` (lists of run ids, ``raptorgrid.batching``) is given. A batch's message gets
    ``time_limits`` (soft, hard: one run's limits) multiplied by its size, since each run keeps
    its own limit inside the task. Returns how many runs were sent."""
    groups = [list(b) for b in batches] if batches is not None else [[r] for r in run_ids]
    groups = [[int(r) for r in g] for g in groups if g]
    if not groups:
        return 0
    with celery.producer_or_acquire() as producer:
        for group in groups:
            limits = {}
            if time_limits is not None and len(group) > 1:
                limits = {
                    "soft_time_limit": time_limits[0] * len(group),
                    "time_limit": time_limits[1] * len(group),
                }
            celery.send_task(RUN_TASK, args=[group], queue=queue, producer=producer, **limits)
    n = sum(len(g) for g in groups)
    log.info("enqueued %d runs in %d messages on %s", n, len(groups), queue)
    return n


def queue_depth(celery: Celery, *, queue: str) -> int:
    """Messages waiting in ``queue`` (not counting those a worker holds). Redis deletes an
    empty list, so a queue that does not exist (yet, or any more) holds 0 messages."""
    with celery.connection_for_write() as connection:
        channel = connection.default_channel
        try:
            declared = channel.queue_declare(queue=queue, passive=True)
        except ChannelError:
            return 0
        finally:
            _release_sql_session(channel)
        return declared.message_count


def held_by_workers(celery: Celery, *, queue: str) -> int:
    """Messages of ``queue`` that workers hold (delivered, not acknowledged: running, or
    reserved behind a running task). Known for Redis, whose transport keeps them in its
    ``unacked`` hash (values: [message, exchange, routing key]) and restores them to the queue
    when a holder dies (after the visibility timeout), so they are never lost; 0 for other
    transports, which report nothing."""
    with celery.connection_for_write() as connection:
        channel = connection.default_channel
        client = getattr(channel, "client", None)
        key = getattr(channel, "unacked_key", None)
        if client is None or key is None:
            _release_sql_session(channel)
            return 0
        held = 0
        for _, value in client.hscan_iter(key):
            try:
                routing_key = json.loads(value)[2]
            except (ValueError, IndexError, TypeError):
                continue
            held += routing_key == queue
        return held


def _release_sql_session(channel: object) -> None:
    """Return the embedded (``sqla+sqlite``) broker's database connection to its pool.

    kombu's SQLAlchemy transport keeps one ORM session per channel and never closes it; a
    count query leaves that session's connection checked out until the channel is garbage
    collected. The reconciler asks for the depth every few seconds, so the transport's pool
    (5 + 10 connections) ran dry after ~8 minutes of one long ``raptorgrid run`` (IEEE 118 dq
    campaign: ``QueuePool limit of size 5 overflow 10 reached``). Other transports have no
    ``_session``; nothing happens for them."""
    session = getattr(channel, "_session", None)
    if session is not None:
        session.close()
