"""Per-token rate limit on writes: a token bucket per owner, in the API process.

Each owner may make ``write_burst`` writes at once and ``write_rate_per_minute`` on average;
beyond that a write is answered 429 with ``Retry-After`` (seconds until a token is back).
The buckets live in one API process: with N processes behind a balancer an owner gets up to N
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
    def __init__(self, *, per_minute: float, burst: int) -> None:
        self.rate = per_minute / 60.0
        self.burst = float(burst)
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    def take(self, owner: str, now: float | None = None) -> float:
        """Take one write for ``owner``: 0.0 when allowed, else the seconds to wait."""
        now = time.monotonic() if now is None else now
        with self._lock:
            bucket = self._buckets.pop(owner, None) or _Bucket(self.burst, now)
            bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.at) * self.rate)
            bucket.at = now
            self._buckets[owner] = bucket  # most recently used last
            if len(self._buckets) > MAX_OWNERS:
                self._buckets.pop(next(iter(self._buckets)))
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return 0.0
            return (1.0 - bucket.tokens) / self.rate if self.rate > 0 else math.inf
