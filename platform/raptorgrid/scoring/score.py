"""Score runs against their scenario's reference, once, whichever of the two finishes last.

``score_finished_runs`` is called by the worker after its runs' final statuses are committed (in
a new transaction, so it sees every run committed before it): a run whose reference has succeeded is
scored now; a reference that succeeds scores every finished run of its scenario. When both finish
together both may compute, but the write is one conditional UPDATE (``scored_at IS NULL``), so
each run's error columns are written exactly once. Indicators are written from the reference (or,
while it has not succeeded, from the first succeeded run; the reference replaces them).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import xarray as xr
from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from raptorgrid.db import Database
from raptorgrid.repository import totals
from raptorgrid.repository.campaigns import bump_stats_version
from raptorgrid.scoring.indicators import stability_indicators
from raptorgrid.spec import Thresholds
from raptorgrid.tables import Campaign, Run, RunMetrics, ScenarioIndicators, utcnow
from raptorgrid.zarr_store import ZarrRoot, open_run
from solvers.metrics import Accuracy, accuracy
from solvers.result import SolveResult, Stats
from solvers.status import RunStatus

log = logging.getLogger(__name__)
_NO_SYNC = {"synchronize_session": False}
SUCCEEDED = RunStatus.SUCCEEDED.value


@dataclass
class ScoreOutcome:
    """Run ids whose scores this call wrote, and scenarios whose indicators it wrote."""

    scored: list[int] = field(default_factory=list)
    indicators: list[int] = field(default_factory=list)


def result_from_dataset(ds: xr.Dataset) -> SolveResult:
    """A stored run as a ``SolveResult`` on its evaluation grid (what ``solvers.metrics`` and
    the indicators read); the accepted-advance arrays and events are included, the stats are
    not stored in Zarr."""
    names = {dim: tuple(str(n) for n in ds[dim].values) for dim in ("state", "algebraic", "output")}
    return SolveResult(
        status=RunStatus(ds.attrs.get("status", "succeeded")),
        message=str(ds.attrs.get("message", "")),
        method=str(ds.attrs.get("method", "")),
        options=json.loads(ds.attrs.get("options", "{}")),
        stats=Stats(),
        state_names=names["state"],
        alg_names=names["algebraic"],
        output_names=names["output"],
        t=np.asarray(ds["t_acc"].values),
        x=np.asarray(ds["x_acc"].values),
        z=np.asarray(ds["z_acc"].values),
        t_eval=np.asarray(ds["time"].values),
        x_eval=np.asarray(ds["x"].values),
        z_eval=np.asarray(ds["z"].values),
        y_eval=np.asarray(ds["y"].values),
        events=json.loads(ds.attrs.get("events") or "[]"),
    )


def accuracy_of(run: xr.Dataset, reference: xr.Dataset) -> Accuracy:
    """``solvers.metrics.accuracy`` of two stored runs (same evaluation grid)."""
    return accuracy(result_from_dataset(run), result_from_dataset(reference))


def _finite(value: float | None) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def _write_score(
    session: Session, run_id: int, acc: Accuracy, thresholds: Thresholds, now: datetime
) -> bool:
    qualified = acc.qualified(
        state_tol=thresholds.state_error,
        voltage_tol=thresholds.voltage_mae,
        kcl_tol=thresholds.kcl_max,
    )
    changed = session.execute(
        update(RunMetrics)
        .where(RunMetrics.run_id == run_id, RunMetrics.scored_at.is_(None))
        .values(
            state_error=_finite(acc.state_error),
            voltage_mae=_finite(acc.voltage_mae),
            kcl_max=_finite(acc.max_kcl),
            qualified=qualified,
            scored_at=now,
        )
        .execution_options(**_NO_SYNC)
    )
    return changed.rowcount == 1


def write_scores(
    session: Session,
    *,
    campaign_id: int,
    scores: list[tuple[int, Accuracy]],
    thresholds: Thresholds,
    now: datetime,
) -> list[int]:
    """Write the scores of runs not scored yet; returns those written. Bumps the campaign's
    ``stats_version`` in the same transaction when any was, so cached statistics never
    outlive the errors they were computed from, and then (campaign row locked) adds the
    scores to the per-configuration totals."""
    written = [rid for rid, acc in scores if _write_score(session, rid, acc, thresholds, now)]
    if written:
        bump_stats_version(session=session, campaign_id=campaign_id)
        totals.add_scores(session=session, run_ids=written)
    return written


def _write_indicators(session: Session, rows: list[dict[str, Any]]) -> list[int]:
    """Insert scenarios' indicators (rows of ``scenario_indicators``); a reference's replace
    those of an ordinary run. Returns the scenarios written. Two statements whatever the
    number of rows (the references', the others')."""
    dialect = session.get_bind().dialect.name
    insert = {"postgresql": postgresql.insert, "sqlite": sqlite.insert}[dialect]
    written: list[int] = []
    for reference in (True, False):
        group = [row for row in rows if row["from_reference"] is reference]
        if not group:
            continue
        stmt = insert(ScenarioIndicators.__table__)
        if reference:
            stmt = stmt.on_conflict_do_update(
                index_elements=["scenario_id"],
                set_={k: stmt.excluded[k] for k in group[0] if k != "scenario_id"},
                where=ScenarioIndicators.from_reference.is_(False),
            )
        else:
            stmt = stmt.on_conflict_do_nothing(index_elements=["scenario_id"])
        returning = stmt.returning(ScenarioIndicators.scenario_id)
        written += session.scalars(returning, group).all()  # one cached statement, executemany
    return sorted(written)


def _f_hz(network: str) -> float:
    from models.library import build_system

    return float(build_system(network).info.get("f_hz", 60.0))


def score_finished_run(
    *, db: Database, zarr_root: ZarrRoot, run_id: int, loaded: dict[int, SolveResult] | None = None
) -> ScoreOutcome:
    """``score_finished_runs`` of one run."""
    return score_finished_runs(db=db, zarr_root=zarr_root, run_ids=[run_id], loaded=loaded)


@dataclass
class _Plan:
    """What the finished runs make scorable, from one snapshot of their scenarios."""

    targets: dict[int, int] = field(default_factory=dict)
    """Run id -> id of the reference run it is scored against."""
    sources: dict[int, tuple[int, bool]] = field(default_factory=dict)
    """Scenario id -> (run whose trajectory gives its indicators, whether it is the reference)."""
    campaign_of: dict[int, Campaign] = field(default_factory=dict)
    """Run id (targets, references, sources) -> its campaign."""


def _plan(session: Session, run_ids: list[int]) -> _Plan:
    """Per finished run: a run whose reference has succeeded is a target; a succeeded reference
    makes every finished, unscored run of its scenario a target; a succeeded reference gives its
    scenario's indicators unless the reference gave them already, and before the reference has
    succeeded the first succeeded run of the scenario gives them."""
    runs = session.execute(
        select(Run, Campaign)
        .join(Campaign, Campaign.id == Run.campaign_id)
        .where(Run.id.in_(run_ids))
    ).all()
    scenario_ids = sorted({run.scenario_id for run, _ in runs})
    siblings: dict[int, list[Any]] = {sid: [] for sid in scenario_ids}
    for row in session.execute(
        select(Run.id, Run.scenario_id, Run.status, Run.is_reference, RunMetrics.scored_at)
        .outerjoin(RunMetrics, RunMetrics.run_id == Run.id)
        .where(Run.scenario_id.in_(scenario_ids))
        .order_by(Run.id)
    ).all():
        siblings[row.scenario_id].append(row)
    from_reference = dict(
        session.execute(
            select(ScenarioIndicators.scenario_id, ScenarioIndicators.from_reference).where(
                ScenarioIndicators.scenario_id.in_(scenario_ids)
            )
        ).all()
    )
    plan = _Plan()
    for run, campaign in runs:
        family = siblings[run.scenario_id]
        reference = next((s for s in family if s.is_reference), None)
        ref_ok = reference is not None and reference.status == SUCCEEDED
        if run.is_reference and ref_ok:
            for s in family:
                if not s.is_reference and s.status == SUCCEEDED and s.scored_at is None:
                    plan.targets[s.id] = run.id
        elif not run.is_reference and ref_ok and run.status == SUCCEEDED:
            plan.targets[run.id] = reference.id
        have = from_reference.get(run.scenario_id)
        if ref_ok and have is not True and run.is_reference:
            plan.sources[run.scenario_id] = (run.id, True)
        elif not ref_ok and have is None and run.scenario_id not in plan.sources:
            first = next((s.id for s in family if s.status == SUCCEEDED), None)
            if first is not None:
                plan.sources[run.scenario_id] = (first, False)
        for s in family:
            plan.campaign_of[s.id] = campaign
    return plan


def score_finished_runs(
    *,
    db: Database,
    zarr_root: ZarrRoot,
    run_ids: list[int],
    loaded: dict[int, SolveResult] | None = None,
) -> ScoreOutcome:
    """Score what the just-finished runs make scorable (see the module docstring and ``_plan``):
    one read transaction, one write transaction, whatever the number of runs (a worker's block).
    ``loaded``: results the caller holds in memory already (the worker's own runs, exactly what
    it wrote), so they are not read back from the store."""
    loaded = dict(loaded or {})
    outcome = ScoreOutcome()
    with db.read() as session:
        plan = _plan(session, run_ids)
    if not plan.targets and not plan.sources:
        return outcome

    def load(rid: int) -> SolveResult:
        if rid not in loaded:
            stored = open_run(zarr_root, plan.campaign_of[rid].id, rid).load()
            loaded[rid] = result_from_dataset(stored)
        return loaded[rid]

    scores: dict[int, list[tuple[int, Accuracy]]] = {}
    for rid, ref_id in plan.targets.items():
        campaign = plan.campaign_of[rid]
        scores.setdefault(campaign.id, []).append((rid, accuracy(load(rid), load(ref_id))))
    indicators = {
        scenario_id: (
            source,
            is_reference,
            stability_indicators(load(source), f_hz=_f_hz(plan.campaign_of[source].network)),
        )
        for scenario_id, (source, is_reference) in plan.sources.items()
    }
    campaigns = {c.id: c for c in plan.campaign_of.values()}
    now = utcnow()
    with db.write() as session:
        for campaign_id, campaign_scores in sorted(scores.items()):
            outcome.scored += write_scores(
                session,
                campaign_id=campaign_id,
                scores=campaign_scores,
                thresholds=Thresholds.model_validate(
                    campaigns[campaign_id].spec.get("thresholds") or {}
                ),
                now=now,
            )
        outcome.indicators += _write_indicators(
            session,
            [
                {
                    "scenario_id": scenario_id,
                    "campaign_id": plan.campaign_of[source].id,
                    "run_id": source,
                    "from_reference": is_reference,
                    **values.as_dict(),
                }
                for scenario_id, (source, is_reference, values) in sorted(indicators.items())
            ],
        )
    return outcome


def score_campaign(*, db: Database, zarr_root: ZarrRoot, campaign_id: int) -> ScoreOutcome:
    """Score every scorable run of a campaign (idempotent; for campaigns finished before the
    worker scored, or to repair after a scoring error): each scenario via its reference."""
    total = ScoreOutcome()
    with db.read() as session:
        rows = session.execute(
            select(Run.id, Run.scenario_id, Run.is_reference, Run.status)
            .where(Run.campaign_id == campaign_id, Run.status == SUCCEEDED)
            .order_by(Run.is_reference.desc(), Run.id)
        ).all()
    seen: set[int] = set()
    for row in rows:
        if row.scenario_id in seen:
            continue
        seen.add(row.scenario_id)
        part = score_finished_run(db=db, zarr_root=zarr_root, run_id=row.id)
        total.scored += part.scored
        total.indicators += part.indicators
    return total
