"""The reconciler's re-sends in batches, sized as a submission sizes them.

Runs whose worker died (expired lease), whose message was lost, or whose batch message is held
by a dead host go back to the broker grouped by campaign and configuration, at most
``batching.batch_size`` runs a message (before: one message per run, so a 2,000-run campaign
recovered after a host death lost batching: slower, and one Zarr block per run).
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy.orm import Session

from models.library import stored_sizes
from raptorgrid import repository as repo
from raptorgrid.batching import RunToSend, batch_size, batches, expected_run_seconds
from raptorgrid.settings import Settings


def resend_batches(
    *, session: Session, run_ids: Collection[int], settings: Settings
) -> list[list[int]]:
    """``run_ids`` as messages: per campaign and method, ``batch_size`` runs of one
    configuration each (the measured median solve time on the network, else the size prior)."""
    runs = repo.runs_to_resend(session=session, run_ids=run_ids)
    if settings.max_batch_size == 1:
        return [[r.run_id] for r in runs]
    groups: dict[tuple[int, str], list[repo.RunToResend]] = {}
    for run in runs:
        groups.setdefault((run.campaign_id, run.method), []).append(run)
    measured: dict[tuple[str, str], float | None] = {}
    out: list[list[int]] = []
    for (_, method), mine in groups.items():
        network = mine[0].network
        if (network, method) not in measured:
            found = repo.recent_solve_seconds(session=session, network=network, methods=[method])
            measured[network, method] = found.get(method)
        sizes = stored_sizes(network) or {}
        expected = expected_run_seconds(
            n_unknowns=int(sizes.get("n_x", 0)) + int(sizes.get("n_z", 0)),
            t_end=mine[0].t_end,
            measured_median=measured[network, method],
        )
        size = batch_size(expected_seconds=expected, n_runs=len(mine), settings=settings)
        out.extend(batches((RunToSend(r.run_id, (r.method, r.config_label)) for r in mine), size))
    return out
