"""Response schemas (the request schema is ``raptorgrid.spec.CampaignCreate``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from raptorgrid.spec import CampaignCreate
from raptorgrid.tables import Campaign
from solvers.status import FailureReason, RunStatus

__all__ = [
    "CampaignCreate",
    "CampaignCreated",
    "CampaignPublic",
    "CampaignStats",
    "Health",
    "RunMetricsPublic",
    "RunPublic",
    "RunsPublic",
    "ScenarioPublic",
]


class _FromRow(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class CampaignCreated(BaseModel):
    id: int
    n_scenarios: int
    n_runs: int


class CampaignPublic(_FromRow):
    id: int
    name: str
    network: str
    status: str
    t_end: float
    n_eval: int
    n_scenarios: int
    n_runs: int
    created_at: datetime
    finished_at: datetime | None
    counts: dict[RunStatus, int]
    done: int
    progress: float
    spec: dict[str, Any]
    owner: str | None = None

    @classmethod
    def from_row(cls, campaign: Campaign, counts: dict[str, int]) -> CampaignPublic:
        """The campaign row with its run counts by status and its progress."""
        done = campaign.n_succeeded + campaign.n_failed + campaign.n_cancelled
        fields = {k: getattr(campaign, k) for k in cls.model_fields if hasattr(campaign, k)}
        return cls.model_validate(
            {
                **fields,
                "counts": counts,
                "done": done,
                "progress": done / campaign.n_runs if campaign.n_runs else 1.0,
            }
        )


class RunMetricsPublic(_FromRow):
    attempt: int
    accepted: int
    rejected: int
    newton_iterations: int
    algebraic_iterations: int
    jacobian_evaluations: int
    lu_factorizations: int
    symbolic_analyses: int
    rhs_evaluations: int
    compile_seconds: float
    load_seconds: float
    solve_seconds: float
    runtime_seconds: float
    n_points: int
    n_accepted_points: int
    final_time: float | None
    state_error: float | None
    voltage_mae: float | None
    warnings: str | None = None
    kcl_max: float | None


class ScenarioPublic(_FromRow):
    id: int
    index: int
    label: str
    disturbance: dict[str, Any]
    ic_seed: int
    ic_spread: float


class RunPublic(_FromRow):
    id: int
    campaign_id: int
    scenario_id: int
    method: str
    options: dict[str, Any]
    config_label: str
    status: RunStatus
    reason: FailureReason | None
    advice: str | None = None
    message: str
    attempts: int
    worker: str | None
    zarr_group: str | None
    sim_time: float | None = None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    metrics: RunMetricsPublic | None = None
    scenario: ScenarioPublic | None = None
    traceback: str | None = None


class RunsPublic(BaseModel):
    data: list[RunPublic]
    count: int
    limit: int
    offset: int


class MethodStatsPublic(BaseModel):
    method: str
    config: str
    runs: int
    succeeded: int
    failed: int
    median_runtime_s: float | None
    mean_accepted: float | None
    mean_rejected: float | None
    mean_newton_iterations: float | None


class CampaignStats(BaseModel):
    campaign_id: int
    methods: list[MethodStatsPublic]


class Health(BaseModel):
    """Each dependency ``ok`` or ``unavailable`` (details only in the service's log)."""

    status: Literal["ok", "unavailable"]
    database: Literal["ok", "unavailable"]
    broker: Literal["ok", "unavailable"]
    store: Literal["ok", "unavailable"]
    version: str
