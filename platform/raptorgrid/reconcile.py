"""The reconciler: requeue runs whose worker vanished.

Delivery is at least once on Redis, but a serverless transport loses the message of a worker
killed with ``kill -9``, and any worker can die mid-run. The SQL lease is the ground truth: a
running run whose lease expired is requeued (or failed after ``max_attempts``), and a queued
run not sent for ``requeue_grace_seconds`` whose message the broker no longer has (compared
run by run with the messages waiting in the queue and, on Redis, those delivered and not
acknowledged; however deep the queue) is sent again (claims are idempotent, so a duplicate
message is harmless). Runs waiting behind the running one in a batch message are kept fresh by
the worker's heartbeats (``repo.mark_in_transit``): that is their lease. On Redis, the unstarted
runs of a message held by a worker host that died (delivered, unacknowledged, not marked for a
lease) are re-sent then, not after the broker's visibility timeout (Redis restores the message
later; its runs are final by then and skipped). Re-sends are batched (``raptorgrid.resend``).
Each pass also removes staging data that crashed writers left behind. Runs in the CLI process
and as ``raptorgrid reconcile``, which survives broker and database outages: a failed pass is
logged and retried with exponential backoff.
"""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime

from celery import Celery

from raptorgrid import repository as repo
from raptorgrid.db import Database
from raptorgrid.queueing import broker_runs, enqueue_runs
from raptorgrid.resend import resend_batches
from raptorgrid.settings import Settings
from raptorgrid.tables import utcnow
from raptorgrid.zarr_store import clean_staging, consolidate_campaign

log = logging.getLogger(__name__)

BACKOFF_MAX_SECONDS = 60.0
"""Longest wait between reconcile passes while the broker or the database is down."""


def reconcile_once(*, db: Database, celery: Celery, settings: Settings) -> repo.Requeue:
    """One pass; returns the run ids requeued (expired or stale) and failed."""
    with db.write() as session:
        outcome = repo.requeue_expired(
            session=session, now=utcnow(), max_attempts=settings.max_attempts
        )
    for campaign_id in outcome.finished_campaigns:
        consolidate_campaign(settings.zarr_root, campaign_id)
    to_send = list(outcome.requeued)
    # queued runs not sent for a while whose message the broker no longer has, however deep
    # the queue, and unstarted runs of a batch held by a dead host (its heartbeats stopped a
    # lease ago): the broker is read first, so a run sent after that read is not yet stale
    broker = broker_runs(celery, queue=settings.queue)
    held = {r: datetime.fromtimestamp(t, UTC) for r, t in broker.held_only().items()}
    with db.write() as session:
        stale = repo.stale_queued(
            session=session,
            now=utcnow(),
            older_than=settings.requeue_grace_seconds,
            in_broker=broker.all,
            held=held,
            lease_seconds=settings.lease_seconds,
        )
    outcome.requeued.extend(stale)
    to_send.extend(stale)
    if to_send:
        with db.read() as session:
            outcome.messages = resend_batches(session=session, run_ids=to_send, settings=settings)
        enqueue_runs(
            celery,
            to_send,
            queue=settings.queue,
            batches=outcome.messages,
            time_limits=(settings.soft_time_limit, settings.hard_time_limit),
        )
        log.warning("reconciler re-sent %d runs in %d messages: %s", len(to_send),
                    len(outcome.messages), to_send[:20])  # fmt: skip
    if outcome.failed:
        log.warning(
            "reconciler failed %d runs out of attempts: %s", len(outcome.failed), outcome.failed
        )
    # a staged write older than a message's visibility window belongs to a dead writer
    removed = clean_staging(settings.zarr_root, older_than=settings.visibility_timeout)
    if removed:
        log.warning("reconciler removed %d orphaned staging entries", removed)
    return outcome


def reconcile_forever(
    *, db: Database, celery: Celery, settings: Settings, stop: threading.Event
) -> None:
    """Reconcile every ``reconcile_seconds`` until ``stop`` is set. A pass that fails (broker
    or database unreachable) is logged and the next is tried after a doubling delay, at most
    ``BACKOFF_MAX_SECONDS``; the first pass that succeeds restores the normal interval."""
    delay = settings.reconcile_seconds
    while not stop.wait(delay):
        try:
            reconcile_once(db=db, celery=celery, settings=settings)
        except Exception as exc:  # noqa: BLE001 - an outage of any service: keep going
            delay = min(BACKOFF_MAX_SECONDS, max(2 * delay, settings.reconcile_seconds))
            log.warning(
                "reconcile pass failed (%s: %s); next try in %.1f s",
                type(exc).__name__,
                str(exc).splitlines()[0] if str(exc) else "",
                delay,
            )
            continue
        if delay != settings.reconcile_seconds:
            log.warning("reconcile pass succeeded again; back to every %.1f s",
                        settings.reconcile_seconds)  # fmt: skip
        delay = settings.reconcile_seconds
