"""SQL tables (SQLAlchemy 2 typed declarative). Created only by the Alembic migrations.

Statuses are stored as strings whose values are ``solvers.status.RunStatus`` (runs) and
``CampaignStatus`` (campaigns), so the solver result, the SQL row and the API share one enum.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """An aware UTC datetime on every backend (SQLite keeps no zone: store UTC, read it back
    as UTC), so lease comparisons are the same on SQLite and PostgreSQL."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class CampaignStatus(StrEnum):
    RUNNING = "running"
    FINISHED = "finished"
    CANCELLED = "cancelled"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Campaign(Base):
    """A submitted study: its spec verbatim, and totals kept by the runs as they finish."""

    __tablename__ = "campaigns"
    __table_args__ = (UniqueConstraint("owner", "idempotency_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    network: Mapped[str] = mapped_column(String(64))
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16), default=CampaignStatus.RUNNING.value)
    t_end: Mapped[float] = mapped_column(Float)
    n_eval: Mapped[int] = mapped_column(Integer)
    n_scenarios: Mapped[int] = mapped_column(Integer, default=0)
    n_runs: Mapped[int] = mapped_column(Integer, default=0)
    n_succeeded: Mapped[int] = mapped_column(Integer, default=0)
    n_failed: Mapped[int] = mapped_column(Integer, default=0)
    n_cancelled: Mapped[int] = mapped_column(Integer, default=0)
    stats_version: Mapped[int] = mapped_column(Integer, default=0)
    """Bumped by every change to the campaign's statistics: the stats cache's key (0005)."""
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    owner: Mapped[str | None] = mapped_column(String(100), nullable=True, index=True)
    """The token owner that submitted it; NULL for embedded (no HTTP) campaigns."""
    idempotency_key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    request_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    """sha256 of the canonical spec sent with ``idempotency_key`` (a reuse must match it)."""


class ApiToken(Base):
    """An issued API token: only the sha256 of its secret is kept, found by its prefix."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner: Mapped[str] = mapped_column(String(100), index=True)
    prefix: Mapped[str] = mapped_column(String(16), unique=True)
    token_hash: Mapped[str] = mapped_column(String(64))
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class CaseFile(Base):
    """An uploaded, validated case file (MATPOWER text or pandapower JSON), kept verbatim. It
    belongs to its uploader; ``shared`` (set by an admin, 0011) lets every token read it and run
    campaigns on it (``api.access``)."""

    __tablename__ = "cases"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    format: Mapped[str] = mapped_column(String(16))
    sha256: Mapped[str] = mapped_column(String(64))
    size_bytes: Mapped[int] = mapped_column(Integer)
    content: Mapped[str] = mapped_column(Text)
    summary: Mapped[dict[str, Any]] = mapped_column(JSON)
    owner: Mapped[str | None] = mapped_column(String(100), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    shared: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class ScenarioRow(Base):
    """One disturbance x one initial-condition instance of a campaign."""

    __tablename__ = "scenarios"
    __table_args__ = (UniqueConstraint("campaign_id", "index"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaigns.id", ondelete="CASCADE"), index=True
    )
    index: Mapped[int] = mapped_column(Integer)
    disturbance: Mapped[dict[str, Any]] = mapped_column(JSON)
    ic_seed: Mapped[int] = mapped_column(Integer)
    ic_spread: Mapped[float] = mapped_column(Float)
    label: Mapped[str] = mapped_column(String(200))


def _in_order(column: str) -> Index:
    """A configuration's measured runs in order of ``column`` (ties by id), for the totals'
    percentile pivots (0006)."""
    return Index(
        f"ix_runs_config_{column.removeprefix('metric_')}",
        "campaign_id",
        "method",
        "config_label",
        "is_reference",
        column,
        "id",
        postgresql_where=text(f"{column} IS NOT NULL"),
        sqlite_where=text(f"{column} IS NOT NULL"),
    )


class Run(Base):
    """One scenario solved by one method configuration; claimed by a worker with a lease."""

    __tablename__ = "runs"
    __table_args__ = (
        Index(None, "campaign_id", "status"),
        Index(None, "status", "lease_until"),
        Index(None, "campaign_id", "method", "config_label"),
        _in_order("metric_solve_seconds"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"))
    scenario_id: Mapped[int] = mapped_column(
        ForeignKey("scenarios.id", ondelete="CASCADE"), index=True
    )
    method: Mapped[str] = mapped_column(String(64))
    options: Mapped[dict[str, Any]] = mapped_column(JSON)
    config_label: Mapped[str] = mapped_column(String(400))
    status: Mapped[str] = mapped_column(String(16), default="queued")
    reason: Mapped[str | None] = mapped_column(String(32), nullable=True)
    message: Mapped[str] = mapped_column(Text, default="")
    traceback: Mapped[str | None] = mapped_column(Text, nullable=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    worker: Mapped[str | None] = mapped_column(String(200), nullable=True)
    zarr_group: Mapped[str | None] = mapped_column(String(500), nullable=True)
    sim_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    """Simulated time (s) of the last accepted advance reported by the running attempt."""
    is_reference: Mapped[bool] = mapped_column(Boolean, default=False)
    """The scenario's reference run, that scoring compares the other runs with (0004)."""
    search_id: Mapped[int | None] = mapped_column(
        ForeignKey("cct_searches.id", ondelete="CASCADE"), nullable=True, index=True
    )
    """The critical-clearing-time search this run is a probe of (0010)."""
    clearing_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    """A probe's fault duration (s): the fault is cleared at t_fault + this (0010)."""
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    enqueued_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    metric_solve_seconds: Mapped[float | None] = mapped_column(Float, nullable=True)
    """``run_metrics.solve_seconds`` (the runtime), written with it by ``finish_run`` (0006):
    the configuration's runs in runtime order are then one index range of this table."""


