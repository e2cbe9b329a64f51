"""Run rows: listing and reading for the API, and the worker's claim/heartbeat/finish protocol.

Delivery is at least once (DESIGN §7), so a run is *claimed* in SQL with one conditional UPDATE
and a lease; only the claimant's current attempt may heartbeat or finish it, and finishing writes
status, metrics (upsert keyed by run id) and the campaign totals in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import and_, bindparam, case, func, or_, select, tuple_, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from raptorgrid.repository import cct
from raptorgrid.repository.campaigns import record_final
from raptorgrid.tables import STATS_COLUMNS, Campaign, CampaignStatus, Run, RunMetrics, ScenarioRow
from solvers.status import RunStatus

_NO_SYNC = {"synchronize_session": False}


@dataclass(frozen=True)
class Claim:
    """A claimed run: its current attempt number is the token for heartbeat and finish."""

    run_id: int
    attempt: int
    worker: str


@dataclass(frozen=True)
class RunInputs:
    """Everything a worker needs to solve a run, read once after the claim."""

    run_id: int
    campaign_id: int
    campaign_status: str
    network: str
    t_end: float
    n_eval: int
    method: str
    options: dict[str, Any]
    disturbance: dict[str, Any]
    ic_seed: int
    ic_spread: float
    scenario_label: str
    clearing_time: float | None = None
    """A CCT probe's fault duration (s): ``disturbance`` is cleared at t_fault + it."""


class LeaseState(StrEnum):
    HELD = "held"
    LOST = "lost"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class FinishOutcome:
    recorded: bool
    campaign_id: int
    campaign_finished: bool
    queued: tuple[int, ...] = ()
    """Runs this finish queued (a CCT search's next probe): the caller sends them."""


def list_runs(
    *,
    session: Session,
    campaign_id: int,
    status: str | None = None,
    method: str | None = None,
    limit: int = 100,
    offset: int = 0,
) -> tuple[list[tuple[Run, RunMetrics | None]], int]:
    """One page of a campaign's runs (by id) with their metrics, and the filtered total."""
    conditions = [Run.campaign_id == campaign_id]
    if status is not None:
        conditions.append(Run.status == status)
    if method is not None:
        conditions.append(Run.method == method)
    total = session.execute(select(func.count()).select_from(Run).where(*conditions)).scalar_one()
    rows = session.execute(
        select(Run, RunMetrics)
        .outerjoin(RunMetrics, RunMetrics.run_id == Run.id)
        .where(*conditions)
        .order_by(Run.id)
        .limit(limit)
        .offset(offset)
    )
    return [tuple(row) for row in rows], total


def get_run(*, session: Session, run_id: int) -> tuple[Run, ScenarioRow, RunMetrics | None] | None:
    row = session.execute(
        select(Run, ScenarioRow, RunMetrics)
        .join(ScenarioRow, ScenarioRow.id == Run.scenario_id)
        .outerjoin(RunMetrics, RunMetrics.run_id == Run.id)
        .where(Run.id == run_id)
    ).first()
    return None if row is None else tuple(row)


def claim_run(
    *,
    session: Session,
    run_id: int,
    worker: str,
    now: datetime,
    lease_seconds: float,
    max_attempts: int,
) -> Claim | None:
    """``claim_runs`` of one run: its claim, or None when it cannot be claimed."""
    return claim_runs(
        session=session,
        run_ids=[run_id],
        worker=worker,
        now=now,
        lease_seconds=lease_seconds,
        max_attempts=max_attempts,
    ).get(run_id)


