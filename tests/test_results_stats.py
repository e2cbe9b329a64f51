"""Stats aggregates agree on SQLite (Python quantiles) and PostgreSQL (percentile_cont)."""

from __future__ import annotations

import numpy as np
import pytest
from raptorgrid.repository.stats import Filters, _quantile, config_stats, pareto_front, table_one
from raptorgrid.tables import Campaign, Run, RunMetrics, ScenarioRow, utcnow
from sqlalchemy import insert, select


def test_percentiles_and_table_one_on_both_engines(any_db) -> None:
    rng = np.random.default_rng(1)
    now = utcnow()
    configs = [
        ("raptor", "a", 0.01, 1e-8),
        ("radau", "fast", 0.05, 1e-3),
        ("radau", "slow", 0.2, 1e-8),
    ]
    with any_db.write() as s:
        c = Campaign(name="q", network="wscc9", spec={}, t_end=1.0, n_eval=2, n_runs=0,
                     created_at=now)  # fmt: skip
        s.add(c)
        s.flush()
        s.execute(insert(ScenarioRow), [
            {"campaign_id": c.id, "index": i, "disturbance": {}, "ic_seed": 0, "ic_spread": 0.0,
             "label": f"bus_fault:b{i}#0" if i < 5 else f"none#{i}"}
            for i in range(10)])  # fmt: skip
        sids = list(s.scalars(select(ScenarioRow.id).where(ScenarioRow.campaign_id == c.id)))
        times: dict[str, list[float]] = {}
        for m, cfg, scale, err in configs:
            for sid in sids:
                run = Run(campaign_id=c.id, scenario_id=sid, method=m, options={},
                          config_label=cfg, status="succeeded", created_at=now)  # fmt: skip
                s.add(run)
                s.flush()
                t = float(scale * rng.lognormal())
                times.setdefault(cfg, []).append(t)
                s.add(RunMetrics(run_id=run.id, attempt=1, accepted=10, rejected=1,
                                 newton_iterations=5, algebraic_iterations=0,
                                 jacobian_evaluations=1, lu_factorizations=1, rhs_evaluations=1,
                                 compile_seconds=0.0, solve_seconds=t, overhead_seconds=0.0,
                                 n_points=2, n_accepted_points=2, state_error=err,
                                 voltage_mae=err, kcl_max=0.0, qualified=err < 1e-6,
                                 scored_at=now))  # fmt: skip
        campaign_id = c.id
    with any_db.read() as s:
        rows, total = config_stats(session=s, campaign_id=campaign_id)
        kind, _ = config_stats(
            session=s, campaign_id=campaign_id, filters=Filters(kind="bus_fault")
        )
    assert total == 3 and [r.config for r in rows] == ["a", "fast", "slow"]
    for r in rows:
        assert r.median_runtime_s == pytest.approx(_quantile(times[r.config], 0.5))
        assert r.p95_runtime_s == pytest.approx(float(np.percentile(times[r.config], 95)))
    assert all(r.runs == 5 for r in kind)
    table = table_one(rows)
    assert table["subject_config"] == "a" and table["rows"][0]["config"] == "slow"
    assert table["rows"][0]["speedup"] == pytest.approx(
        np.median(times["slow"]) / np.median(times["a"])
    )
    front = {p["config"] for p in pareto_front(rows) if p["on_front"]}
    assert "a" in front and "slow" not in front
