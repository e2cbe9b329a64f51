"""A run's soft time limit (``soft_time_limit``): the exception, the run's own SIGALRM alarm for
a solver stuck inside one step (``run_alarm``), the shield that holds it off during a database
write (``alarm_shield``), and the time-limit record written again when Celery's backstop limit
interrupts it (``despite_late_limit``)."""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


class RunTimeLimit(Exception):
    """The run has been solving for longer than ``soft_time_limit``; raised from the progress
    callback, at an accepted advance (a safe point of every method), so it holds for each run of
    a batch and whatever library callback the solver is in when Celery's signal fires; and by
    the run's own alarm (``run_alarm``) when no advance comes at all (a solver stuck inside one
    step, e.g. MINPACK on a singular algebraic system: seen for 10+ minutes inside a batch,
    whose Celery limit is the batch's)."""


_SHIELD = threading.local()


@contextlib.contextmanager
def alarm_shield():
    """Hold off ``run_alarm``'s exception while the block runs (a database write from a progress
    callback): an exception raised mid-commit leaves the connection and the run's transaction in
    an unknown state, so the alarm re-arms itself for 50 ms and fires after the block."""
    _SHIELD.depth = getattr(_SHIELD, "depth", 0) + 1
    try:
        yield
    finally:
        _SHIELD.depth -= 1


@contextlib.contextmanager
def run_alarm(seconds: float, run_id: int):
    """Raise ``RunTimeLimit`` in this (the main) thread once ``seconds`` of wall time have
    passed, through SIGALRM; a no-op outside the main thread. The exception is raised only while
    the block runs and outside ``alarm_shield``; a signal still pending when the block has
    ended does nothing. A timer armed before (pytest-timeout's, say) keeps its deadline and
    handler: the earlier of the two fires first, and it is re-armed with its remaining time on
    exit. Celery's own soft limit is a later backstop (``raptorgrid.celery_app.task_time_limits``),
    so the two never race."""
    if threading.current_thread() is not threading.main_thread() or seconds <= 0:
        yield
        return
    start = time.monotonic()
    deadline = start + seconds
    earlier_fired = False
    active = True

    def expired(signum, frame):  # noqa: ANN001
        nonlocal earlier_fired
        if not active:  # the block has ended: only an earlier timer's own deadline counts
            if callable(previous) and before > 0 and time.monotonic() >= start + before - 1e-3:
                previous(signum, frame)
            return
        if time.monotonic() >= deadline - 1e-3:
            if getattr(_SHIELD, "depth", 0):
                signal.setitimer(signal.ITIMER_REAL, 0.05)
                return
            raise RunTimeLimit(f"run {run_id} passed its soft time limit inside a solver step")
        earlier_fired = True  # the earlier timer's deadline: its handler decides, ours re-arms
        signal.setitimer(signal.ITIMER_REAL, max(deadline - time.monotonic(), 1e-3))
        if callable(previous):
            previous(signum, frame)

    previous = signal.signal(signal.SIGALRM, expired)
    before, interval = signal.getitimer(signal.ITIMER_REAL)
    signal.setitimer(signal.ITIMER_REAL, min(seconds, before) if before > 0 else seconds)
    try:
        yield
    finally:
        active = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if before > 0 and not earlier_fired:
            left = before - (time.monotonic() - start)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-3), interval)


def despite_late_limit(record: Callable[[], object], time_limit_errors: tuple) -> None:
    """Run ``record`` (the write of a ``time_limit`` failure), once more if Celery's soft limit,
    a backstop behind the run's own, interrupts it: the interrupted transaction rolled back, and
    the run would otherwise stay "running" until its lease expired (for good where no
    reconciler runs)."""
    for _ in range(2):
        try:
            record()
            return
        except time_limit_errors:
            log.warning(
                "Celery's soft limit interrupted a time-limit failure record: writing it again"
            )
