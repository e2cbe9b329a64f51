"""Token buckets per key, in the API process: writes per token owner, failed authentications
per client address.

Each owner may make ``write_burst`` writes at once and ``write_rate_per_minute`` on average;
beyond that a write is answered 429 with ``Retry-After`` (seconds until a token is back). Each
client may fail ``auth_failure_burst`` authentications at once and ``auth_failures_per_minute``
on average; beyond that every request of it that sends a token is 429 until the bucket refills.
The buckets live in one API process: with N processes behind a balancer a key gets up to N
times the rate (documented in docs/security.md; a shared store would be the next step).
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

MAX_OWNERS = 100_000
"""Buckets kept at most (the least recently used go first): memory stays bounded."""


@dataclass
class _Bucket:
    tokens: float
    at: float


class WriteRateLimiter:
    """A token bucket per key (an owner, a client address), least recently used dropped."""

    def __init__(self, *, per_minute: float, burst: int) -> None:
        self.rate = per_minute / 60.0
        self.burst = float(burst)
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    def take(self, owner: str, now: float | None = None) -> float:
        """Take one write for ``owner``: 0.0 when allowed, else the seconds to wait."""
        return self._use(owner, now, take=True)

    def wait(self, key: str, now: float | None = None) -> float:
        """Seconds until ``key`` may take one (0.0: now), taking nothing."""
        return self._use(key, now, take=False)

    def _use(self, key: str, now: float | None, *, take: bool) -> float:
        now = time.monotonic() if now is None else now
        with self._lock:
            bucket = self._buckets.pop(key, None) or _Bucket(self.burst, now)
            bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.at) * self.rate)
            bucket.at = now
            self._buckets[key] = bucket  # most recently used last
            if len(self._buckets) > MAX_OWNERS:
                self._buckets.pop(next(iter(self._buckets)))
            if bucket.tokens >= 1.0:
                if take:
                    bucket.tokens -= 1.0
                return 0.0
            return (1.0 - bucket.tokens) / self.rate if self.rate > 0 else math.inf
