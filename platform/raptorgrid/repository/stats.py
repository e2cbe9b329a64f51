"""Campaign statistics from SQL aggregates: per method configuration, the paper's Table I, the
accuracy-runtime Pareto front and the contingency ranking.

Without a kind or status filter (the whole campaign, one method, with or without the
references), the per-configuration statistics are read from ``config_totals`` (one row per
configuration, kept by the write path: ``repository.totals``) and, for each percentile, the run
after its pivot (one step of an index): no aggregate over the runs. Filtered views, and
campaigns without totals rows, are one grouped query over ``runs`` (+ ``run_metrics``);
percentiles are computed by PostgreSQL (``percentile_cont``) and, on SQLite, which has none,
from one query of the configurations' runtimes. Both give the same values (the totals path
interpolates as ``percentile_cont`` does). The API serves ``config_stats`` through
``stats_cache.StatsCache`` (keyed by ``campaigns.stats_version``). Definitions
(docs/results.md):

* a configuration is *qualified* when every run of it succeeded and was scored qualified
  against its scenario's reference (the paper: meets all thresholds on every instance);
* *runtime* is solve time everywhere (``run_metrics.solve_seconds``: compilation and executable
  loading excluded, as in DESIGN §2); a configuration's runtime is the median over its runs,
  beside the p95, the mean compile (+ load) seconds and the mean worker overhead seconds
  (claim, build, result write) as their own columns. Table I takes, per method, the fastest
  qualified configuration, and the subject's (by default RAPTOR's) speedup = that runtime /
  the subject's fastest qualified runtime;
* the Pareto front: scored configurations not beaten on both median runtime and worst
  normalized state error.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Float, Numeric, and_, case, cast, func, or_, select, text, tuple_
from sqlalchemy.dialects.postgresql import array
from sqlalchemy.orm import Session

from raptorgrid.repository import totals
from raptorgrid.scoring.indicators import tsi
from raptorgrid.tables import ConfigTotals, Run, RunMetrics, ScenarioIndicators, ScenarioRow
from solvers.status import RunStatus

SUBJECT = "raptor"
"""The method whose speedups Table I reports unless another is asked for."""
RUNTIME_BASIS = "median solve time over the configuration's runs (compile and overhead excluded)"
SORT_MEMORY = "32MB"
"""PostgreSQL ``work_mem`` for the stats query's transaction: the sort of 100,000 joined runs
by configuration then stays in memory instead of spilling ~10 MB to disk."""


@dataclass(frozen=True)
class Filters:
    """Restrict the runs counted: disturbance kind (``bus_fault``...), method, run status."""

    kind: str | None = None
    method: str | None = None
    status: str | None = None
    include_reference: bool = False

    def conditions(self, campaign_id: int) -> list[Any]:
        out: list[Any] = [Run.campaign_id == campaign_id]
        if not self.include_reference:
            out.append(Run.is_reference.is_(False))
        if self.method is not None:
            out.append(Run.method == self.method)
        if self.status is not None:
            out.append(Run.status == self.status)
        if self.kind is not None:  # labels are "kind:element#k" or "kind#k"
            kinds = select(ScenarioRow.id).where(
                ScenarioRow.campaign_id == campaign_id,
                or_(
                    ScenarioRow.label.like(f"{self.kind}:%"),
                    ScenarioRow.label.like(f"{self.kind}#%"),
                ),
            )
            out.append(Run.scenario_id.in_(kinds))
        return out


@dataclass(frozen=True)
class ConfigStats:
    """One method configuration (method + options) over the filtered runs (frozen: cached
    instances are shared between requests)."""

    method: str
    config: str
    is_reference: bool
    runs: int
    succeeded: int
    failed: int
    success_rate: float
    median_runtime_s: float | None
    """Median solve seconds per run (the runtime; compile and overhead excluded)."""
    p95_runtime_s: float | None
    mean_compile_s: float | None
    """Mean compile + executable-load seconds per run."""
    mean_overhead_s: float | None
    """Mean worker seconds per run outside solve and compile (claim, build, result write)."""
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

    @property
    def qualified(self) -> bool:
        return self.runs > 0 and self.qualified_runs == self.runs

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "qualified": self.qualified}


def _is_postgres(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


def _percentile(column: Any, q: float) -> Any:
    return func.percentile_cont(q).within_group(column)


def _quantile(values: list[float], q: float) -> float | None:
    """Linear-interpolation quantile, as PostgreSQL's ``percentile_cont``."""
    if not values:
        return None
    values = sorted(values)
    pos = q * (len(values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


def config_stats(
    *,
    session: Session,
    campaign_id: int,
    filters: Filters = Filters(),
    limit: int | None = None,
    offset: int = 0,
) -> tuple[list[ConfigStats], int]:
    """One page of per-configuration statistics (in order of first run) and the total (every
    configuration when ``limit`` is None: then the total is the number returned)."""
    if filters.kind is None and filters.status is None:
        rows = _from_totals(session, campaign_id, filters)
        if rows is not None:
            page = rows[offset:] if limit is None else rows[offset : offset + limit]
            return [_config(r) for r in page], len(rows)
    return _aggregated(
        session=session, campaign_id=campaign_id, filters=filters, limit=limit, offset=offset
    )


PERCENTILE_FIELDS = {"median_runtime_s": "solve_p50", "p95_runtime_s": "solve_p95"}
"""``ConfigStats`` field -> the ``config_totals`` pivot it is interpolated from."""


def _from_totals(
    session: Session, campaign_id: int, filters: Filters
) -> list[dict[str, Any]] | None:
    """Every configuration of the view from ``config_totals``, in order of first run; None
    when the campaign has no totals rows."""
    t = ConfigTotals
    pg = _is_postgres(session)

    def mean(total: Any) -> Any:  # as avg(): numeric division on PostgreSQL, float on SQLite
        return cast(total, Numeric if pg else Float) / func.nullif(t.measured, 0)

    def after(name: str, column: str) -> Any:
        """The value after the pivot in the configuration's (value, id) order."""
        col = getattr(Run, column)
        pivot = tuple_(getattr(t, name), getattr(t, f"{name}_run"))
        return (
            select(col)
            .where(
                Run.campaign_id == t.campaign_id,
                Run.method == t.method,
                Run.config_label == t.config_label,
                Run.is_reference == t.is_reference,
                col.is_not(None),
                tuple_(col, Run.id) > pivot,
            )
            .order_by(col, Run.id)
            .limit(1)
            .scalar_subquery()
        )

    query = (
        select(
            t.method,
            t.config_label,
            t.is_reference,
            t.runs,
            t.succeeded,
            t.failed,
            mean(t.sum_accepted).label("mean_accepted"),
            t.min_accepted,
            t.max_accepted,
            mean(t.sum_rejected).label("mean_rejected"),
            mean(t.sum_newton_iterations).label("mean_newton_iterations"),
            mean(t.sum_compile_seconds).label("mean_compile_s"),
            mean(t.sum_overhead_seconds).label("mean_overhead_s"),
            t.scored,
            t.qualified_runs,
            t.max_state_error,
            t.max_voltage_mae,
            t.max_kcl,
            t.measured,
            *(getattr(t, name) for name in totals.PIVOTS),
            *(
                after(name, column).label(f"{name}_next")
                for name, (column, _) in totals.PIVOTS.items()
            ),
        )
        .where(t.campaign_id == campaign_id)
        .order_by(t.first_run)
    )
    rows = [dict(r._mapping) for r in session.execute(query)]
    if not rows:
        return None
    rows = [
        r
        for r in rows
        if (filters.include_reference or not r["is_reference"])
        and (filters.method is None or r["method"] == filters.method)
    ]
    try:
        for r in rows:
            for field, name in PERCENTILE_FIELDS.items():
                q = totals.PIVOTS[name][1]
                r[field] = _interpolate(q, r["measured"], r[name], r[f"{name}_next"])
    except LookupError:  # totals out of step with the runs (a bulk load that did not call
        return None  # ``totals.rebuild``): aggregate the runs instead
    return rows


def _interpolate(q: float, n: int, lo: float | None, following: float | None) -> float | None:
    """``percentile_cont(q)`` of ``n`` values from the one at rank floor(q (n - 1)) and the
    one after it, with PostgreSQL's float operations (so the same result)."""
    if not n or lo is None:
        return None
    pos, k = q * (n - 1), totals.rank(q, n)
    if math.ceil(pos) == k:
        return float(lo)
    if following is None:
        raise LookupError("no run after the pivot")
    return lo + (pos - k) * (following - lo)


def _aggregated(
    *,
    session: Session,
    campaign_id: int,
    filters: Filters,
    limit: int | None,
    offset: int,
) -> tuple[list[ConfigStats], int]:
    """``config_stats`` by aggregating the view's runs (one grouped query)."""
    ok = RunStatus.SUCCEEDED.value
    where = filters.conditions(campaign_id)
    pg = _is_postgres(session)
    keys = (_bytewise(Run.method, pg), _bytewise(Run.config_label, pg), Run.is_reference)
    columns = [
        keys[0].label("method"),
        keys[1].label("config_label"),
        Run.is_reference,
        func.count(Run.id).label("runs"),
        func.sum(case((Run.status == ok, 1), else_=0)).label("succeeded"),
        func.sum(case((Run.status == RunStatus.FAILED.value, 1), else_=0)).label("failed"),
        func.avg(RunMetrics.accepted).label("mean_accepted"),
        func.min(RunMetrics.accepted).label("min_accepted"),
        func.max(RunMetrics.accepted).label("max_accepted"),
        func.avg(RunMetrics.rejected).label("mean_rejected"),
        func.avg(RunMetrics.newton_iterations).label("mean_newton_iterations"),
        func.avg(RunMetrics.compile_seconds + RunMetrics.load_seconds).label("mean_compile_s"),
        func.avg(RunMetrics.overhead_seconds).label("mean_overhead_s"),
        func.count(RunMetrics.scored_at).label("scored"),
        func.sum(case((and_(Run.status == ok, RunMetrics.qualified.is_(True)), 1), else_=0)).label(
            "qualified_runs"
        ),
        func.max(RunMetrics.state_error).label("max_state_error"),
        func.max(RunMetrics.voltage_mae).label("max_voltage_mae"),
        func.max(RunMetrics.kcl_max).label("max_kcl"),
    ]
    if pg:
        # one sort of the joined rows by configuration, then one sort per configuration and
        # column: both runtime quantiles from one ordered-set aggregate
        columns.append(_percentile(RunMetrics.solve_seconds, array([0.5, 0.95])).label("runtime_q"))
        session.execute(text(f"SET LOCAL work_mem = '{SORT_MEMORY}'"))
    query = (
        select(*columns)
        .select_from(Run)
        .outerjoin(RunMetrics, RunMetrics.run_id == Run.id)
        .where(*where)
        .group_by(*keys)
        .order_by(func.min(Run.id))
    )
    total = None
    if limit is not None:
        query = query.limit(limit).offset(offset)
        total = session.execute(
            select(func.count()).select_from(select(*keys).where(*where).group_by(*keys).subquery())
        ).scalar_one()
    rows = [dict(r._mapping) for r in session.execute(query)]
    for r in rows:
        if "runtime_q" in r:
            r["median_runtime_s"], r["p95_runtime_s"] = r.pop("runtime_q") or (None, None)
    if not pg and rows:
        _fill_percentiles(session, rows, where)
    out = [_config(r) for r in rows]
    return out, len(out) if total is None else int(total)


def _bytewise(column: Any, pg: bool) -> Any:
    """PostgreSQL: ``column`` in the "C" collation, so the sort that groups runs by
    configuration compares bytes (and uses abbreviated keys) instead of calling the locale's
    ``strcoll``; the groups are the same (both collations are deterministic) and the output
    order is by first run."""
    return column.collate("C") if pg else column


def _config(r: dict[str, Any]) -> ConfigStats:
    runs = int(r["runs"])
    return ConfigStats(
        method=r["method"],
        config=r["config_label"],
        is_reference=bool(r["is_reference"]),
        runs=runs,
        succeeded=int(r["succeeded"] or 0),
        failed=int(r["failed"] or 0),
        success_rate=(int(r["succeeded"] or 0) / runs) if runs else 0.0,
        median_runtime_s=_float(r["median_runtime_s"]),
        p95_runtime_s=_float(r["p95_runtime_s"]),
        mean_compile_s=_float(r["mean_compile_s"]),
        mean_overhead_s=_float(r["mean_overhead_s"]),
        mean_accepted=_float(r["mean_accepted"]),
        min_accepted=r["min_accepted"],
        max_accepted=r["max_accepted"],
        mean_rejected=_float(r["mean_rejected"]),
        mean_newton_iterations=_float(r["mean_newton_iterations"]),
        scored=int(r["scored"] or 0),
        qualified_runs=int(r["qualified_runs"] or 0),
        max_state_error=_float(r["max_state_error"]),
        max_voltage_mae=_float(r["max_voltage_mae"]),
        max_kcl=_float(r["max_kcl"]),
    )


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _fill_percentiles(session: Session, rows: list[dict[str, Any]], where: list[Any]) -> None:
    """SQLite fallback: the page's solve times in one query, quantiles in Python."""
    keys = {(r["method"], r["config_label"], bool(r["is_reference"])) for r in rows}
    values: dict[tuple, list[float]] = {k: [] for k in keys}
    methods = sorted({k[0] for k in keys})
    data = session.execute(
        select(Run.method, Run.config_label, Run.is_reference, RunMetrics.solve_seconds)
        .join(RunMetrics, RunMetrics.run_id == Run.id)
        .where(*where, Run.method.in_(methods))
    )
    for m, c, ref, solve in data:
        bucket = values.get((m, c, bool(ref)))
        if bucket is not None:
            bucket.append(solve)
    for r in rows:
        v = values[(r["method"], r["config_label"], bool(r["is_reference"]))]
        r["median_runtime_s"] = _quantile(v, 0.5)
        r["p95_runtime_s"] = _quantile(v, 0.95)


def table_one(configs: list[ConfigStats], subject: str = SUBJECT) -> dict[str, Any]:
    """The paper's Table I: per other method its fastest qualified configuration, and the
    subject's (by default RAPTOR's) speedup over it."""

    def fastest(method: str) -> ConfigStats | None:
        qualified = [
            c
            for c in configs
            if c.method == method
            and not c.is_reference
            and c.qualified
            and c.median_runtime_s is not None
        ]
        return min(qualified, key=lambda c: c.median_runtime_s, default=None)

    best = fastest(subject)
    rows = []
    for method in dict.fromkeys(c.method for c in configs if not c.is_reference):
        if method == subject:
            continue
        base = fastest(method)
        speedup = (
            base.median_runtime_s / best.median_runtime_s
            if base is not None and best is not None and best.median_runtime_s > 0
            else None
        )
        rows.append(
            {
                "method": method,
                "config": base.config if base else None,
                "runtime_s": base.median_runtime_s if base else None,
                "state_error": base.max_state_error if base else None,
                "voltage_mae": base.max_voltage_mae if base else None,
                "kcl_max": base.max_kcl if base else None,
                "speedup": speedup,
                "note": "" if base else "no accuracy-qualified configuration",
            }
        )
    return {
        "subject": subject,
        "subject_config": best.config if best else None,
        "subject_runtime_s": best.median_runtime_s if best else None,
        "subject_state_error": best.max_state_error if best else None,
        "subject_voltage_mae": best.max_voltage_mae if best else None,
        "subject_kcl_max": best.max_kcl if best else None,
        "rows": rows,
        "basis": f"fastest accuracy-qualified configuration of each; runtime = {RUNTIME_BASIS}",
    }


def pareto_front(configs: list[ConfigStats]) -> list[dict[str, Any]]:
    """Every scored configuration with its (runtime, worst error) and whether it is on the
    front (no other configuration is at least as fast and at least as accurate, one strictly)."""
    points = [
        c
        for c in configs
        if not c.is_reference
        and c.scored
        and c.median_runtime_s is not None
        and c.max_state_error is not None
    ]
    out = []
    for c in points:
        dominated = any(
            o is not c
            and o.median_runtime_s <= c.median_runtime_s
            and o.max_state_error <= c.max_state_error
            and (o.median_runtime_s < c.median_runtime_s or o.max_state_error < c.max_state_error)
            for o in points
        )
        out.append(
            {
                "method": c.method,
                "config": c.config,
                "runtime_s": c.median_runtime_s,
                "state_error": c.max_state_error,
                "mean_accepted": c.mean_accepted,
                "qualified": c.qualified,
                "on_front": not dominated,
            }
        )
    return sorted(out, key=lambda p: p["runtime_s"])


def contingency_ranking(
    *,
    session: Session,
    campaign_id: int,
    kind: str | None = None,
    limit: int = 100,
    offset: int = 0,
) -> tuple[list[dict[str, Any]], int]:
    """Scenarios by severity (worst first) with their stability indicators, and the total;
    failed runs are counted for the page's scenarios only."""
    where = [ScenarioIndicators.campaign_id == campaign_id]
    if kind is not None:
        where.append(or_(ScenarioRow.label.like(f"{kind}:%"), ScenarioRow.label.like(f"{kind}#%")))
    joined = ScenarioRow.id == ScenarioIndicators.scenario_id
    count = select(func.count()).select_from(ScenarioIndicators)
    if kind is not None:
        count = count.join(ScenarioRow, joined)
    total = session.execute(count.where(*where)).scalar_one()
    page = session.execute(
        select(ScenarioIndicators, ScenarioRow)
        .join(ScenarioRow, joined)
        .where(*where)
        .order_by(cast(ScenarioIndicators.severity, Float).desc(), ScenarioRow.index)
        .limit(limit)
        .offset(offset)
    ).all()
    failed = _failed_runs(session, [scenario.id for _, scenario in page])
    rows = [(ind, scenario, failed.get(scenario.id, 0)) for ind, scenario in page]
    out = []
    for rank, (ind, scenario, n_failed) in enumerate(rows, start=offset + 1):
        out.append(
            {
                "rank": rank,
                "scenario_id": scenario.id,
                "label": scenario.label,
                "disturbance": scenario.disturbance,
                "severity": ind.severity,
                "tsi": tsi(ind.severity),
                "stable": ind.stable,
                "criterion": ind.criterion,
                "max_angle_spread_deg": ind.max_angle_spread_deg,
                "frequency_nadir_hz": ind.frequency_nadir_hz,
                "frequency_nadir_t": ind.frequency_nadir_t,
                "frequency_zenith_hz": ind.frequency_zenith_hz,
                "frequency_zenith_t": ind.frequency_zenith_t,
                "min_voltage_pu": ind.min_voltage_pu,
                "min_voltage_t": ind.min_voltage_t,
                "voltage_recovery_t": ind.voltage_recovery_t,
                "source_run_id": ind.run_id,
                "from_reference": ind.from_reference,
                "failed_runs": int(n_failed),
            }
        )
    return out, int(total)


def _failed_runs(session: Session, scenario_ids: list[int]) -> dict[int, int]:
    """Failed non-reference runs per scenario, for the given scenarios (one grouped query)."""
    if not scenario_ids:
        return {}
    rows = session.execute(
        select(Run.scenario_id, func.count(Run.id))
        .where(
            Run.scenario_id.in_(scenario_ids),
            Run.status == RunStatus.FAILED.value,
            Run.is_reference.is_(False),
        )
        .group_by(Run.scenario_id)
    ).all()
    return {scenario_id: int(n) for scenario_id, n in rows}


def failures(
    *, session: Session, campaign_id: int, limit: int = 100, offset: int = 0
) -> tuple[list[dict[str, Any]], int]:
    """Failed runs with their reason and message, grouped counts first (for the dashboard)."""
    where = (Run.campaign_id == campaign_id, Run.status == RunStatus.FAILED.value)
    total = session.execute(select(func.count(Run.id)).where(*where)).scalar_one()
    rows = session.execute(
        select(Run.id, Run.method, Run.config_label, Run.reason, Run.message, ScenarioRow.label)
        .join(ScenarioRow, ScenarioRow.id == Run.scenario_id)
        .where(*where)
        .order_by(Run.id)
        .limit(limit)
        .offset(offset)
    ).all()
    return [
        {
            "run_id": r.id,
            "method": r.method,
            "config": r.config_label,
            "reason": r.reason,
            "message": r.message,
            "scenario": r.label,
        }
        for r in rows
    ], int(total)


def median(values: list[float]) -> float | None:
    """Convenience for tests and reports (the same definition as the SQL median)."""
    return statistics.median(values) if values else None
