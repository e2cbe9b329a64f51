"""Critical-clearing-time searches (``spec.CctSearch``, ``cct_searches``, migration 0010).

One search per bus fault and method configuration. Its bracket is [lo, hi]: lo the longest
fault duration probed that was stable (0 at the start: a vanishing fault is taken as stable),
hi the shortest that was not (unknown at the start). The first probe is ``max_clearing``: if
stable, the search ends with CCT >= max_clearing; otherwise each next probe bisects the bracket,
until hi - lo <= ``resolution``, and the CCT is lo. Every probe is a run through the queue, so
the probes of one search are sequential and searches run in parallel.

``advance`` is called by ``runs.finish_runs`` in the transaction that records a probe, before
the campaign's counters: it moves the bracket by the probe's verdict (its trajectory's TSI > 0,
``scoring.indicators``, computed by the worker that solved it) and inserts the next probe (the
campaign's run count grows with it, so the campaign is not finished while a search goes on).
A probe whose state ran away (``diverged``, ``non_finite``) is unstable; any other failure
(Newton, step budget, time limit, cancellation) ends its search as failed. The
guard ``last_run_id = probe`` makes the advance happen once per probe, whatever redeliveries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.orm import Session

from raptorgrid.tables import (
    Campaign,
    CctSearchRow,
    ConfigTotals,
    Run,
    RunMetrics,
    ScenarioRow,
    utcnow,
)
from solvers.status import FailureReason, RunStatus

RUNNING, DONE, FAILED = "running", "done", "failed"
LEFT_THE_DOMAIN = frozenset({FailureReason.DIVERGED.value, FailureReason.NON_FINITE.value})
"""Probe failures that are verdicts: the state grew without bound or stopped being finite (a
fault held long enough makes the rotor angles run away), judged unstable as planning tools judge
a simulation that breaks down after a long fault. Other failures (Newton, step budget, time
limit) say nothing of stability: they end the search as failed."""
_NO_SYNC = {"synchronize_session": False}


def create_searches(*, session: Session, campaign_id: int) -> None:
    """One search per first-probe run of a new CCT campaign (runs with a clearing time)."""
    probes = session.execute(
        select(Run.id, Run.scenario_id, Run.method, Run.config_label).where(
            Run.campaign_id == campaign_id, Run.clearing_time.is_not(None)
        )
    ).all()
    if not probes:
        return
    session.execute(
        insert(CctSearchRow),
        [
            {
                "campaign_id": campaign_id,
                "scenario_id": p.scenario_id,
                "method": p.method,
                "config_label": p.config_label,
                "status": RUNNING,
                "lo": 0.0,
                "hi": None,
                "cct": None,
                "probes": 0,
                "last_run_id": p.id,
                "message": "",
            }
            for p in probes
        ],
    )
    session.execute(
        update(Run)
        .where(Run.campaign_id == campaign_id, Run.clearing_time.is_not(None))
        .values(
            search_id=select(CctSearchRow.id)
            .where(CctSearchRow.last_run_id == Run.id)
            .scalar_subquery()
        )
        .execution_options(**_NO_SYNC)
    )


@dataclass(frozen=True)
class Probe:
    """What ``advance`` needs of a recorded probe."""

    run_id: int
    status: RunStatus
    reason: str | None
    stable: bool | None
    """Its trajectory's verdict (None when it has none: a failed run)."""


