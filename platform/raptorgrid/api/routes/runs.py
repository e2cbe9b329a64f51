"""/runs/{id}: one run with its scenario, metrics and (for failures) reason and advice; its worker,
traceback and the server paths of its message for admins only (``api.access``)."""

from __future__ import annotations

from fastapi import APIRouter

from raptorgrid.api.access import Reader, visible_run
from raptorgrid.api.deps import ReadAccess, ReaderDep, SessionDep
from raptorgrid.api.schemas import RunMetricsPublic, RunPublic, ScenarioPublic
from raptorgrid.tables import Run, RunMetrics, ScenarioRow
from solvers.status import FailureReason

router = APIRouter(prefix="/runs", tags=["runs"], dependencies=[ReadAccess])


def run_public(
    run: Run,
    metrics: RunMetrics | None,
    scenario: ScenarioRow | None = None,
    *,
    reader: Reader,
) -> RunPublic:
    """The run as ``reader`` may see it: worker and traceback for admins only, and the message
    without server paths for everyone else (the row keeps them)."""
    public = RunPublic.model_validate(run)
    return public.model_copy(
        update={
            "advice": FailureReason(run.reason).advice if run.reason else None,
            "metrics": RunMetricsPublic.model_validate(metrics) if metrics else None,
            "scenario": ScenarioPublic.model_validate(scenario) if scenario else None,
            "message": reader.message(run.message),
            "worker": run.worker if reader.is_admin else None,
            "traceback": run.traceback if reader.is_admin else None,
        }
    )


@router.get("/{run_id}", response_model=RunPublic)
def read_run(run_id: int, session: SessionDep, reader: ReaderDep) -> RunPublic:
    run, scenario, metrics = visible_run(session=session, reader=reader, run_id=run_id)
    return run_public(run, metrics, scenario, reader=reader)