def claim_runs(
    *,
    session: Session,
    run_ids: list[int],
    worker: str,
    now: datetime,
    lease_seconds: float,
    max_attempts: int,
) -> dict[int, Claim]:
    """Claim each run that is queued, or running with an expired lease, and has attempts left;
    returns the claims by run id (runs held by another attempt, final or out of attempts are
    absent). One conditional UPDATE whatever the number of runs: never two claimants."""
    if not run_ids:
        return {}
    claimed = session.execute(
        update(Run)
        .where(
            Run.id.in_(run_ids),
            Run.attempts < max_attempts,
            or_(
                Run.status == RunStatus.QUEUED.value,
                and_(Run.status == RunStatus.RUNNING.value, Run.lease_until < now),
            ),
        )
        .values(
            status=RunStatus.RUNNING.value,
            attempts=Run.attempts + 1,
            lease_until=now + timedelta(seconds=lease_seconds),
            worker=worker,
            started_at=now,
            reason=None,
            message="",
            traceback=None,
        )
        .returning(Run.id, Run.attempts)
        .execution_options(**_NO_SYNC)
    )
    return {run_id: Claim(run_id, attempt, worker) for run_id, attempt in claimed.all()}


def runs_inputs(*, session: Session, run_ids: list[int]) -> dict[int, RunInputs]:
    """What a worker needs to solve each run (by run id; one query, the columns only)."""
    if not run_ids:
        return {}
    rows = session.execute(
        select(
            Run.id,
            Run.method,
            Run.options,
            Run.clearing_time,
            ScenarioRow.disturbance,
            ScenarioRow.ic_seed,
            ScenarioRow.ic_spread,
            ScenarioRow.label,
            Campaign.id,
            Campaign.status,
            Campaign.network,
            Campaign.t_end,
            Campaign.n_eval,
        )
        .join(ScenarioRow, ScenarioRow.id == Run.scenario_id)
        .join(Campaign, Campaign.id == Run.campaign_id)
        .where(Run.id.in_(run_ids))
    ).all()
    return {
        run_id: RunInputs(
            run_id=run_id,
            campaign_id=campaign_id,
            campaign_status=status,
            network=network,
            t_end=t_end,
            n_eval=n_eval,
            method=method,
            options=dict(options),
            disturbance=_probed(dict(disturbance), clearing_time),
            ic_seed=ic_seed,
            ic_spread=ic_spread,
            scenario_label=label,
            clearing_time=clearing_time,
        )
        for (run_id, method, options, clearing_time, disturbance, ic_seed, ic_spread, label,
             campaign_id, status, network, t_end, n_eval) in rows
    }  # fmt: skip


def _probed(disturbance: dict[str, Any], clearing_time: float | None) -> dict[str, Any]:
    """The fault cleared after ``clearing_time`` (a CCT probe), else as specified."""
    if clearing_time is None:
        return disturbance
    return {**disturbance, "t_clear": disturbance["t_fault"] + clearing_time}


def renew_lease(
    *,
    session: Session,
    run_id: int,
    attempt: int,
    now: datetime,
    lease_seconds: float,
    sim_time: float | None = None,
) -> LeaseState:
    """Extend the lease of the current attempt and record its progress (simulated time, s);
    says whether the lease was lost or the campaign cancelled (the worker then stops).
    ``renew_leases`` of one run."""
    return renew_leases(
        session=session,
        attempts={run_id: attempt},
        now=now,
        lease_seconds=lease_seconds,
        sim_times=None if sim_time is None else {run_id: sim_time},
    )[run_id]


def renew_leases(
    *,
    session: Session,
    attempts: dict[int, int],
    now: datetime,
    lease_seconds: float,
    sim_times: dict[int, float] | None = None,
) -> dict[int, LeaseState]:
    """``renew_lease`` of several runs (run id -> attempt; ``sim_times``: progress to record,
    s) in two statements whatever their number: one conditional UPDATE of the runs still
    running under those attempts, one read of their campaigns' status."""
    if not attempts:
        return {}
    values: dict[str, Any] = {"lease_until": now + timedelta(seconds=lease_seconds)}
    if sim_times:
        values["sim_time"] = case(sim_times, value=Run.id, else_=Run.sim_time)
    renewed = set(
        session.scalars(
            update(Run)
            .where(
                tuple_(Run.id, Run.attempts).in_(list(attempts.items())),
                Run.status == RunStatus.RUNNING.value,
            )
            .values(**values)
            .returning(Run.id)
            .execution_options(**_NO_SYNC)
        )
    )
    cancelled = set(
        session.scalars(
            select(Run.id)
            .join(Campaign, Campaign.id == Run.campaign_id)
            .where(Run.id.in_(renewed), Campaign.status == CampaignStatus.CANCELLED.value)
        )
    )
    return {
        run_id: LeaseState.LOST
        if run_id not in renewed
        else LeaseState.CANCELLED
        if run_id in cancelled
        else LeaseState.HELD
        for run_id in attempts
    }


