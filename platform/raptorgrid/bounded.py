"""Run one function call in a child process with a CPU-time, memory and wall-clock budget.

Used to check uploaded case files, which are hostile input until proven otherwise. A child
process, not a thread: a thread only frees the event loop, while the work still shares the
API's GIL, memory and CPU and cannot be stopped; a child gets hard kernel limits
(``RLIMIT_CPU``, ``RLIMIT_AS``), is killed past them or past its wall-clock time, and leaves
the API process untouched. Children are forked by a fork server that imported the parsers once
(milliseconds per child instead of an import of JAX) and each call gets a fresh child, so every
request has its own budget; at most ``MAX_CHILDREN`` run at a time (others wait for a slot).
Linux-only limits (``/proc``, ``resource``) are skipped where unavailable.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

PRELOAD = ["raptorgrid.cases", "models.psse.case"]
"""Modules the fork server imports once, so that each child starts with them loaded."""
MAX_CHILDREN = 2
"""Checks running at once (this API is meant for a few cores)."""

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(PRELOAD)
_SLOTS = threading.BoundedSemaphore(MAX_CHILDREN)


@dataclass(frozen=True)
class Budget:
    cpu_seconds: int
    memory_mb: int
    """Address space the call may add to the child's (the fork server's imports excluded)."""
    wall_seconds: float


class BudgetExceeded(Exception):
    """The call needed more than its budget of ``resource`` (cpu, memory or time)."""

    def __init__(self, resource_name: str, message: str) -> None:
        self.resource = resource_name
        super().__init__(message)


def _address_space() -> int | None:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return None


def _child(conn: Any, budget: Budget, function: Callable[..., Any], args: tuple) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (budget.cpu_seconds, budget.cpu_seconds + 1))
    base = _address_space()
    if base is not None:
        limit = base + budget.memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        outcome = ("ok", function(*args))
    except MemoryError:
        outcome = ("memory", None)
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
        outcome = ("raised", exc)
    conn.send(outcome)
    conn.close()


def run_bounded(function: Callable[..., Any], *args: Any, budget: Budget) -> Any:
    """``function(*args)`` in a fresh child within ``budget``; returns its result or re-raises
    its exception (which must pickle), else raises ``BudgetExceeded``. Blocking: call it from a
    worker thread, never on the event loop."""
    with _SLOTS:
        receiver, sender = _CONTEXT.Pipe(duplex=False)
        child = _CONTEXT.Process(target=_child, args=(sender, budget, function, args))
        child.start()
        sender.close()
        try:
            if not receiver.poll(budget.wall_seconds):
                raise BudgetExceeded(
                    "time", f"took longer than {budget.wall_seconds:g} s (the server is busy)"
                )
            try:
                kind, value = receiver.recv()
            except EOFError:  # the kernel ended it: CPU past the limit, or killed
                child.join(5)
                if child.exitcode in (-signal.SIGXCPU, -signal.SIGKILL):
                    raise BudgetExceeded(
                        "cpu", f"needed more than {budget.cpu_seconds} s of CPU"
                    ) from None
                raise RuntimeError(f"the check's process ended with {child.exitcode}") from None
        finally:
            receiver.close()
            if child.is_alive():
                child.kill()
            child.join()
    if kind == "memory":
        raise BudgetExceeded("memory", f"needed more than {budget.memory_mb} MB of memory")
    if kind == "raised":
        raise value
    return value
