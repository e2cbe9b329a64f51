"""Consistency queries behind ``raptorgrid check``: each finds, in SQL, the rows that break one
invariant of the write path, at most ``limit`` of them (``raptorgrid.check`` reads the results
themselves).

* a campaign's totals (``n_runs``, ``n_succeeded``, ``n_failed``, ``n_cancelled``) equal the
  counts of its runs, and its status agrees with them (running while a run is not final,
  finished once all are);
* a configuration's totals (``config_totals``: runs, succeeded, failed) equal its runs';
* a succeeded run has its metrics row and a result group;
* nothing is stuck: no run is running under a lease that expired ``stale`` ago, no queued run
  was never sent to the broker ``stale`` after it was created.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, case, exists, func, or_, select
from sqlalchemy.orm import Session, aliased

from raptorgrid.tables import Campaign, CampaignStatus, ConfigTotals, Run, RunMetrics
from solvers.status import RunStatus

ACTIVE = (RunStatus.QUEUED.value, RunStatus.RUNNING.value)


@dataclass(frozen=True)
class Finding:
    """One broken invariant: its kind, where, and what was found against what was expected."""

    kind: str
    campaign_id: int
    run_id: int | None
    detail: str


def _count(status: str) -> Any:
    return func.coalesce(func.sum(case((Run.status == status, 1), else_=0)), 0)


def _in_campaign(column: Any, campaign_id: int | None) -> tuple[ColumnElement[bool], ...]:
    return () if campaign_id is None else (column == campaign_id,)


def campaign_totals(*, session: Session, campaign_id: int | None, limit: int) -> list[Finding]:
    """Campaigns whose totals differ from their runs, or whose status disagrees with them."""
    runs = (
        select(
            Run.campaign_id,
            func.count().label("n"),
            _count(RunStatus.SUCCEEDED.value).label("succeeded"),
            _count(RunStatus.FAILED.value).label("failed"),
            _count(RunStatus.CANCELLED.value).label("cancelled"),
            func.coalesce(func.sum(case((Run.status.in_(ACTIVE), 1), else_=0)), 0).label("active"),
        )
        .where(*_in_campaign(Run.campaign_id, campaign_id))
        .group_by(Run.campaign_id)
        .subquery()
    )
    n, active = func.coalesce(runs.c.n, 0), func.coalesce(runs.c.active, 0)
    pairs = [
        ("n_runs", Campaign.n_runs, n),
        ("n_succeeded", Campaign.n_succeeded, func.coalesce(runs.c.succeeded, 0)),
        ("n_failed", Campaign.n_failed, func.coalesce(runs.c.failed, 0)),
        ("n_cancelled", Campaign.n_cancelled, func.coalesce(runs.c.cancelled, 0)),
    ]
    running = Campaign.status == CampaignStatus.RUNNING.value
    rows = session.execute(
        select(Campaign.id, Campaign.status, active, *[x for _, a, b in pairs for x in (a, b)])
        .outerjoin(runs, runs.c.campaign_id == Campaign.id)
        .where(
            *_in_campaign(Campaign.id, campaign_id),
            or_(
                *[a != b for _, a, b in pairs],
                and_(running, active == 0),
                and_(~running, active > 0),
            ),
        )
        .order_by(Campaign.id)
        .limit(limit)
    ).all()
    found = []
    for row in rows:
        cid, status, n_active, *values = row
        for i, (name, _, _) in enumerate(pairs):
            stored, counted = values[2 * i], values[2 * i + 1]
            if stored != counted:
                found.append(
                    Finding("campaign_totals", cid, None, f"{name} is {stored}, its runs {counted}")
                )
        if status == CampaignStatus.RUNNING.value and n_active == 0:
            found.append(Finding("stuck_campaign", cid, None, "running, yet every run is final"))
        elif status != CampaignStatus.RUNNING.value and n_active > 0:
            found.append(
                Finding("campaign_status", cid, None, f"{status}, yet {n_active} runs not final")
            )
    return found


def config_totals(*, session: Session, campaign_id: int | None, limit: int) -> list[Finding]:
    """Configuration totals that differ from their runs, of campaigns that keep totals (a
    campaign without any totals row is aggregated from its runs instead)."""
    key = (Run.campaign_id, Run.method, Run.config_label, Run.is_reference)
    runs = (
        select(
            *key,
            func.count().label("n"),
            _count(RunStatus.SUCCEEDED.value).label("succeeded"),
            _count(RunStatus.FAILED.value).label("failed"),
        )
        .where(*_in_campaign(Run.campaign_id, campaign_id))
        .group_by(*key)
        .subquery()
    )
    t = ConfigTotals
    joined = and_(
        t.campaign_id == runs.c.campaign_id,
        t.method == runs.c.method,
        t.config_label == runs.c.config_label,
        t.is_reference == runs.c.is_reference,
    )
    any_row = aliased(ConfigTotals)
    keeps_totals = exists().where(any_row.campaign_id == runs.c.campaign_id)
    counted = session.execute(
        select(
            runs,
            t.runs.label("t_runs"),
            t.succeeded.label("t_succeeded"),
            t.failed.label("t_failed"),
        )
        .outerjoin(t, joined)
        .where(
            keeps_totals,
            or_(
                t.runs.is_(None),
                t.runs != runs.c.n,
                t.succeeded != runs.c.succeeded,
                t.failed != runs.c.failed,
            ),
        )
        .order_by(runs.c.campaign_id, runs.c.method, runs.c.config_label)
        .limit(limit)
    ).all()
    found = []
    for r in counted:
        where = f"{r.method} {r.config_label}{' (reference)' if r.is_reference else ''}"
        stored = (r.t_runs, r.t_succeeded, r.t_failed)
        if r.t_runs is None:
            detail = f"{where}: no totals row for its {r.n} runs"
        else:
            detail = (
                f"{where}: runs/succeeded/failed are {'/'.join(map(str, stored))}, "
                f"its runs {r.n}/{r.succeeded}/{r.failed}"
            )
        found.append(Finding("config_totals", r.campaign_id, None, detail))
    orphans = session.execute(
        select(t.campaign_id, t.method, t.config_label)
        .where(
            *_in_campaign(t.campaign_id, campaign_id),
            ~exists().where(
                Run.campaign_id == t.campaign_id,
                Run.method == t.method,
                Run.config_label == t.config_label,
                Run.is_reference == t.is_reference,
            ),
        )
        .limit(limit)
    ).all()
    found += [
        Finding("config_totals", cid, None, f"{method} {label}: a totals row without runs")
        for cid, method, label in orphans
    ]
    return found


def succeeded_without_result(
    *, session: Session, campaign_id: int | None, limit: int
) -> list[Finding]:
    """Succeeded runs without their metrics row or without a result group."""
    rows = session.execute(
        select(Run.id, Run.campaign_id, Run.zarr_group, RunMetrics.run_id)
        .outerjoin(RunMetrics, RunMetrics.run_id == Run.id)
        .where(
            *_in_campaign(Run.campaign_id, campaign_id),
            Run.status == RunStatus.SUCCEEDED.value,
            or_(RunMetrics.run_id.is_(None), Run.zarr_group.is_(None)),
        )
        .order_by(Run.id)
        .limit(limit)
    ).all()
    found = []
    for run_id, cid, group, metrics in rows:
        if metrics is None:
            found.append(Finding("missing_metrics", cid, run_id, "succeeded without metrics"))
        if group is None:
            found.append(Finding("missing_result", cid, run_id, "succeeded without a result"))
    return found


def stuck_runs(
    *, session: Session, campaign_id: int | None, now: datetime, stale: timedelta, limit: int
) -> list[Finding]:
    """Runs running under a lease that expired ``stale`` ago, and queued runs never sent
    ``stale`` after their creation (the reconciler re-sends both while it runs)."""
    before = now - stale
    rows = session.execute(
        select(Run.id, Run.campaign_id, Run.status, Run.lease_until, Run.worker)
        .where(
            *_in_campaign(Run.campaign_id, campaign_id),
            or_(
                and_(Run.status == RunStatus.RUNNING.value, Run.lease_until < before),
                and_(
                    Run.status == RunStatus.QUEUED.value,
                    Run.enqueued_at.is_(None),
                    Run.created_at < before,
                ),
            ),
        )
        .order_by(Run.id)
        .limit(limit)
    ).all()
    found = []
    for run_id, cid, status, lease_until, worker in rows:
        if status == RunStatus.RUNNING.value:
            detail = f"running on {worker}, its lease expired at {lease_until:%Y-%m-%d %H:%M:%S}"
            found.append(Finding("stuck_run", cid, run_id, detail))
        else:
            found.append(Finding("stuck_run", cid, run_id, "queued, never sent to the broker"))
    return found


def succeeded_results(
    *, session: Session, campaign_id: int | None, page: int = 500
) -> Iterator[tuple[int, int, str]]:
    """(run id, campaign id, result group) of every succeeded run with a group, read in pages
    of ``page`` by id (keyset), so a large database is never loaded at once."""
    after = 0
    while True:
        rows = session.execute(
            select(Run.id, Run.campaign_id, Run.zarr_group)
            .where(
                *_in_campaign(Run.campaign_id, campaign_id),
                Run.status == RunStatus.SUCCEEDED.value,
                Run.zarr_group.is_not(None),
                Run.id > after,
            )
            .order_by(Run.id)
            .limit(page)
        ).all()
        for run_id, cid, group in rows:
            yield run_id, cid, str(group)
        if len(rows) < page:
            return
        after = rows[-1][0]
