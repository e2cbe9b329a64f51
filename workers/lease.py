"""Keeping a running attempt's lease: ``Heartbeat`` (an attempt's progress, its renewals, and a
lost lease or a cancelled campaign raised in the attempt) and ``LeaseClock`` (a batch's one
renewal thread and its last renewal)."""

from __future__ import annotations

import logging
import threading
import time

from raptorgrid import repository as repo
from raptorgrid.tables import utcnow

from workers.context import WorkerContext, with_db_retry
from workers.limits import RunTimeLimit, alarm_shield

log = logging.getLogger(__name__)


class LeaseLost(Exception):
    """Another attempt owns the run now (our lease expired and it was re-claimed)."""


class RunCancelled(Exception):
    """The run's campaign was cancelled; raised from the progress callback to stop the solver."""


class LeaseClock:
    """When the worker last renewed a lease of its batch message (``time.monotonic()``; the
    claim counts as one), shared by the batch's runs: a batch of short runs renews, and marks
    the runs still waiting in its message as in transit, every ``heartbeat_seconds``, not once
    per run (a renewal is a write transaction, ~3 ms).

    It also owns the one thread that renews the running attempt's lease when it has gone
    ``heartbeat_seconds`` without a renewal (``Heartbeat``): started with the batch's first
    attempt, stopped by ``close``. A thread per attempt cost 0.4 ms per run on an idle machine
    and 2.7 ms on a loaded one (its start and join wait for the scheduler)."""

    def __init__(self, period: float = 1.0) -> None:
        self.renewed = time.monotonic()
        self.period = period
        self._current: Heartbeat | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def attach(self, heartbeat: Heartbeat) -> None:
        """Keep ``heartbeat``'s lease from the thread (started on the first attempt)."""
        with self._lock:
            self._current = heartbeat
            if self._thread is None:
                self._thread = threading.Thread(target=self._keep, name="lease", daemon=True)
                self._thread.start()

    def detach(self) -> None:
        """Stop keeping the attempt's lease; waits for a renewal in progress, so none is made
        for an attempt that has ended."""
        with self._lock:
            self._current = None

    def close(self) -> None:
        """Stop the thread (it ends within half a period)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.period + 10)

    def _keep(self) -> None:
        while not self._stop.wait(self.period / 2):
            with self._lock:
                heartbeat = self._current
                if heartbeat is None or time.monotonic() - self.renewed < self.period:
                    continue
                heartbeat.renew_from_thread()


class Heartbeat:
    """Progress of the running attempt: called with the simulated time of every accepted
    advance; at most every ``heartbeat_seconds`` it renews the lease and records that time
    (``runs.sim_time``), and it stops the run when the lease was lost or the campaign cancelled.

    Used as a context manager (the whole attempt, from claim to commit) it also renews the
    lease from a thread whenever the attempt has gone ``heartbeat_seconds`` without a renewal:
    building a network, compiling a structure or writing Zarr reports no advance, and on a
    loaded host those phases outlived the lease (a cold ieee39 RAPTOR compile with a 2 s lease:
    the run was requeued twice, attempts 3). The thread is the batch's (``LeaseClock``). What
    it learns (lease lost, campaign cancelled) is raised in the attempt at its next advance or
    ``beat``; a database outage in the thread is only logged (the attempt's own renewals retry
    and report it).

    ``ahead``: the runs of its group claimed with it and still waiting (``execute_batch``):
    every renewal renews their leases too, in the same transaction."""

    def __init__(
        self,
        ctx: WorkerContext,
        claim: repo.Claim,
        in_transit: tuple[int, ...] = (),
        clock: LeaseClock | None = None,
        ahead: tuple[repo.Claim, ...] = (),
    ) -> None:
        self.ctx, self.claim, self.in_transit = ctx, claim, list(in_transit)
        self.ahead = {c.run_id: c.attempt for c in ahead}
        self.started = time.monotonic()
        self._own_clock = clock is None  # a run alone: its clock (and thread) is its own
        self.clock = clock or LeaseClock(ctx.settings.heartbeat_seconds)
        self.sim_time: float | None = None
        self._lock = threading.Lock()
        self._state: repo.LeaseState | None = None

    def __enter__(self) -> Heartbeat:
        self.clock.attach(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.clock.detach()
        if self._own_clock:
            self.clock.close()

    def __call__(self, t: float) -> None:
        self.sim_time = t
        now = time.monotonic()
        if now - self.started > self.ctx.settings.soft_time_limit:
            raise RunTimeLimit(f"run {self.claim.run_id} passed its soft time limit at t = {t:g}")
        self._raise_for(self._state)
        if now - self.last >= self.ctx.settings.heartbeat_seconds:
            with alarm_shield():
                self.beat()

    @property
    def last(self) -> float:
        """When the batch's last renewal was (``time.monotonic()``)."""
        return self.clock.renewed

    def check(self) -> None:
        """Raise what the lease thread learnt; renew now if a renewal is due (a long build)."""
        self._raise_for(self._state)
        if time.monotonic() - self.last >= self.ctx.settings.heartbeat_seconds:
            self.beat()

    def beat(self) -> None:
        state = with_db_retry(
            self._renew, settings=self.ctx.settings, what=f"run {self.claim.run_id} heartbeat"
        )
        self._raise_for(state)

    def _renew(self) -> repo.LeaseState:
        with self._lock:
            with self.ctx.db.write() as session:
                state = repo.renew_leases(
                    session=session,
                    attempts={self.claim.run_id: self.claim.attempt, **self.ahead},
                    now=utcnow(),
                    lease_seconds=self.ctx.settings.lease_seconds,
                    sim_times=None if self.sim_time is None
                    else {self.claim.run_id: self.sim_time},
                )[self.claim.run_id]  # fmt: skip
                # the rest of this batch waits in the message this worker holds: not lost
                repo.mark_in_transit(session=session, run_ids=self.in_transit, now=utcnow())
            self.clock.renewed = time.monotonic()
            if state is not repo.LeaseState.HELD:
                self._state = state
            return state

    def renew_from_thread(self) -> None:
        """The lease thread's renewal (``LeaseClock``): what it learns is raised in the attempt
        later; a failure is only logged (the attempt's own renewals retry and report it)."""
        if self._state is not None:
            return
        try:
            self._renew()
        except Exception as exc:  # noqa: BLE001 - the attempt's own renewals report it
            log.warning("run %d: lease renewal from the heartbeat thread failed: %s",
                        self.claim.run_id, exc)  # fmt: skip

    def _raise_for(self, state: repo.LeaseState | None) -> None:
        if state is repo.LeaseState.LOST:
            raise LeaseLost(f"run {self.claim.run_id} attempt {self.claim.attempt} lost its lease")
        if state is repo.LeaseState.CANCELLED:
            raise RunCancelled(f"run {self.claim.run_id}: campaign cancelled")


