"""Response time of the results endpoints on a PostgreSQL campaign of 100,000 runs.

Fills a scratch PostgreSQL database (created and dropped here) with one campaign: scenarios x
method configurations, every run with metrics, errors and a qualified flag, every scenario with
indicators (bulk inserts), then times each endpoint through the real FastAPI app and prints,
per endpoint (target: p95 < 100 ms):

* ``cold_ms`` / ``cold_max_ms``: median and worst of ``--cold`` requests each made right after
  bumping the campaign's ``stats_version`` (what any run change does), so the app's stats
  cache misses and the statistics are read from SQL again (``config_totals`` for the unfiltered
  views, aggregates over the runs for the filtered ones; PostgreSQL's own buffers stay warm);
* ``p50_ms`` / ``p95_ms``: ``--repeat`` requests after those, the campaign unchanged.

After the load the tables are ``VACUUM ANALYZE``d, as autovacuum leaves them during a campaign;
``--no-vacuum`` measures the state right after a bulk load instead (visibility map unset).

``--json`` prints the DESIGN §6 object.

    python -m benchmarks.stats_query [--runs 100000] [--repeat 30] [--cold 5] [--no-vacuum]
        [--json]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
from sqlalchemy import create_engine, insert, make_url, select, text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a file, too

from benchmarks.common import dump, print_table  # noqa: E402

ADMIN_URL = os.environ.get(
    "RAPTORGRID_BENCH_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
CONFIGS = (
    [("raptor", f"rtol={r}") for r in ("1e-4", "1e-6", "1e-8")]
    + [(m, f"rtol={r}") for m in ("radau", "bdf", "trapezoid") for r in ("1e-3", "1e-5", "1e-7")]
    + [("kvaerno5", "reference:rtol=1e-10")]
)
TARGET_MS = 100.0


def fill(db, n_runs: int, seed: int = 0) -> int:  # noqa: ANN001
    """One finished campaign of ~``n_runs`` runs (bulk inserts, then ``totals.rebuild``, as
    any bulk load that bypasses ``finish_run`` must); returns its id."""
    from raptorgrid.repository import totals
    from raptorgrid.tables import Campaign, Run, RunMetrics, ScenarioIndicators, ScenarioRow, utcnow

    rng = np.random.default_rng(seed)
    n_scen = max(1, n_runs // len(CONFIGS))
    now = utcnow()
    with db.write() as s:
        c = Campaign(name="bench", network="wscc9", spec={}, status="finished", t_end=1.0,
                     n_eval=201, n_scenarios=n_scen, n_runs=n_scen * len(CONFIGS),
                     n_succeeded=n_scen * len(CONFIGS), n_failed=0, n_cancelled=0,
                     created_at=now, finished_at=now)  # fmt: skip
        s.add(c)
        s.flush()
        cid = c.id
        kinds = ("bus_fault", "branch_trip", "load_step")
        s.execute(insert(ScenarioRow), [
            {"campaign_id": cid, "index": i, "disturbance": {"kind": kinds[i % 3]},
             "ic_seed": i, "ic_spread": 0.0, "label": f"{kinds[i % 3]}:e{i}#0"}
            for i in range(n_scen)])  # fmt: skip
        sids = list(s.scalars(select(ScenarioRow.id).where(ScenarioRow.campaign_id == cid)))
        runs = [
            {"campaign_id": cid, "scenario_id": sid, "method": m, "options": {},
             "config_label": cfg, "status": "failed" if rng.random() < 0.02 else "succeeded",
             "message": "", "attempts": 1, "created_at": now, "is_reference": m == "kvaerno5"}
            for sid in sids for m, cfg in CONFIGS
        ]  # fmt: skip
        n = len(runs)
        err = 10 ** rng.uniform(-9, -3, n)
        accepted, runtime = rng.integers(10, 2000, n), rng.lognormal(-2, 1, n)
        for run, t in zip(runs, runtime, strict=True):  # the copies finish_run writes
            run["metric_runtime_seconds"] = run["metric_solve_seconds"] = float(t)
        for k in range(0, len(runs), 20_000):
            s.execute(insert(Run), runs[k : k + 20_000])
        rids = list(s.scalars(select(Run.id).where(Run.campaign_id == cid).order_by(Run.id)))
        metrics = [
            {"run_id": r, "attempt": 1, "accepted": int(a), "rejected": int(a) // 10,
             "newton_iterations": 3 * int(a), "algebraic_iterations": 0,
             "jacobian_evaluations": 1, "lu_factorizations": 1, "rhs_evaluations": 10,
             "compile_seconds": 0.0, "solve_seconds": float(t), "runtime_seconds": float(t),
             "n_points": 201, "n_accepted_points": int(a), "final_time": 1.0,
             "state_error": float(e), "voltage_mae": float(e) / 10, "kcl_max": 1e-12,
             "qualified": bool(e < 1e-5), "scored_at": now}
            for r, a, t, e in zip(rids, accepted, runtime, err, strict=True)
        ]  # fmt: skip
        for k in range(0, n, 20_000):
            s.execute(insert(RunMetrics), metrics[k : k + 20_000])
        s.execute(insert(ScenarioIndicators), [
            {"scenario_id": sid, "campaign_id": cid, "run_id": 0, "from_reference": True,
             "max_angle_spread_deg": float(a), "frequency_nadir_hz": 59.9,
             "frequency_nadir_t": 0.3, "min_voltage_pu": 0.7, "min_voltage_t": 0.15,
             "voltage_recovery_t": 0.4, "stable": bool(a < 180), "criterion": "spread < 180",
             "severity": float(a) / 180 + 0.3}
            for sid, a in zip(sids, rng.uniform(10, 250, len(sids)), strict=True)])  # fmt: skip
        totals.rebuild(session=s, campaign_id=cid)
    return cid


def _timed(client, path: str) -> float:  # noqa: ANN001
    """One GET through the app, in ms (asserting a 200)."""
    t0 = time.perf_counter()
    response = client.get(path)
    elapsed = 1000 * (time.perf_counter() - t0)
    assert response.status_code == 200, (path, response.text)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--cold", type=int, default=5, help="cold requests per endpoint")
    parser.add_argument(
        "--no-vacuum",
        action="store_true",
        help="ANALYZE only after the bulk load: the visibility map is unset, so the index "
        "scans that read percentiles check the heap (before autovacuum has run)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from fastapi.testclient import TestClient
    from raptorgrid import migrate
    from raptorgrid.api import create_app
    from raptorgrid.db import Database
    from raptorgrid.settings import Settings

    name = f"raptorgrid_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        url = make_url(ADMIN_URL).set(database=name).render_as_string(hide_password=False)
        settings = Settings(data_dir=tempfile.mkdtemp(prefix="bench-"), database_url=url)
        migrate.upgrade(settings)
        db = Database.from_settings(settings)
        start = time.perf_counter()
        cid = fill(db, args.runs)
        fill_s = time.perf_counter() - start
        with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("ANALYZE" if args.no_vacuum else "VACUUM ANALYZE"))
            n = conn.execute(text("SELECT count(*) FROM runs")).scalar_one()
        endpoints = {
            "stats": f"/campaigns/{cid}/stats",
            "stats?kind=bus_fault": f"/campaigns/{cid}/stats?kind=bus_fault",
            "stats?method=raptor&status=succeeded": (
                f"/campaigns/{cid}/stats?method=raptor&status=succeeded"
            ),
            "table1": f"/campaigns/{cid}/stats/table1",
            "pareto": f"/campaigns/{cid}/stats/pareto",
            "ranking": f"/campaigns/{cid}/stats/ranking?limit=50",
            "ranking page 100": f"/campaigns/{cid}/stats/ranking?limit=50&offset=5000",
            "failures": f"/campaigns/{cid}/stats/failures?limit=50",
            "campaigns": "/campaigns",
        }
        bump = text("UPDATE campaigns SET stats_version = stats_version + 1 WHERE id = :cid")
        rows = []
        with TestClient(create_app(settings)) as client, db.engine.connect() as conn:
            assert client.get(f"/campaigns/{cid}/runs?limit=1").status_code == 200  # pool
            for label, path in endpoints.items():
                cold = []
                for _ in range(args.cold):  # as after any run changes: every entry a miss
                    conn.execute(bump, {"cid": cid})
                    conn.commit()
                    cold.append(_timed(client, path))
                times = [_timed(client, path) for _ in range(args.repeat)]
                p95 = float(np.percentile(times, 95))
                status = "ok" if p95 < TARGET_MS else "slow"
                rows.append({"system": "postgresql", "scenario": f"{n} runs",
                             "method": label, "config": {"repeat": args.repeat, "cold": args.cold},
                             "cold_ms": statistics.median(cold), "cold_max_ms": max(cold),
                             "p50_ms": statistics.median(times), "p95_ms": p95,
                             "target_ms": TARGET_MS, "status": status})  # fmt: skip
        db.dispose()
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    if args.json:
        print(dump("stats_query", rows, []))
    else:
        print(f"{n} runs inserted in {fill_s:.1f} s (bulk)")
        print_table(
            rows, ["method", "cold_ms", "cold_max_ms", "p50_ms", "p95_ms", "target_ms", "status"]
        )
    sys.exit(0)


if __name__ == "__main__":
    main()