def _upsert_metrics(session: Session, rows: list[dict[str, Any]]) -> None:
    """Insert or replace metrics rows (one executemany of one cached statement)."""
    dialect = session.get_bind().dialect.name
    insert = {"postgresql": postgresql.insert, "sqlite": sqlite.insert}.get(dialect)
    if insert is None:  # portable fallback: the finishing transaction holds the run rows
        for values in rows:
            session.merge(RunMetrics(**values))
        return
    by_keys: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for values in rows:  # one executemany per set of columns given (its statement cached)
        by_keys.setdefault(tuple(sorted(values)), []).append(values)
    for keys, group in by_keys.items():
        stmt = insert(RunMetrics.__table__)
        updates = {k: stmt.excluded[k] for k in keys if k != "run_id"}
        session.execute(stmt.on_conflict_do_update(index_elements=["run_id"], set_=updates), group)


@dataclass(frozen=True)
class Finish:
    """The final status of one attempt, as ``finish_runs`` records it."""

    run_id: int
    attempt: int
    status: RunStatus
    reason: str | None = None
    message: str = ""
    traceback: str | None = None
    zarr_group: str | None = None
    metrics: dict[str, Any] | None = None
    stable: bool | None = None
    """A CCT probe's verdict (its trajectory's TSI > 0); None otherwise or without one."""


_RUNS = Run.__table__
_FINISH = (
    update(_RUNS)
    .where(
        _RUNS.c.id == bindparam("b_id"),
        _RUNS.c.attempts == bindparam("b_attempt"),
        _RUNS.c.status == RunStatus.RUNNING.value,
    )
    .values(
        status=bindparam("b_status"),
        reason=bindparam("b_reason"),
        message=bindparam("b_message"),
        traceback=bindparam("b_traceback"),
        zarr_group=bindparam("b_zarr_group"),
        lease_until=None,
        finished_at=bindparam("b_finished_at"),
        metric_solve_seconds=bindparam("b_solve"),
    )
)
"""An attempt's final status, executed once per run of a block (``finish_runs``)."""

METRIC_FIELDS = (*STATS_COLUMNS, "overhead_seconds")
"""What every metrics row must carry (the rest of ``run_metrics`` is optional or scoring's)."""


