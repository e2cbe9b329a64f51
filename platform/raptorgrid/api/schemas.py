"""Response schemas (the request schemas are ``raptorgrid.spec.CampaignCreate`` and
``RetryRequest``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from raptorgrid.repository.retry import DEFAULT_RETRY_REASONS, RETRY_REASONS
from raptorgrid.spec import CampaignCreate, Thresholds
from raptorgrid.tables import Campaign
from solvers.status import FailureReason, RunStatus

__all__ = [
    "CampaignCreate",
    "CampaignCreated",
    "CampaignList",
    "CampaignPublic",
    "CampaignStats",
    "CctTable",
    "Failures",
    "Health",
    "Pareto",
    "Ranking",
    "RetryPublic",
    "RetryRequest",
    "RunMetricsPublic",
    "RunPublic",
    "RunsPublic",
    "ScenarioPublic",
    "TableOne",
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
    spec: dict[str, Any] | None
    """The submitted spec: for the campaign's owner and admins only (else null)."""
    owner: str | None = None
    """For the campaign's owner and admins only (else null)."""
    paused: str | None = None
    """Why the campaign is not progressing, where it is not by itself (runs waiting for space in
    a full results store: they resume once there is space); null otherwise."""

    @classmethod
    def from_row(
        cls, campaign: Campaign, counts: dict[str, int], *, private: bool = True, waiting: int = 0
    ) -> CampaignPublic:
        """The campaign row with its run counts by status and its progress; without its owner
        and spec unless ``private`` (the reader owns it or is an admin); ``waiting``: its runs
        waiting for space in the results store (``repository.store_waiting``)."""
        done = campaign.n_succeeded + campaign.n_failed + campaign.n_cancelled
        fields = {k: getattr(campaign, k) for k in cls.model_fields if hasattr(campaign, k)}
        if not private:
            fields.update(spec=None, owner=None)
        return cls.model_validate(
            {
                **fields,
                "counts": counts,
                "done": done,
                "progress": done / campaign.n_runs if campaign.n_runs else 1.0,
                "paused": (
                    f"the results store is full: {waiting} run(s) wait for space and resume "
                    "once there is some (GET /health shows the free bytes)"
                    if waiting
                    else None
                ),
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
    """The runtime: solving only (compile, load and overhead are the other columns)."""
    overhead_seconds: float
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
    """host:pid of the worker's last attempt: for admins only (else null)."""
    zarr_group: str | None
    sim_time: float | None = None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    metrics: RunMetricsPublic | None = None
    scenario: ScenarioPublic | None = None
    traceback: str | None = None
    """The traceback of an internal error: for admins only (else null)."""


class RunsPublic(BaseModel):
    data: list[RunPublic]
    count: int
    limit: int
    offset: int


class RetryRequest(BaseModel):
    """``POST /campaigns/{id}/retry``: the failure reasons whose failed runs run again."""

    model_config = ConfigDict(extra="forbid")

    reasons: list[FailureReason] = Field(
        default_factory=lambda: list(DEFAULT_RETRY_REASONS),
        min_length=1,
        description="failure reasons to retry (default: the infrastructure ones, "
        + ", ".join(r.value for r in DEFAULT_RETRY_REASONS)
        + ")",
    )

    @field_validator("reasons")
    @classmethod
    def _failed_reasons(cls, reasons: list[FailureReason]) -> list[FailureReason]:
        wrong = [r.value for r in reasons if r not in RETRY_REASONS]
        if wrong:
            raise ValueError(
                f"{', '.join(wrong)}: cancelled runs are not failed runs; choose among "
                + ", ".join(r.value for r in RETRY_REASONS)
            )
        return list(dict.fromkeys(reasons))


class RetryPublic(BaseModel):
    """What a retry put back in the queue."""

    campaign_id: int
    reasons: list[FailureReason]
    requeued: int
    """Failed runs of those reasons queued again (0: none matched, nothing changed)."""
    messages: int
    """Broker messages that carried them (0 with ``sent`` false: the reconciler sends them)."""
    sent: bool
    status: str
    """The campaign's status after the retry (running when a run was re-queued)."""


class CampaignListItem(BaseModel):
    id: int
    name: str
    network: str
    status: str
    n_runs: int
    n_scenarios: int
    done: int
    succeeded: int
    failed: int
    cancelled: int
    running: int
    progress: float
    cct: bool
    """a critical-clearing-time campaign (GET /campaigns/{id}/cct)"""
    created_at: datetime
    finished_at: datetime | None


class CampaignList(BaseModel):
    data: list[CampaignListItem]
    count: int
    limit: int
    offset: int


class ConfigStatsPublic(BaseModel):
    """One method configuration. Runtime is solve time (compile, load and worker overhead are
    the ``mean_compile_s`` and ``mean_overhead_s`` columns)."""

    method: str
    config: str
    is_reference: bool
    runs: int
    succeeded: int
    failed: int
    success_rate: float
    median_runtime_s: float | None
    p95_runtime_s: float | None
    mean_compile_s: float | None
    mean_overhead_s: float | None
    mean_accepted: float | None
    min_accepted: int | None
    max_accepted: int | None
    mean_rejected: float | None
    mean_newton_iterations: float | None
    scored: int
    qualified_runs: int
    max_state_error: float | None
    max_voltage_mae: float | None
    max_kcl: float | None
    qualified: bool


class CampaignStats(BaseModel):
    campaign_id: int
    thresholds: Thresholds
    methods: list[ConfigStatsPublic]
    count: int
    limit: int
    offset: int


class TableOneRow(BaseModel):
    method: str
    config: str | None
    runtime_s: float | None
    state_error: float | None
    voltage_mae: float | None
    kcl_max: float | None
    speedup: float | None
    """The other method's runtime over the subject's (> 1: the subject is faster)."""
    note: str


class TableOne(BaseModel):
    campaign_id: int
    subject: str
    subject_config: str | None
    subject_runtime_s: float | None
    subject_state_error: float | None
    subject_voltage_mae: float | None
    subject_kcl_max: float | None
    rows: list[TableOneRow]
    basis: str


class ParetoPoint(BaseModel):
    method: str
    config: str
    runtime_s: float
    state_error: float
    mean_accepted: float | None
    qualified: bool
    on_front: bool


class Pareto(BaseModel):
    campaign_id: int
    basis: str
    points: list[ParetoPoint]


class RankingRow(BaseModel):
    rank: int
    scenario_id: int
    label: str
    disturbance: dict[str, Any]
    severity: float
    """Largest rotor-angle separation / 360 deg (>= 1 unstable; docs/results.md)."""
    tsi: float
    """Transient stability index 100 (1 - severity) / (1 + severity); > 0 stable."""
    stable: bool
    criterion: str
    max_angle_spread_deg: float | None
    frequency_nadir_hz: float | None
    frequency_nadir_t: float | None
    frequency_zenith_hz: float | None
    frequency_zenith_t: float | None
    min_voltage_pu: float | None
    min_voltage_t: float | None
    voltage_recovery_t: float | None
    source_run_id: int
    from_reference: bool
    failed_runs: int


class Ranking(BaseModel):
    campaign_id: int
    data: list[RankingRow]
    count: int
    limit: int
    offset: int


class CctRow(BaseModel):
    search_id: int
    scenario: str
    method: str
    config: str
    status: str
    """done, running or failed"""
    cct_s: float | None
    """critical clearing time (s): the longest stable fault duration probed"""
    lo_s: float
    hi_s: float | None
    """shortest unstable fault duration probed (s); null when stable at max_clearing"""
    probes: int
    solve_seconds: float | None
    """solve seconds of all the search's probes"""
    accepted: int | None
    message: str


class CctTable(BaseModel):
    campaign_id: int
    resolution_s: float
    max_clearing_s: float
    criterion: str
    data: list[CctRow]


class FailureRow(BaseModel):
    run_id: int
    method: str
    config: str
    reason: str | None
    message: str
    scenario: str


class Failures(BaseModel):
    campaign_id: int
    data: list[FailureRow]
    count: int
    limit: int
    offset: int


class Health(BaseModel):
    """Each dependency ``ok`` or ``unavailable`` (details only in the service's log); the
    results store also ``degraded`` (free space below ``store_degraded_free_bytes``: 200) or
    ``failing`` (below ``store_failing_free_bytes``: 503), its free bytes beside it."""

    status: Literal["ok", "degraded", "unavailable"]
    database: Literal["ok", "unavailable"]
    broker: Literal["ok", "unavailable"]
    store: Literal["ok", "degraded", "failing", "unavailable"]
    store_free_bytes: int | None = None
    """Free space of the results folder; null for an object store or when unknown."""
    version: str
