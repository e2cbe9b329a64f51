"""Batches of runs per task: how many runs of one method configuration one message carries.

A task pays a fixed cost besides its solves (broker round trip, task dispatch, the worker's
bookkeeping), so short runs are sent several to a message. The size comes from the expected
solve time of one run: enough runs to fill ``batch_target_seconds``, at most
``max_batch_size``, and never so many that the campaign has fewer than ``batch_min_tasks``
messages (so every worker gets work). Each run of a batch keeps its own claim, lease, attempt
count and final status (``workers.runner``, ``workers.publish``), so batching changes no
guarantee.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from raptorgrid.settings import Settings

SECONDS_PER_UNKNOWN = 2e-3
"""Prior for the solve time of one run, in CPU seconds per DAE unknown (n_x + n_z) and per
simulated second, used until a network and method have measured runs (measured:
docs/measurements.md, ``SECONDS_PER_UNKNOWN``); stiffer methods and faults cost more, which only
makes the batch smaller than it could be."""


@dataclass(frozen=True)
class RunToSend:
    run_id: int
    config: tuple[str, str]
    """(method, configuration label): only runs of one configuration share a batch."""


def expected_run_seconds(*, n_unknowns: int, t_end: float, measured_median: float | None) -> float:
    """A run's expected solve time (s): the measured median of earlier runs of the same network
    and method when there is one, else the size prior."""
    if measured_median is not None and measured_median > 0:
        return measured_median
    return SECONDS_PER_UNKNOWN * max(1, n_unknowns) * max(t_end, 1e-3)


def batch_size(*, expected_seconds: float, n_runs: int, settings: Settings) -> int:
    """Runs per message for ``n_runs`` runs of ``expected_seconds`` each (see module doc)."""
    by_cost = math.floor(settings.batch_target_seconds / max(expected_seconds, 1e-6))
    by_spread = math.ceil(n_runs / settings.batch_min_tasks)
    return max(1, min(by_cost, by_spread, settings.max_batch_size))


def batches(runs: Iterable[RunToSend], size: int) -> list[list[int]]:
    """The runs of each configuration, ``size`` at a time, in their order; configurations in
    the order they first appear. Grouped by configuration, not only consecutive runs: a campaign
    lists each scenario's methods together (radau, trapezoid dt 1e-6, trapezoid dt 1e-7, then the
    next scenario), so consecutive runs of one configuration were single runs and no batch
    formed."""
    by_config: dict[tuple[str, str], list[int]] = {}
    for run in runs:
        by_config.setdefault(run.config, []).append(run.run_id)
    return [ids[k : k + size] for ids in by_config.values() for k in range(0, len(ids), size)]


def single(run_ids: Sequence[int]) -> list[list[int]]:
    """One run per message (requeues of the reconciler)."""
    return [[int(r)] for r in run_ids]
