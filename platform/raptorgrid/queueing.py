"""Sending run ids to the broker (always after the rows are committed) and reading its depth."""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from celery import Celery
from kombu.exceptions import ChannelError

from raptorgrid.celery_app import RUN_TASK, task_time_limits

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
    Celery limits for its size (``task_time_limits`` of ``time_limits``: one run's soft and hard
    limits), since each run keeps its own limit inside the task. Returns how many runs were
    sent."""
    groups = [list(b) for b in batches] if batches is not None else [[r] for r in run_ids]
    groups = [[int(r) for r in g] for g in groups if g]
    if not groups:
        return 0
    with celery.producer_or_acquire() as producer:
        for group in groups:
            limits = {}
            if time_limits is not None and len(group) > 1:
                soft, hard = task_time_limits(*time_limits, len(group))
                limits = {"soft_time_limit": soft, "time_limit": hard}
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


@dataclass
class BrokerRuns:
    """The run ids of the messages of a queue the broker still has: ``waiting`` in the queue,
    and ``held``: delivered to a consumer and not acknowledged (Redis's ``unacked`` hash), each
    run with the latest delivery time of the messages that carry it (epoch seconds)."""

    waiting: set[int] = field(default_factory=set)
    held: dict[int, float] = field(default_factory=dict)

    @property
    def all(self) -> set[int]:
        return self.waiting | set(self.held)

    def held_only(self) -> dict[int, float]:
        """Held runs with no message waiting: only their holder (alive or not) can run them."""
        return {r: t for r, t in self.held.items() if r not in self.waiting}


def runs_in_broker(celery: Celery, *, queue: str) -> set[int]:
    """Run ids of the messages of ``queue`` the broker still has, waiting or held
    (``broker_runs``)."""
    return broker_runs(celery, queue=queue).all


def broker_runs(celery: Celery, *, queue: str) -> BrokerRuns:
    """The runs of the messages of ``queue`` the broker still has, however deep the queue:
    waiting in it, and on Redis also delivered to a worker and not acknowledged (its
    ``unacked`` hash, restored to the queue when the visibility timeout passes), with when they
    were delivered (``unacked_index``). A run queued in SQL but in none of these lost its
    message (the reconciler re-sends it); one held only, whose holder stopped heartbeating, was
    held by a dead host (re-sent too). The SQLAlchemy transport hides a message once delivered
    and never restores it: runs of a message a worker holds are running in SQL, or kept fresh
    by that worker's heartbeats (``repo.mark_in_transit``)."""
    with celery.connection_for_write() as connection:
        channel = connection.default_channel
        try:
            client = getattr(channel, "client", None)
            if client is not None and hasattr(channel, "unacked_key"):
                return _redis_runs(channel, client, queue)
            return BrokerRuns(waiting=_sqla_runs(channel, queue))
        finally:
            _release_sql_session(channel)


_PAGE = 500
"""Messages read per Redis round trip."""


def _redis_runs(channel, client, queue: str) -> BrokerRuns:  # noqa: ANN001 - kombu objects
    """Waiting messages first (every priority list), then the unacknowledged ones: a message
    moving from one to the other between the reads is seen at least once, or (rarely) missed,
    which only costs a duplicate message (claims are idempotent)."""
    found = BrokerRuns()
    for priority in channel.priority_steps:
        key = channel._q_for_pri(queue, priority)  # noqa: SLF001 - the transport's list key
        start = 0
        while page := client.lrange(key, start, start + _PAGE - 1):
            for raw in page:
                found.waiting |= _message_runs(raw)
            start += _PAGE
    delivered = {
        _text(tag): score
        for tag, score in client.zrange(channel.unacked_index_key, 0, -1, withscores=True)
    }
    for tag, value in client.hscan_iter(channel.unacked_key):
        try:
            message, _, routing_key = json.loads(value)
        except (ValueError, TypeError):
            continue
        if routing_key != queue:
            continue
        when = delivered.get(_text(tag), time.time())  # not indexed yet: just delivered
        for run_id in _message_runs(message):
            found.held[run_id] = max(when, found.held.get(run_id, 0.0))
    return found


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _sqla_runs(channel, queue: str) -> set[int]:  # noqa: ANN001 - kombu's SQLAlchemy channel
    runs: set[int] = set()
    rows = channel._query_all(queue).filter(channel.message_cls.visible.is_(True))  # noqa: SLF001
    for message in rows.yield_per(_PAGE):
        runs |= _message_runs(message.payload)
    return runs


def _message_runs(raw: str | bytes | dict) -> set[int]:
    """The run ids a run message carries (Celery protocol 2: body [args, kwargs, embed], the
    task's one argument a run id or a list of them); empty for anything else."""
    try:
        message = json.loads(raw) if isinstance(raw, str | bytes) else raw
        if message.get("headers", {}).get("task") != RUN_TASK:
            return set()
        body = message["body"]
        if message.get("properties", {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args = json.loads(body)[0]
        ids = args[0] if isinstance(args[0], list) else [args[0]]
        return {int(i) for i in ids}
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        log.warning("unreadable message in the run queue: %.200r", raw)
        return set()


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