class InTransit:
    """Marks a batch message's queued runs as in transit (``repo.mark_in_transit``) when the
    message arrives and every ``heartbeat_seconds`` from a thread until the batch ends: the
    lease of its unstarted runs. The reconciler re-sends the unstarted runs of a held message
    whose marks stopped for a lease (its host died; ``repo.stale_queued``), so the phases before
    the first attempt's heartbeats (reading the batch, choosing the vectorized path) must be
    covered too. Claimed and final runs are left alone by the update."""

    def __init__(self, ctx: WorkerContext, run_ids: list[int]) -> None:
        self.ctx, self.run_ids = ctx, list(run_ids)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._keep, name="in-transit", daemon=True)

    def __enter__(self) -> InTransit:
        self._mark()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=self.ctx.settings.heartbeat_seconds + 10)

    def _mark(self) -> None:
        try:
            with self.ctx.db.write() as session:
                repo.mark_in_transit(session=session, run_ids=self.run_ids, now=utcnow())
        except Exception as exc:  # noqa: BLE001 - an outage: the runs' own renewals report it
            log.warning("runs %s: marking in transit failed: %s", self.run_ids[:5], exc)

    def _keep(self) -> None:
        while not self._stop.wait(self.ctx.settings.heartbeat_seconds):
            self._mark()