def finish_runs(*, session: Session, finishes: list[Finish], now: datetime) -> list[FinishOutcome]:
    """Record the final status of each attempt (ignored when a later attempt owns the run),
    their metrics (with the run's copy of its solve time, 0006; one statement for all) and the
    campaign totals (``record_final`` once per campaign); says per run whether it was recorded
    and whether this finished its campaign. A worker's batch is one call, one transaction."""
    for f in finishes:
        if not f.status.is_final:
            raise ValueError(f"finish_runs needs final statuses, not {f.status.value!r}")
        if f.metrics is not None and set(METRIC_FIELDS) - set(f.metrics):
            raise ValueError(f"metrics lack {sorted(set(METRIC_FIELDS) - set(f.metrics))}")
    if not finishes:
        return []

    # The rows, locked in id order, say which attempts still run under their claim; those are
    # finished by one cached statement executed for each (executemany). A CASE per column over
    # the block, one statement compiled per block, cost ~0.6 ms per run of a 40-run block.
    rows = session.execute(
        select(Run.id, Run.attempts, Run.status, Run.campaign_id, Run.search_id)
        .where(Run.id.in_([f.run_id for f in finishes]))
        .order_by(Run.id)
        .with_for_update(key_share=True)  # PostgreSQL: FOR NO KEY UPDATE, as the UPDATE takes
    ).all()
    running = {r.id: r.attempts for r in rows if r.status == RunStatus.RUNNING.value}
    campaigns = {r.id: r.campaign_id for r in rows}
    probes = {r.id for r in rows if r.search_id is not None}
    recorded = [f for f in finishes if running.get(f.run_id) == f.attempt]
    if recorded:
        session.execute(
            _FINISH,
            [
                {
                    "b_id": f.run_id,
                    "b_attempt": f.attempt,
                    "b_status": f.status.value,
                    "b_reason": f.reason,
                    "b_message": f.message,
                    "b_traceback": f.traceback,
                    "b_zarr_group": f.zarr_group,
                    "b_finished_at": now,
                    "b_solve": None if f.metrics is None else f.metrics.get("solve_seconds"),
                }
                for f in recorded
            ],
        )
    with_metrics = [
        {"run_id": f.run_id, "attempt": f.attempt, **f.metrics}
        for f in recorded
        if f.metrics is not None
    ]
    if with_metrics:
        _upsert_metrics(session, with_metrics)
    next_probes = cct.advance(
        session=session,
        probes=[
            cct.Probe(f.run_id, f.status, f.reason, f.stable)
            for f in recorded
            if f.run_id in probes
        ],
    )  # before the counters: a search that goes on keeps its campaign running
    finished: dict[int, bool] = {}
    for campaign_id in sorted({campaigns[f.run_id] for f in recorded}):
        mine = [f for f in recorded if campaigns[f.run_id] == campaign_id]
        finished[campaign_id] = record_final(
            session=session,
            campaign_id=campaign_id,
            now=now,
            succeeded=sum(f.status is RunStatus.SUCCEEDED for f in mine),
            failed=sum(f.status is RunStatus.FAILED for f in mine),
            cancelled=sum(f.status is RunStatus.CANCELLED for f in mine),
            run_ids=[f.run_id for f in mine],
        )
    kept = {f.run_id for f in recorded}
    return [
        FinishOutcome(
            recorded=f.run_id in kept,
            campaign_id=campaigns[f.run_id],
            campaign_finished=f.run_id in kept and finished.get(campaigns[f.run_id], False),
            queued=(next_probes[f.run_id],) if f.run_id in next_probes else (),
        )
        for f in finishes
    ]


def finish_run(
    *,
    session: Session,
    run_id: int,
    attempt: int,
    status: RunStatus,
    now: datetime,
    reason: str | None = None,
    message: str = "",
    traceback: str | None = None,
    zarr_group: str | None = None,
    metrics: dict[str, Any] | None = None,
) -> FinishOutcome:
    """``finish_runs`` for one attempt."""
    finish = Finish(run_id, attempt, status, reason, message, traceback, zarr_group, metrics)
    # a probe finishing here (a failure path) has no verdict: its search ends as failed
    return finish_runs(session=session, finishes=[finish], now=now)[0]


def recent_solve_seconds(
    *, session: Session, network: str, methods: list[str], limit: int = 50
) -> dict[str, float]:
    """Median solve seconds of the latest ``limit`` succeeded runs per method on ``network``
    (methods without such runs are absent): the cost estimate behind batch sizes."""
    out: dict[str, float] = {}
    for method in methods:
        values = sorted(
            session.scalars(
                select(Run.metric_solve_seconds)
                .join(Campaign, Campaign.id == Run.campaign_id)
                .where(
                    Campaign.network == network,
                    Run.method == method,
                    Run.status == RunStatus.SUCCEEDED.value,
                    Run.metric_solve_seconds.is_not(None),
                )
                .order_by(Run.id.desc())
                .limit(limit)
            )
        )
        if values:
            out[method] = float(values[len(values) // 2])
    return out


def succeeded_runs(*, session: Session, scenario_ids: list[int]) -> list[Run]:
    """The succeeded runs (references included) of the given scenarios, in id order."""
    if not scenario_ids:
        return []
    return list(
        session.scalars(
            select(Run)
            .where(Run.scenario_id.in_(scenario_ids), Run.status == RunStatus.SUCCEEDED.value)
            .order_by(Run.id)
        )
    )
