"""A worker process's state and its database calls: the settings and the database
(``WorkerContext``), transactions retried while the database is unreachable (``with_db_retry``)
and an attempt's final status recorded on its own (``finish_attempt``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

import raptorgrid.case_store
from raptorgrid import repository as repo
from raptorgrid.db import Database
from raptorgrid.settings import Settings, get_settings
from raptorgrid.tables import utcnow
from raptorgrid.zarr_store import consolidate_campaign
from sqlalchemy.exc import DisconnectionError, InterfaceError, OperationalError

if TYPE_CHECKING:
    from solvers.status import RunStatus

log = logging.getLogger(__name__)

TRANSIENT_ERRORS = (OperationalError, InterfaceError, DisconnectionError)
"""Errors that say the database is unreachable, not that the run is broken: retried."""

RETRY_FIRST_DELAY = 0.5
RETRY_MAX_DELAY = 8.0
"""Backoff of database retries (s): doubling from the first delay, capped."""

T = TypeVar("T")


def with_db_retry(action: Callable[[], T], *, settings: Settings, what: str) -> T:
    """``action()`` (one whole transaction), retried with bounded exponential backoff while the
    database is unreachable (only ``TRANSIENT_ERRORS``), for at most ``db_retry_seconds``.
    Each try is a complete transaction, so a failed try leaves nothing half written."""
    deadline = time.monotonic() + settings.db_retry_seconds
    delay = RETRY_FIRST_DELAY
    while True:
        try:
            return action()
        except TRANSIENT_ERRORS as exc:
            if time.monotonic() + delay > deadline:
                log.error("%s: database still unreachable, giving up: %s", what, exc)
                raise
            log.warning("%s: database unreachable, retrying in %.1f s: %s", what, delay, exc)
            time.sleep(delay)
            delay = min(2 * delay, RETRY_MAX_DELAY)


@dataclass
class WorkerContext:
    """Per-process state of a worker: settings and the database (the network systems are
    cached by ``models.library.build_system``)."""

    settings: Settings
    db: Database
    _celery: Any = None

    @property
    def celery(self) -> Any:
        """The Celery app (created on first use): runs a finish queued are sent with it."""
        if self._celery is None:
            from raptorgrid.celery_app import create_celery

            self._celery = create_celery(self.settings)
        return self._celery

    def send(self, run_ids: list[int]) -> None:
        """Send runs queued in SQL by this worker (a CCT search's next probes). If this fails
        the reconciler re-sends them (runs queued in SQL without a message)."""
        if not run_ids:
            return
        from raptorgrid.queueing import enqueue_runs

        try:
            enqueue_runs(self.celery, run_ids, queue=self.settings.queue)
        except Exception:  # noqa: BLE001 - the reconciler re-sends queued runs
            log.exception("sending runs %s failed; the reconciler re-sends them", run_ids)


@cache
def worker_context() -> WorkerContext:
    settings = get_settings()
    raptorgrid.case_store.use_settings(settings)
    return WorkerContext(settings=settings, db=Database.from_settings(settings))


def finish_attempt(
    ctx: WorkerContext, claim: repo.Claim, status: RunStatus, **fields: Any
) -> repo.FinishOutcome:
    """Record an attempt's final status on its own (a failure, a cancellation: what does not go
    through a block's ``publish.commit``); ignored when a later attempt owns the run; the
    campaign's Zarr metadata consolidated when this finished it."""

    def finish() -> repo.FinishOutcome:
        with ctx.db.write() as session:
            return repo.finish_run(
                session=session,
                run_id=claim.run_id,
                attempt=claim.attempt,
                status=status,
                now=utcnow(),
                **fields,
            )

    outcome = with_db_retry(finish, settings=ctx.settings, what=f"run {claim.run_id} finish")
    if not outcome.recorded:
        log.warning("run %d attempt %d: a later attempt owns the run", claim.run_id, claim.attempt)
    elif outcome.campaign_finished:
        consolidate_campaign(ctx.settings.zarr_root, outcome.campaign_id)
        log.info("campaign %d finished", outcome.campaign_id)
    return outcome