class RunMetrics(Base):
    """Work counters (every ``solvers.Stats`` field) and sizes of one run's committed attempt;
    the error columns are filled later by scoring against the scenario's reference."""

    __tablename__ = "run_metrics"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    attempt: Mapped[int] = mapped_column(Integer)
    accepted: Mapped[int] = mapped_column(Integer)
    rejected: Mapped[int] = mapped_column(Integer)
    newton_iterations: Mapped[int] = mapped_column(Integer)
    algebraic_iterations: Mapped[int] = mapped_column(Integer)
    jacobian_evaluations: Mapped[int] = mapped_column(Integer)
    lu_factorizations: Mapped[int] = mapped_column(Integer)
    symbolic_analyses: Mapped[int] = mapped_column(Integer, server_default="0")
    rhs_evaluations: Mapped[int] = mapped_column(Integer)
    compile_seconds: Mapped[float] = mapped_column(Float)
    load_seconds: Mapped[float] = mapped_column(Float, server_default="0")
    solve_seconds: Mapped[float] = mapped_column(Float)
    """The runtime: solving only, compilation and executable loading excluded."""
    overhead_seconds: Mapped[float] = mapped_column(Float, server_default="0")
    """The worker's time for the attempt outside solve, compile and load: claim, system build,
    lease check and result write (0009)."""
    n_points: Mapped[int] = mapped_column(Integer)
    n_accepted_points: Mapped[int] = mapped_column(Integer)
    final_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    state_error: Mapped[float | None] = mapped_column(Float, nullable=True)
    voltage_mae: Mapped[float | None] = mapped_column(Float, nullable=True)
    kcl_max: Mapped[float | None] = mapped_column(Float, nullable=True)
    warnings: Mapped[str | None] = mapped_column(Text, nullable=True)
    """What the method could not guarantee though it finished (e.g. an unattainable tolerance)."""
    qualified: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    """All accuracy thresholds met; NULL until scored (0004)."""
    scored_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    """When scoring wrote the error columns: set once, by a conditional UPDATE (0004)."""


