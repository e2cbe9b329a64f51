"""Per-configuration running totals of a campaign (``config_totals``, migration 0006): what
the unfiltered statistics read instead of aggregating the campaign's runs.

They are kept by the write path, in the transactions that change what they count, after the
campaign row is locked (by ``record_final``'s or ``bump_stats_version``'s UPDATE): every
writer of a campaign's totals is serialised by that lock and takes it before any totals row,
so the totals add no lock order and read-modify-write is safe:

* ``create``: with the campaign (``create_campaign``): every run counted, none final;
* ``add_final``: runs that just reached a final status (``record_final``): status counts,
  metrics, percentile pivots (and a score, had one been written already);
* ``add_scores``: runs just scored (``scoring.score.write_scores``): scored, qualified,
  worst errors.

Each run is added once: its final status and metrics are written once (a final status never
changes) and its score once (the ``scored_at IS NULL`` guard), as the stats cache relies on
too. A writer that bypasses these functions (a bulk load) calls ``rebuild``. A campaign without
totals rows (rows inserted directly, as some tests do) is aggregated from its runs instead.

Percentiles (``percentile_cont``, exact): per percentile q a *pivot*, the (value, run id) at
rank floor(q (n - 1)) of the configuration's n measured runs ordered by (value, id) (the runs
copy the value: ``runs.metric_solve_seconds``, in the order of
``ix_runs_config_*``). Adding k runs moves that rank by at most k and the pivot's own rank
by the number of them ordered below it, so the pivot moves by the difference: one indexed
query with that offset per block of runs (``_moved``; was one query per run); a reader needs
the pivot and the one entry after it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from sqlalchemy import (
    Float,
    and_,
    bindparam,
    case,
    delete,
    func,
    literal,
    select,
    text,
    tuple_,
    update,
)
from sqlalchemy.orm import Session

from raptorgrid.tables import Campaign, ConfigTotals, Run, RunMetrics
from solvers.status import RunStatus

PIVOTS: dict[str, tuple[str, float]] = {
    "solve_p50": ("metric_solve_seconds", 0.5),
    "solve_p95": ("metric_solve_seconds", 0.95),
}
"""Pivot column of ``config_totals`` -> (the ``runs`` column it ranks, quantile)."""
SUCCEEDED = RunStatus.SUCCEEDED.value
FAILED = RunStatus.FAILED.value
_NO_SYNC = {"synchronize_session": False}

Key = tuple[int, str, str, bool]
"""(campaign_id, method, config_label, is_reference)."""
KEY_COLUMNS = ("campaign_id", "method", "config_label", "is_reference")
ERRORS = ("max_state_error", "max_voltage_mae", "max_kcl")


def rank(q: float, n: int) -> int:
    """The rank (from 0) of the lower of the values ``percentile_cont(q)`` interpolates
    between, among ``n`` sorted values (PostgreSQL's ``floor(q * (n - 1))``)."""
    return math.floor(q * (n - 1))


def _order(value: float, run_id: int) -> tuple[bool, float, int]:
    """Sort key of (value, run id) as SQL orders floats: NaN after every number."""
    nan = math.isnan(value)
    return (nan, 0.0 if nan else value, run_id)


def _greatest(a: Any, b: Any) -> Any:
    """SQL ``max`` of two values, NULL ignored (NaN greatest, as PostgreSQL orders it)."""
    if a is None or b is None:
        return b if a is None else a
    if isinstance(a, float) or isinstance(b, float):
        return a if _order(float(a), 0) >= _order(float(b), 0) else b
    return max(a, b)


def _least(a: Any, b: Any) -> Any:
    if a is None or b is None:
        return b if a is None else a
    return min(a, b)


def _matching(table: Any, key: Key) -> list[Any]:
    """Conditions selecting ``key``'s rows of ``table`` (``Run`` or ``ConfigTotals``: both carry
    the four key columns)."""
    campaign_id, method, config_label, is_reference = key
    return [
        table.campaign_id == campaign_id,
        table.method == method,
        table.config_label == config_label,
        table.is_reference == is_reference,
    ]


def _step(
    session: Session, key: Key, column: str, pivot: tuple[float, int], shift: int
) -> tuple[float, int]:
    """The entry ``shift`` places after (or, negative, before) ``pivot`` in the
    configuration's (value, id) order: one indexed query whatever the shift."""
    col = getattr(Run, column)
    at = tuple_(literal(pivot[0], Float), literal(pivot[1]))
    where = [*_matching(Run, key), col.is_not(None)]
    if shift > 0:
        query = select(col, Run.id).where(*where, tuple_(col, Run.id) > at).order_by(col, Run.id)
    else:
        query = (
            select(col, Run.id)
            .where(*where, tuple_(col, Run.id) < at)
            .order_by(col.desc(), Run.id.desc())
        )
    value, run_id = session.execute(query.limit(1).offset(abs(shift) - 1)).one()
    return float(value), int(run_id)


def _moved(
    session: Session,
    key: Key,
    column: str,
    q: float,
    n: int,
    pivot: tuple[float, int] | None,
    new: list[tuple[float, int]],
) -> tuple[float, int] | None:
    """The pivot of quantile ``q`` after the entries ``new`` join the ``n`` entries ``pivot``
    ranks (``new`` are already in the index): from the pivot's rank among all of them, one
    step of the needed length (a worker's block of runs moves each pivot once)."""
    if not new:
        return pivot
    total = n + len(new)
    if pivot is None or n == 0:  # the new entries are all there is
        return sorted(new, key=lambda e: _order(*e))[rank(q, total)]
    below = rank(q, n) + sum(_order(*e) < _order(*pivot) for e in new)  # the pivot's rank now
    shift = rank(q, total) - below
    if shift == 0:
        return pivot
    return _step(session, key, column, pivot, shift)


def _write(session: Session, key: Key, values: dict[str, Any]) -> None:
    values = {k: v for k, v in values.items() if k not in KEY_COLUMNS}
    session.execute(
        update(ConfigTotals)
        .where(*_matching(ConfigTotals, key))
        .values(**values)
        .execution_options(**_NO_SYNC)
    )


def _add_score(t: dict[str, Any], status: str, m: Any) -> None:
    """Add a run's score (``m``: its metrics row) to totals ``t``."""
    if m.scored_at is None:
        return
    t["scored"] += 1
    t["qualified_runs"] += int(status == SUCCEEDED and m.qualified is True)
    t["max_state_error"] = _greatest(t["max_state_error"], m.state_error)
    t["max_voltage_mae"] = _greatest(t["max_voltage_mae"], m.voltage_mae)
    t["max_kcl"] = _greatest(t["max_kcl"], m.kcl_max)


TOTALS = [c for c in ConfigTotals.__table__.c if c.name not in KEY_COLUMNS]
"""The totals columns read with the runs (``_runs_with_totals``), labelled ``t_<name>``."""


def _runs_with_totals(session: Session, run_ids: Iterable[int]) -> list[Any]:
    """The runs with their metrics and their configuration's totals row (one query)."""
    same = [getattr(ConfigTotals, k) == getattr(Run, k) for k in KEY_COLUMNS]
    return session.execute(
        select(
            Run.id,
            Run.campaign_id,
            Run.method,
            Run.config_label,
            Run.is_reference,
            Run.status,
            Run.metric_solve_seconds,
            RunMetrics.run_id.label("measured"),
            RunMetrics.compile_seconds,
            RunMetrics.load_seconds,
            RunMetrics.overhead_seconds,
            RunMetrics.accepted,
            RunMetrics.rejected,
            RunMetrics.newton_iterations,
            RunMetrics.scored_at,
            RunMetrics.qualified,
            RunMetrics.state_error,
            RunMetrics.voltage_mae,
            RunMetrics.kcl_max,
            *(c.label(f"t_{c.name}") for c in TOTALS),
        )
        .outerjoin(RunMetrics, RunMetrics.run_id == Run.id)
        .outerjoin(ConfigTotals, and_(*same))
        .where(Run.id.in_(list(run_ids)))
        .order_by(Run.id)
    ).all()


def create(*, session: Session, campaign_id: int) -> None:
    """The campaign's totals rows, from its (just inserted, non-final) runs."""
    grouped = (
        select(
            Run.campaign_id,
            Run.method,
            Run.config_label,
            Run.is_reference,
            func.min(Run.id),
            func.count(Run.id),
        )
        .where(Run.campaign_id == campaign_id)
        .group_by(Run.campaign_id, Run.method, Run.config_label, Run.is_reference)
    )
    session.execute(
        ConfigTotals.__table__.insert().from_select(
            ["campaign_id", "method", "config_label", "is_reference", "first_run", "runs"],
            grouped,
        )
    )


def add_final(*, session: Session, run_ids: list[int]) -> None:
    """Add runs that just reached a final status (their metrics and copies written) to their
    configurations' totals. Call with the campaign row locked (``record_final``)."""
    rows = _runs_with_totals(session, run_ids)
    current: dict[Key, dict[str, Any]] = {}
    measured_before: dict[Key, int] = {}
    new: dict[tuple[Key, str], list[tuple[float, int]]] = {}
    for r in rows:
        key: Key = (r.campaign_id, r.method, r.config_label, bool(r.is_reference))
        if r.t_first_run is None:  # a campaign without totals
            continue
        t = current.setdefault(key, {c.name: getattr(r, f"t_{c.name}") for c in TOTALS})
        measured_before.setdefault(key, t["measured"])
        t["succeeded"] += int(r.status == SUCCEEDED)
        t["failed"] += int(r.status == FAILED)
        if r.measured is not None:
            t["measured"] += 1
            t["sum_accepted"] += r.accepted
            t["sum_rejected"] += r.rejected
            t["sum_newton_iterations"] += r.newton_iterations
            t["sum_compile_seconds"] += r.compile_seconds + r.load_seconds
            t["sum_overhead_seconds"] += r.overhead_seconds
            t["min_accepted"] = _least(t["min_accepted"], r.accepted)
            t["max_accepted"] = _greatest(t["max_accepted"], r.accepted)
            for name, (column, _) in PIVOTS.items():
                new.setdefault((key, name), []).append((getattr(r, column), r.id))
        _add_score(t, r.status, r)
    for key, t in current.items():
        for name, (column, q) in PIVOTS.items():
            pivot = None if t[name] is None else (t[name], t[f"{name}_run"])
            moved = _moved(session, key, column, q, measured_before[key], pivot,
                           new.get((key, name), []))  # fmt: skip
            if moved is not None:
                t[name], t[f"{name}_run"] = moved
        _write(session, key, t)


def _combine_max(column: Any, name: str) -> Any:
    """SQL: the greater of ``column`` and parameter ``name``, NULL ignored."""
    new = bindparam(name, type_=Float)
    return case((column.is_(None), new), (new.is_(None), column), (new > column, new), else_=column)


def add_scores(*, session: Session, run_ids: list[int]) -> None:
    """Add the scores just written for ``run_ids`` to their configurations' totals (one
    UPDATE, executed once per configuration). Call with the campaign row locked
    (``write_scores``, after ``bump_stats_version``)."""
    deltas: dict[Key, dict[str, Any]] = {}
    for r in _runs_with_totals(session, run_ids):
        key: Key = (r.campaign_id, r.method, r.config_label, bool(r.is_reference))
        if r.t_first_run is None:
            continue
        zero = {"scored": 0, "qualified_runs": 0}
        _add_score(deltas.setdefault(key, {**zero, **dict.fromkeys(ERRORS)}), r.status, r)
    if not deltas:
        return
    table = ConfigTotals.__table__
    statement = (
        update(table)
        .where(*(table.c[k] == bindparam(f"k_{k}") for k in KEY_COLUMNS))
        .values(
            scored=table.c.scored + bindparam("d_scored"),
            qualified_runs=table.c.qualified_runs + bindparam("d_qualified_runs"),
            **{e: _combine_max(table.c[e], f"d_{e}") for e in ERRORS},
        )
    )
    session.execute(
        statement,
        [
            {
                **{f"k_{k}": v for k, v in zip(KEY_COLUMNS, key, strict=True)},
                **{f"d_{k}": v for k, v in delta.items()},
            }
            for key, delta in sorted(deltas.items())
        ],
    )


def rebuild(*, session: Session, campaign_id: int) -> None:
    """Recompute the campaign's run copies of its metrics and its totals from the rows, for
    writers that bypass ``finish_run`` and scoring (bulk loads). Locks the campaign row and
    bumps its ``stats_version`` (cached statistics are invalidated)."""
    session.execute(
        update(Campaign)
        .where(Campaign.id == campaign_id)
        .values(stats_version=Campaign.stats_version + 1)
        .execution_options(**_NO_SYNC)
    )
    for statement in COPY_SQL:  # only rows whose copies differ are written
        session.execute(text(statement), {"campaign_id": campaign_id})
    session.execute(delete(ConfigTotals).where(ConfigTotals.campaign_id == campaign_id))
    session.execute(text(REBUILD_SQL), {"campaign_id": campaign_id})
    fill_pivots(session=session, campaign_id=campaign_id)


COPY_SQL = (
    "UPDATE runs SET metric_solve_seconds = NULL "
    "WHERE campaign_id = :campaign_id AND metric_solve_seconds IS NOT NULL "
    "AND NOT EXISTS (SELECT 1 FROM run_metrics AS m WHERE m.run_id = runs.id)",
    "UPDATE runs SET metric_solve_seconds = "
    "(SELECT m.solve_seconds FROM run_metrics AS m WHERE m.run_id = runs.id) "
    "WHERE campaign_id = :campaign_id AND EXISTS (SELECT 1 FROM run_metrics AS m "
    "WHERE m.run_id = runs.id AND (runs.metric_solve_seconds IS NULL "
    "OR m.solve_seconds <> runs.metric_solve_seconds))",
)
"""The runs' copies of their solve time made equal to ``run_metrics``."""
REBUILD_SQL = """
INSERT INTO config_totals (
    campaign_id, method, config_label, is_reference, first_run, runs, succeeded, failed,
    measured, sum_accepted, min_accepted, max_accepted, sum_rejected, sum_newton_iterations,
    sum_compile_seconds, sum_overhead_seconds, scored, qualified_runs, max_state_error,
    max_voltage_mae, max_kcl)
SELECT r.campaign_id, r.method, r.config_label, r.is_reference, min(r.id), count(r.id),
    sum(CASE WHEN r.status = 'succeeded' THEN 1 ELSE 0 END),
    sum(CASE WHEN r.status = 'failed' THEN 1 ELSE 0 END),
    count(m.run_id), coalesce(sum(m.accepted), 0), min(m.accepted), max(m.accepted),
    coalesce(sum(m.rejected), 0), coalesce(sum(m.newton_iterations), 0),
    coalesce(sum(m.compile_seconds + m.load_seconds), 0), coalesce(sum(m.overhead_seconds), 0),
    count(m.scored_at),
    sum(CASE WHEN r.status = 'succeeded' AND m.qualified THEN 1 ELSE 0 END),
    max(m.state_error), max(m.voltage_mae), max(m.kcl_max)
FROM runs AS r LEFT JOIN run_metrics AS m ON m.run_id = r.id
WHERE r.campaign_id = :campaign_id
GROUP BY r.campaign_id, r.method, r.config_label, r.is_reference
"""
"""Every totals column but the pivots, from the rows (also the migration's backfill)."""


def fill_pivots(*, session: Session, campaign_id: int) -> None:
    """Set every pivot of the campaign's totals from the runs (one index range each)."""
    rows = session.execute(
        select(
            ConfigTotals.method,
            ConfigTotals.config_label,
            ConfigTotals.is_reference,
            ConfigTotals.measured,
        ).where(ConfigTotals.campaign_id == campaign_id, ConfigTotals.measured > 0)
    ).all()
    for method, config_label, is_reference, n in rows:
        key: Key = (campaign_id, method, config_label, bool(is_reference))
        values: dict[str, Any] = {}
        for name, (column, q) in PIVOTS.items():
            col = getattr(Run, column)
            value, run_id = session.execute(
                select(col, Run.id)
                .where(*_matching(Run, key), col.is_not(None))
                .order_by(col, Run.id)
                .limit(1)
                .offset(rank(q, n))
            ).one()
            values[name], values[f"{name}_run"] = value, run_id
        _write(session, key, values)
