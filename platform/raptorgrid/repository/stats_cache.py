"""Per-configuration statistics cached per process, exact because keyed by a version.

``campaigns.stats_version`` is bumped in the same transaction as every change that can alter
what ``stats.config_stats`` reports for a view this cache serves:

* a run reaching a final status, with its metrics (``record_final``, called by ``finish_run``,
  ``cancel_campaign`` and the reconciler when it gives up on a run);
* scoring writing a run's error columns and verdict (``scoring.score.write_scores``).

The per-configuration totals that a miss reads for the unfiltered views
(``repository.totals``, 0006) are written at the same two points, in the same transactions.

Claims and requeues only move runs between ``queued`` and ``running``: that changes no count,
metric or error of any view except those filtered to ``status=queued|running``, which are
therefore never cached (``cacheable``). A run's metrics are written once, when it reaches its
final status, and a final status never changes again.

The route reads the campaign row (and so its version) before the aggregate query, so a stored
entry holds data at least as new as its version: a reader never gets a result older than its
own snapshot, and one version bump makes every entry of the campaign a miss.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from datetime import datetime

from sqlalchemy.orm import Session

from raptorgrid.repository.stats import ConfigStats, Filters, config_stats
from raptorgrid.tables import Campaign
from solvers.status import RunStatus

Stamp = tuple[datetime, int]
"""What makes an entry valid: the campaign's creation time (a deleted campaign's id can be
reused on SQLite) and its ``stats_version``."""


def cacheable(filters: Filters) -> bool:
    """Views that only claims and requeues can change are computed every time."""
    return filters.status is None or RunStatus(filters.status).is_final


class StatsCache:
    """A bounded LRU of ``config_stats`` results (every configuration, in order of first run)
    per (campaign, filters), each valid for one ``Stamp``; thread-safe."""

    def __init__(self, max_entries: int = 256) -> None:
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[tuple[int, Filters], tuple[Stamp, list[ConfigStats]]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def config_stats(
        self, *, session: Session, campaign: Campaign, filters: Filters
    ) -> list[ConfigStats]:
        """Every configuration's statistics under ``filters``: from the cache while the
        campaign's version is the one they were computed at, else computed and stored.
        ``campaign`` must have been read in ``session``, before this call."""
        if not cacheable(filters):
            return config_stats(session=session, campaign_id=campaign.id, filters=filters)[0]
        key = (campaign.id, filters)
        stamp: Stamp = (campaign.created_at, campaign.stats_version)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry[0] == stamp:
                self._entries.move_to_end(key)
                self.hits += 1
                return entry[1]
            self.misses += 1
        rows, _ = config_stats(session=session, campaign_id=campaign.id, filters=filters)
        with self._lock:
            self._entries[key] = (stamp, rows)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return rows

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
