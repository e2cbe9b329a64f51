"""Per-method summary of a campaign (the CLI's table and ``GET /campaigns/{id}/stats``)."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from raptorgrid.tables import Run, RunMetrics
from solvers.status import RunStatus


@dataclass(frozen=True)
class MethodSummary:
    """One method configuration over a campaign; means over runs with metrics."""

    method: str
    config: str
    runs: int
    succeeded: int
    failed: int
    median_runtime_s: float | None
    mean_accepted: float | None
    mean_rejected: float | None
    mean_newton_iterations: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def method_summary(*, session: Session, campaign_id: int) -> list[MethodSummary]:
    rows = session.execute(
        select(
            Run.method,
            Run.config_label,
            Run.status,
            RunMetrics.runtime_seconds,
            RunMetrics.accepted,
            RunMetrics.rejected,
            RunMetrics.newton_iterations,
        )
        .outerjoin(RunMetrics, RunMetrics.run_id == Run.id)
        .where(Run.campaign_id == campaign_id)
        .order_by(Run.id)
    ).all()
    groups: dict[tuple[str, str], list] = {}
    for row in rows:
        groups.setdefault((row.method, row.config_label), []).append(row)
    out = []
    for (method, config), members in groups.items():
        measured = [r for r in members if r.runtime_seconds is not None]
        out.append(
            MethodSummary(
                method=method,
                config=config,
                runs=len(members),
                succeeded=sum(r.status == RunStatus.SUCCEEDED.value for r in members),
                failed=sum(r.status == RunStatus.FAILED.value for r in members),
                median_runtime_s=(
                    statistics.median(r.runtime_seconds for r in measured) if measured else None
                ),
                mean_accepted=_mean([r.accepted for r in measured]),
                mean_rejected=_mean([r.rejected for r in measured]),
                mean_newton_iterations=_mean([r.newton_iterations for r in measured]),
            )
        )
    return out
