"""Writes to a full results store: retried with backoff while the leases are kept (the caller's
``Heartbeat``), then handed back to the queue (``workers.attempt.settle``) without counting the
attempt: a full disk is an infrastructure failure, not the run's result."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from raptorgrid.settings import Settings
from raptorgrid.store_space import StoreFull, is_full

log = logging.getLogger(__name__)

FIRST_DELAY = 0.5
MAX_DELAY = 8.0
"""Backoff of write retries on a full store (s): doubling from the first delay, capped."""

T = TypeVar("T")


def with_store_retry(action: Callable[[], T], *, settings: Settings, what: str) -> T:
    """``action()`` (a complete, atomic write), retried while the store has no space left, for
    at most ``store_retry_seconds``; then ``StoreFull``. Other errors pass through."""
    deadline = time.monotonic() + settings.store_retry_seconds
    delay = FIRST_DELAY
    while True:
        try:
            return action()
        except OSError as exc:
            if not is_full(exc):
                raise
            if time.monotonic() + delay > deadline:
                raise StoreFull(
                    exc.errno, f"the results store is full ({exc.strerror or exc})"
                ) from exc
            log.warning("%s: results store full, retrying the write in %.1f s", what, delay)
            time.sleep(delay)
            delay = min(2 * delay, MAX_DELAY)