class ConfigTotals(Base):
    """Running totals of one method configuration of a campaign over all its runs, kept by
    the write path under the campaign row lock (``repository.totals``, 0006): created with
    the campaign, added to when a run reaches its final status (``record_final``) and when it
    is scored (``write_scores``). The unfiltered statistics read these rows instead of
    aggregating the runs.

    Each percentile is kept as a pivot: the (value, run id) at rank floor(q (measured - 1)) of
    the configuration's measured runs ordered by (value, id); the next value is one step of
    ``ix_runs_config_*`` away, and every added run moves the pivot by at most one step."""

    __tablename__ = "config_totals"

    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaigns.id", ondelete="CASCADE"), primary_key=True
    )
    method: Mapped[str] = mapped_column(String(64), primary_key=True)
    config_label: Mapped[str] = mapped_column(String(400), primary_key=True)
    is_reference: Mapped[bool] = mapped_column(Boolean, primary_key=True)
    first_run: Mapped[int] = mapped_column(Integer)
    runs: Mapped[int] = mapped_column(Integer)
    succeeded: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    failed: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    measured: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """Runs with a metrics row (final, every metrics column set)."""
    sum_accepted: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    min_accepted: Mapped[int | None] = mapped_column(Integer, nullable=True)
    max_accepted: Mapped[int | None] = mapped_column(Integer, nullable=True)
    sum_rejected: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    sum_newton_iterations: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    scored: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    qualified_runs: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """Runs that succeeded and were scored qualified."""
    max_state_error: Mapped[float | None] = mapped_column(Float, nullable=True)
    max_voltage_mae: Mapped[float | None] = mapped_column(Float, nullable=True)
    max_kcl: Mapped[float | None] = mapped_column(Float, nullable=True)
    sum_compile_seconds: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    """Compile + executable load seconds of the measured runs (0009)."""
    sum_overhead_seconds: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    solve_p50: Mapped[float | None] = mapped_column(Float, nullable=True)
    solve_p50_run: Mapped[int | None] = mapped_column(Integer, nullable=True)
    solve_p95: Mapped[float | None] = mapped_column(Float, nullable=True)
    solve_p95_run: Mapped[int | None] = mapped_column(Integer, nullable=True)


class CctSearchRow(Base):
    """One critical-clearing-time search: a bus fault (scenario) and a method configuration,
    its bracket [lo, hi] (longest stable, shortest unstable fault duration probed, s) and the
    probe in flight (``raptorgrid.repository.cct``, 0010)."""

    __tablename__ = "cct_searches"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaigns.id", ondelete="CASCADE"), index=True
    )
    scenario_id: Mapped[int] = mapped_column(ForeignKey("scenarios.id", ondelete="CASCADE"))
    method: Mapped[str] = mapped_column(String(64))
    config_label: Mapped[str] = mapped_column(String(400))
    status: Mapped[str] = mapped_column(String(16))
    """running, done or failed."""
    lo: Mapped[float] = mapped_column(Float)
    hi: Mapped[float | None] = mapped_column(Float, nullable=True)
    cct: Mapped[float | None] = mapped_column(Float, nullable=True)
    """The critical clearing time found (s): lo when the bracket closed."""
    probes: Mapped[int] = mapped_column(Integer, default=0)
    last_run_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    """The probe in flight (the one whose result advances the search)."""
    message: Mapped[str] = mapped_column(Text, default="")


class ScenarioIndicators(Base):
    """Stability indicators of one scenario, from its reference run (else any succeeded run),
    and the severity it is ranked by (``raptorgrid.scoring.indicators``; 0004)."""

    __tablename__ = "scenario_indicators"

    scenario_id: Mapped[int] = mapped_column(
        ForeignKey("scenarios.id", ondelete="CASCADE"), primary_key=True
    )
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaigns.id", ondelete="CASCADE"), index=True
    )
    run_id: Mapped[int] = mapped_column(Integer)
    from_reference: Mapped[bool] = mapped_column(Boolean)
    max_angle_spread_deg: Mapped[float | None] = mapped_column(Float, nullable=True)
    frequency_nadir_hz: Mapped[float | None] = mapped_column(Float, nullable=True)
    frequency_nadir_t: Mapped[float | None] = mapped_column(Float, nullable=True)
    frequency_zenith_hz: Mapped[float | None] = mapped_column(Float, nullable=True)
    frequency_zenith_t: Mapped[float | None] = mapped_column(Float, nullable=True)
    min_voltage_pu: Mapped[float | None] = mapped_column(Float, nullable=True)
    min_voltage_t: Mapped[float | None] = mapped_column(Float, nullable=True)
    voltage_recovery_t: Mapped[float | None] = mapped_column(Float, nullable=True)
    stable: Mapped[bool] = mapped_column(Boolean)
    criterion: Mapped[str] = mapped_column(String(200))
    severity: Mapped[float] = mapped_column(Float)


STATS_COLUMNS = (
    "accepted",
    "rejected",
    "newton_iterations",
    "algebraic_iterations",
    "jacobian_evaluations",
    "lu_factorizations",
    "symbolic_analyses",
    "rhs_evaluations",
    "compile_seconds",
    "load_seconds",
    "solve_seconds",
)
"""The ``solvers.Stats`` fields, one column each (checked against the dataclass in the tests)."""