def advance(*, session: Session, probes: list[Probe]) -> dict[int, int]:
    """Move each probe's search by its verdict; returns probe run id -> the next probe's run
    id for the probes that queued one (the caller sends them after its commit)."""
    from raptorgrid.spec import CctSearch

    new_runs: dict[int, int] = {}
    if not probes:  # the common case: no CCT probe among the finished runs, no query
        return new_runs
    searches: dict[int, CctSearch] = {}
    for probe in probes:
        row = session.execute(
            select(CctSearchRow, Run)
            .join(Run, Run.id == CctSearchRow.last_run_id)
            .where(
                Run.id == probe.run_id,
                CctSearchRow.status == RUNNING,
            )
            .with_for_update(of=CctSearchRow)
        ).first()
        if row is None:  # not a probe, or its search moved on already
            continue
        search, run = row
        if search.campaign_id not in searches:
            spec = session.execute(
                select(Campaign.spec).where(Campaign.id == search.campaign_id)
            ).scalar_one()
            searches[search.campaign_id] = CctSearch.model_validate(spec["cct"])
        cct = searches[search.campaign_id]
        values: dict[str, Any] = {"probes": search.probes + 1}
        duration = float(run.clearing_time)
        stable = probe.stable
        if probe.status is RunStatus.FAILED and probe.reason in LEFT_THE_DOMAIN:
            stable = False  # the machines ran away: unstable, whatever the solver could do
        if stable is None:
            why = f" ({probe.reason})" if probe.reason else ""
            message = f"probe at {1e3 * duration:.1f} ms {probe.status.value}{why}"
            values.update(status=FAILED, message=message)
        else:
            lo, hi = search.lo, search.hi
            if stable:
                lo = max(lo, duration)
            else:
                hi = duration if hi is None else min(hi, duration)
            values.update(lo=lo, hi=hi)
            if hi is None:  # stable at the longest duration searched
                message = f"stable at max_clearing = {1e3 * lo:.1f} ms: CCT >= it"
                values.update(status=DONE, cct=lo, message=message)
            elif hi - lo <= cct.resolution * (1 + 1e-9):
                values.update(status=DONE, cct=lo)
                if lo == 0.0:
                    values["message"] = (
                        f"unstable at every duration probed: CCT < {1e3 * hi:.1f} ms"
                    )
            else:
                next_id = _insert_probe(session, run, (lo + hi) / 2)
                values["last_run_id"] = next_id
                new_runs[probe.run_id] = next_id
        session.execute(
            update(CctSearchRow)
            .where(CctSearchRow.id == search.id)
            .values(**values)
            .execution_options(**_NO_SYNC)
        )
    return new_runs


def _insert_probe(session: Session, like: Run, duration: float) -> int:
    """A queued probe run like ``like`` at fault duration ``duration``; the campaign's run
    count and its configuration's totals count it."""
    now = utcnow()
    run_id = session.execute(
        insert(Run)
        .values(
            campaign_id=like.campaign_id,
            scenario_id=like.scenario_id,
            method=like.method,
            options=like.options,
            config_label=like.config_label,
            is_reference=False,
            status=RunStatus.QUEUED.value,
            message="",
            attempts=0,
            created_at=now,
            enqueued_at=now,
            search_id=like.search_id,
            clearing_time=duration,
        )
        .returning(Run.id)
    ).scalar_one()
    session.execute(
        update(Campaign)
        .where(Campaign.id == like.campaign_id)
        .values(n_runs=Campaign.n_runs + 1)
        .execution_options(**_NO_SYNC)
    )
    session.execute(
        update(ConfigTotals)
        .where(
            ConfigTotals.campaign_id == like.campaign_id,
            ConfigTotals.method == like.method,
            ConfigTotals.config_label == like.config_label,
            ConfigTotals.is_reference.is_(False),
        )
        .values(runs=ConfigTotals.runs + 1)
        .execution_options(**_NO_SYNC)
    )
    return int(run_id)


def cct_table(*, session: Session, campaign_id: int) -> list[dict[str, Any]]:
    """Every search of the campaign, shortest CCT first (failed and running last), with its
    probes' total solve seconds and accepted advances (the cost of finding it)."""
    cost = (
        select(
            Run.search_id,
            func.sum(RunMetrics.solve_seconds).label("solve_seconds"),
            func.sum(RunMetrics.accepted).label("accepted"),
            func.count(Run.id).label("runs"),
        )
        .join(RunMetrics, RunMetrics.run_id == Run.id, isouter=True)
        .where(Run.campaign_id == campaign_id, Run.search_id.is_not(None))
        .group_by(Run.search_id)
        .subquery()
    )
    rows = session.execute(
        select(CctSearchRow, ScenarioRow.label, cost.c.solve_seconds, cost.c.accepted)
        .join(ScenarioRow, ScenarioRow.id == CctSearchRow.scenario_id)
        .outerjoin(cost, cost.c.search_id == CctSearchRow.id)
        .where(CctSearchRow.campaign_id == campaign_id)
    ).all()
    out = [
        {
            "search_id": s.id,
            "scenario": label,
            "method": s.method,
            "config": s.config_label,
            "status": s.status,
            "cct_s": s.cct,
            "lo_s": s.lo,
            "hi_s": s.hi,
            "probes": s.probes,
            "solve_seconds": float(solve) if solve is not None else None,
            "accepted": int(accepted) if accepted is not None else None,
            "message": s.message,
        }
        for s, label, solve, accepted in rows
    ]
    order = {DONE: 0, RUNNING: 1, FAILED: 2}
    return sorted(
        out,
        key=lambda r: (order[r["status"]], r["cct_s"] if r["cct_s"] is not None else 1e9,
                       r["scenario"], r["method"], r["config"]),
    )  # fmt: skip
