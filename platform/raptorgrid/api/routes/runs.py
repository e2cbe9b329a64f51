"""/runs/{id}: one run with its scenario, metrics and (for failures) reason and advice."""

from __future__ import annotations

from fastapi import APIRouter

from raptorgrid import repository as repo
from raptorgrid.api.deps import ReadAccess, SessionDep
from raptorgrid.api.errors import not_found
from raptorgrid.api.schemas import RunMetricsPublic, RunPublic, ScenarioPublic
from raptorgrid.tables import Run, RunMetrics, ScenarioRow
from solvers.status import FailureReason

router = APIRouter(prefix="/runs", tags=["runs"], dependencies=[ReadAccess])


def run_public(
    run: Run,
    metrics: RunMetrics | None,
    scenario: ScenarioRow | None = None,
    *,
    with_traceback: bool = False,
) -> RunPublic:
    public = RunPublic.model_validate(run)
    return public.model_copy(
        update={
            "advice": FailureReason(run.reason).advice if run.reason else None,
            "metrics": RunMetricsPublic.model_validate(metrics) if metrics else None,
            "scenario": ScenarioPublic.model_validate(scenario) if scenario else None,
            "traceback": run.traceback if with_traceback else None,
        }
    )


@router.get("/{run_id}", response_model=RunPublic)
def read_run(run_id: int, session: SessionDep) -> RunPublic:
    found = repo.get_run(session=session, run_id=run_id)
    if found is None:
        raise not_found("run", run_id)
    run, scenario, metrics = found
    return run_public(run, metrics, scenario, with_traceback=True)
