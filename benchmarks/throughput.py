"""Campaign throughput on the embedded platform: per-run overhead, runs per second, services.

(Named ``throughput``, not ``platform``: a ``platform.py`` in this folder would shadow the
standard library's ``platform`` module for every script run from here: numpy fails to import.)

    python benchmarks/throughput.py [--networks wscc9 ieee39] [--runs 128] [--workers 1 2]
                                  [--batches 1 8 64] [--big ieee118:raptor:1000] [--json]

Sections (every one on this machine, with the load average printed beside it):

1. **Per-run phases** (``execute_run(..., phases=...)`` in this process, warm): median wall
   seconds of claim, build (inputs, system, scenario, first heartbeat), solve, lease check,
   Zarr write and SQL commit, scoring, and the process CPU per run, against the solve.
2. **Throughput**: real embedded workers (``raptorgrid.embedded``: Celery on the serverless
   SQLite broker, SQLite, local Zarr), started once per worker count with a warm compilation
   cache; one campaign per batch size, submitted to the running workers. Reported: submission
   to first result, active span (first start to last finish), runs/s in the span, and the
   1 -> 2 worker scaling efficiency (runs/s with 2 / (2 x runs/s with 1)).
3. **Services**: the broker's send and receive rates (messages/s), the database's write
   transactions per run and their time, the Zarr writes/s of one process; with the per-run
   worker time they give the worker count at which each saturates (docs/platform.md).
4. ``--big NET:METHOD:N``: one N-run campaign end to end with the workers started by it (the
   first-run latency of a cold or warm cluster, per ``--cold``), the share of compile and
   load seconds in the workers' CPU, and apart from it the share of building the network
   (pandapower's case, power flow, initialization) in each worker's prebuild.

Timings of the campaign sections are wall clock by nature (throughput); the phases are also
given as process CPU. ``--json`` prints one JSON document instead of the tables.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import load_average  # noqa: E402

DISTURBANCES = {
    "wscc9": {"kind": "load_step", "bus": "bus5", "t": 0.1, "scale": 1.1},
    "ieee39": {"kind": "load_step", "bus": "bus4", "t": 0.1, "scale": 1.1},
    "ieee118": {"kind": "bus_fault", "bus": "bus60", "t_fault": 0.1, "t_clear": 0.15},
}
OPTIONS = {"radau": {"rtol": 1e-4}, "raptor": {"rtol": 1e-6}, "trapezoid": {"dt": 1e-3}}
"""Each method's options in the throughput campaigns (``--method``); trapezoid batches are
solved together, vectorized across their runs (``workers.vectorized``)."""
PHASES = ("claim", "build", "solve", "lease", "write", "commit", "score")


def spec(network: str, runs: int, method: str = "radau", t_end: float = 0.3) -> dict:
    """``runs`` runs of one configuration: one disturbance, ``runs`` initial conditions."""
    options = OPTIONS.get(method, {})
    return {
        "name": f"throughput {network} {method} x{runs}",
        "network": network,
        "t_end": t_end,
        "n_eval": 31,
        "disturbances": [DISTURBANCES[network]],
        "initial_conditions": {"count": runs, "seed": 0, "spread": 0.5},
        "methods": [{"method": method, "options": options}],
    }


def settings_for(data_dir: Path, **overrides):
    from raptorgrid.settings import Settings

    cache = Path(os.environ.get("RAPTORGRID_JAX_CACHE_DIR", "~/.cache/raptorgrid/jax"))
    return Settings(data_dir=data_dir, jax_cache_dir=cache.expanduser(), **overrides)


def submit(settings, raw: dict) -> int:
    from raptorgrid.celery_app import create_celery
    from raptorgrid.db import Database
    from raptorgrid.spec import CampaignCreate
    from raptorgrid.submission import submit_campaign

    db = Database.from_settings(settings)
    try:
        parsed = CampaignCreate.model_validate(raw)
        return submit_campaign(
            db=db, celery=create_celery(settings), settings=settings, spec=parsed, raw_spec=raw
        ).campaign_id
    finally:
        db.dispose()


def phases(network: str, runs: int, batched: bool = False, method: str = "radau") -> dict:
    """Section 1: per-run phase medians (first run, which builds and compiles, excluded);
    ``batched``: the runs as one batch message (``execute_batch``: published together, the
    lease check, Zarr write and SQL commit shared by the block)."""
    from raptorgrid import migrate

    from workers.jaxsetup import configure_jax, freeze_startup_heap
    from workers.runner import WorkerContext, execute_batch, execute_run

    with tempfile.TemporaryDirectory() as tmp:
        settings = settings_for(Path(tmp))
        configure_jax(settings.jax_cache_dir)
        migrate.upgrade(settings)
        campaign_id = submit(settings, spec(network, runs + 1, method))
        from raptorgrid.db import Database

        ctx = WorkerContext(settings=settings, db=Database.from_settings(settings))
        ids = _run_ids(settings, campaign_id)
        execute_run(ids[0], worker="bench", ctx=ctx)
        freeze_startup_heap()  # as a worker does after its prebuild
        samples: list[dict[str, float]] = []
        start, wall = time.process_time(), time.perf_counter()
        if batched:
            execute_batch(ids[1:], worker="bench", ctx=ctx, phases=samples)
        else:
            for run_id in ids[1:]:
                record: dict[str, float] = {}
                execute_run(run_id, worker="bench", ctx=ctx, phases=record)
                samples.append(record)
        cpu = (time.process_time() - start) / len(samples)
        wall = (time.perf_counter() - wall) / len(samples)
        ctx.db.dispose()
    med = {p: statistics.median(s.get(p, 0.0) for s in samples) for p in PHASES}
    overhead = sum(v for k, v in med.items() if k != "solve")
    return {
        "network": network,
        "mode": "batched" if batched else "one by one",
        "runs": len(samples),
        "median_s": med,
        "overhead_s": overhead,
        "overhead_over_solve": overhead / med["solve"],
        "cpu_per_run_s": cpu,
        "wall_per_run_s": wall,
        # everything a run costs besides its method call, phases or not (lease renewals,
        # building the dataset, logging): mean wall per run minus mean solve
        "overhead_all_s": wall - statistics.fmean(s.get("solve", 0.0) for s in samples),
        "sql_s": med["claim"] + med["lease"] + med["commit"],
        "claim_zarr_sql_s": med["claim"] + med["lease"] + med["write"] + med["commit"],
        "load": load_average(),
    }


def _run_ids(settings, campaign_id: int) -> list[int]:
    from raptorgrid.db import Database
    from raptorgrid.tables import Run
    from sqlalchemy import select

    db = Database.from_settings(settings)
    try:
        with db.read() as session:
            return list(
                session.scalars(
                    select(Run.id).where(Run.campaign_id == campaign_id).order_by(Run.id)
                )
            )
    finally:
        db.dispose()


def _timeline(settings, campaign_id: int) -> dict:
    from raptorgrid.db import Database
    from raptorgrid.tables import Campaign, Run, RunMetrics
    from sqlalchemy import func, select

    db = Database.from_settings(settings)
    try:
        with db.read() as session:
            created = session.get(Campaign, campaign_id).created_at
            first_start, first_end, last_end = session.execute(
                select(
                    func.min(Run.started_at), func.min(Run.finished_at), func.max(Run.finished_at)
                ).where(Run.campaign_id == campaign_id)
            ).one()
            compile_s, load_s, solve_s, n_ok = session.execute(
                select(
                    func.sum(RunMetrics.compile_seconds),
                    func.sum(RunMetrics.load_seconds),
                    func.sum(RunMetrics.solve_seconds),
                    func.count(),
                )
                .join(Run, Run.id == RunMetrics.run_id)
                .where(Run.campaign_id == campaign_id, Run.status == "succeeded")
            ).one()
    finally:
        db.dispose()
    span = (last_end - first_start).total_seconds()
    return {
        "submitted_to_first_result_s": (first_end - created).total_seconds(),
        "active_span_s": span,
        "succeeded": int(n_ok),
        "runs_per_s": n_ok / span if span > 0 else float("nan"),
        "compile_s": float(compile_s or 0.0),
        "load_s": float(load_s or 0.0),
        "solve_s": float(solve_s or 0.0),
    }


def _wait(settings, campaign_id: int, pool, timeout: float = 3600.0) -> None:
    from raptorgrid.celery_app import create_celery
    from raptorgrid.db import Database
    from raptorgrid.embedded import wait_for_campaign

    db = Database.from_settings(settings)
    try:
        wait_for_campaign(
            db=db,
            celery=create_celery(settings),
            settings=settings,
            campaign_id=campaign_id,
            workers=pool,
        )
    finally:
        db.dispose()


def _wait_ready(pool, timeout: float = 300.0) -> float:
    """Seconds until every worker's pool process has prebuilt (its log says so)."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        logs = [w.log_path.read_text(errors="replace") for w in pool.workers]
        if all("prebuilt network" in text for text in logs):
            return time.perf_counter() - start
        time.sleep(0.2)
    raise TimeoutError("workers did not finish prebuilding:\n" + pool.tail_logs())


def throughput(
    network: str,
    runs: int,
    workers: int,
    batch_sizes: list[int],
    method: str = "radau",
    warmup: bool = False,
) -> list[dict]:
    """Section 2: one warm worker pool, one campaign per batch size (``warmup``: after one
    unmeasured campaign of the same size, so that what a batch compiles is compiled)."""
    from raptorgrid import migrate
    from raptorgrid.embedded import EmbeddedWorkers

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        settings = settings_for(
            Path(tmp), batch_min_tasks=1, batch_target_seconds=1e9, embedded_workers=workers
        )
        migrate.upgrade(settings)
        worker_settings = settings.model_copy(
            update={"prebuild_networks": [network], "prebuild_methods": [method]}
        )
        with EmbeddedWorkers(worker_settings, workers) as pool:
            ready = _wait_ready(pool)
            for size in batch_sizes:
                sized = settings.model_copy(update={"max_batch_size": size})
                if warmup:
                    _wait(sized, submit(sized, spec(network, runs, method)), pool)
                campaign_id = submit(sized, spec(network, runs, method))
                _wait(sized, campaign_id, pool)
                row = _timeline(sized, campaign_id)
                row.update(
                    network=network,
                    workers=workers,
                    batch=size,
                    workers_ready_s=ready,
                    load=load_average(),
                )
                rows.append(row)
    return rows


def services(phase_rows: list[dict], n_messages: int = 500) -> dict:
    """Section 3: broker and Zarr rates measured here; the database's per-run write time from
    the phases; each service's saturation worker count."""
    from raptorgrid.celery_app import create_celery
    from raptorgrid.queueing import enqueue_runs
    from raptorgrid.zarr_store import run_arrays, write_block, write_run

    out: dict = {"load": load_average()}
    with tempfile.TemporaryDirectory() as tmp:
        settings = settings_for(Path(tmp))
        celery = create_celery(settings)
        start = time.perf_counter()
        enqueue_runs(celery, range(n_messages), queue=settings.queue)
        send = time.perf_counter() - start
        start = time.perf_counter()
        received = 0
        with celery.connection_for_read() as conn:
            queue = conn.SimpleQueue(settings.queue)
            while received < n_messages:
                queue.get(timeout=10).ack()
                received += 1
            queue.close()
        recv = time.perf_counter() - start
        out["broker_send_per_s"] = n_messages / send
        out["broker_receive_per_s"] = n_messages / recv
        result = _example_result()
        dataset = run_arrays(result, {"run_id": 1})
        write_run(Path(tmp), 1, 0, dataset)
        start = time.perf_counter()
        for i in range(1, 41):
            write_run(Path(tmp), 1, i, dataset)
        out["zarr_writes_per_s"] = 40 / (time.perf_counter() - start)
        start = time.perf_counter()
        for k in range(5):
            write_block(Path(tmp), 2, [(100 * k + i, dataset) for i in range(32)])
        out["zarr_block_run_writes_per_s"] = 5 * 32 / (time.perf_counter() - start)
    model = []
    for row in phase_rows:
        per_run = sum(row["median_s"].values())
        sql = row["sql_s"]
        broker = 1.0 / out["broker_receive_per_s"] + 1.0 / out["broker_send_per_s"]
        model.append(
            {
                "network": f"{row['network']} ({row['mode']})",
                "worker_seconds_per_run": per_run,
                "database_seconds_per_run": sql,
                "workers_to_saturate_database": per_run / sql,
                "workers_to_saturate_broker_unbatched": per_run / broker,
            }
        )
    out["model"] = model
    return out


def _example_result():
    from models.disturbances import LoadStep
    from models.library import build_system
    from models.scenarios import make_scenario
    from solvers import solve

    system = build_system("wscc9")
    scenario = make_scenario(system, LoadStep(bus="bus5"), t_end=0.3, n_eval=31)
    return solve(system, scenario, "radau", rtol=1e-4)


def big(target: str, workers: int, cold: bool) -> dict:
    """Section 4: one N-run campaign on workers it starts itself."""
    from raptorgrid import migrate
    from raptorgrid.embedded import EmbeddedWorkers

    network, method, runs = target.split(":")
    with tempfile.TemporaryDirectory() as tmp:
        overrides = {"jax_cache_dir": Path(tmp) / "cold-cache"} if cold else {}
        settings = settings_for(Path(tmp), embedded_workers=workers)
        settings = settings.model_copy(update=overrides)
        migrate.upgrade(settings)
        worker_settings = settings.model_copy(
            update={"prebuild_networks": [network], "prebuild_methods": [method]}
        )
        os.environ["RAPTORGRID_JAX_CACHE_DIR"] = str(settings.jax_cache_dir)
        start = time.perf_counter()
        cpu_before = _children_cpu()
        with EmbeddedWorkers(worker_settings, workers) as pool:
            campaign_id = submit(settings, spec(network, int(runs), method, t_end=1.0))
            _wait(settings, campaign_id, pool)
            end_to_end = time.perf_counter() - start
            prebuild = _prebuild_seconds(pool)
        row = _timeline(settings, campaign_id)
    worker_cpu = _children_cpu() - cpu_before
    row.update(
        network=network,
        method=method,
        runs=int(runs),
        workers=workers,
        cold_cache=cold,
        end_to_end_s=end_to_end,
        prebuild_s=[p["total"] for p in prebuild],
        prebuild_build_s=[p["build"] for p in prebuild],
        prebuild_compile_s=[p["compile"] for p in prebuild],
        worker_cpu_s=worker_cpu,
        # compiling and loading executables, in the runs and in the prebuild (wall seconds, an
        # upper bound on their CPU), over the workers' CPU; building the network (pandapower's
        # case, power flow, initialization) is reported apart as the build share
        compile_share=(row["compile_s"] + row["load_s"] + sum(p["compile"] for p in prebuild))
        / worker_cpu
        if worker_cpu > 0
        else float("nan"),
        build_share=sum(p["build"] for p in prebuild) / worker_cpu
        if worker_cpu > 0
        else float("nan"),
        load=load_average(),
    )
    return row


def _children_cpu() -> float:
    usage = os.times()
    return usage.children_user + usage.children_system


def _prebuild_seconds(pool) -> list[dict[str, float]]:
    """Each worker's prebuild (``workers.jaxsetup.prebuild``'s log line): total, network build,
    compile and load, wall seconds."""
    import re

    line = re.compile(
        r"prebuilt network .* in ([0-9.]+) s \(network build ([0-9.]+) s, "
        r"compile and load ([0-9.]+) s\)"
    )
    out = []
    for w in pool.workers:
        for match in line.finditer(w.log_path.read_text()):
            total, build, compiled = (float(v) for v in match.groups())
            out.append({"total": total, "build": build, "compile": compiled})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--networks", nargs="+", default=["wscc9", "ieee39"])
    parser.add_argument("--runs", type=int, default=128, help="runs per throughput campaign")
    parser.add_argument("--phase-runs", type=int, default=40)
    parser.add_argument("--workers", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 8, 64])
    parser.add_argument("--big", default=None, help="NET:METHOD:N, e.g. ieee118:raptor:1000")
    parser.add_argument("--cold", action="store_true", help="--big with an empty cache")
    parser.add_argument("--skip", nargs="*", default=[], choices=["phases", "throughput"])
    parser.add_argument("--method", default="radau", choices=sorted(OPTIONS))
    parser.add_argument(
        "--warmup", action="store_true", help="one unmeasured campaign before each measured one"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report: dict = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "cpus": os.cpu_count(),
        "method": args.method,
    }
    if "phases" not in args.skip:
        report["phases"] = [
            phases(n, args.phase_runs, batched, args.method)
            for n in args.networks
            for batched in (False, True)
        ]
        report["services"] = services(report["phases"])
    if "throughput" not in args.skip:
        rows = []
        for network in args.networks:
            for count in args.workers:
                rows.extend(
                    throughput(network, args.runs, count, args.batches, args.method, args.warmup)
                )
        report["throughput"] = rows
        report["scaling"] = _scaling(rows)
    if args.big:
        report["big"] = big(args.big, max(args.workers), args.cold)
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        _print(report)


def _scaling(rows: list[dict]) -> list[dict]:
    out = []
    by_key = {(r["network"], r["batch"], r["workers"]): r["runs_per_s"] for r in rows}
    for (network, batch, workers), rate in by_key.items():
        if workers == 1 and (network, batch, 2) in by_key:
            two = by_key[network, batch, 2]
            out.append({"network": network, "batch": batch, "efficiency_1_to_2": two / (2 * rate)})
    return out


def _print(report: dict) -> None:
    if "phases" in report:
        print(f"\nPer-run phases, median wall ms ({report['phases'][0]['load']})")
        print(
            f"{'network':8} {'mode':10} "
            + " ".join(f"{p:>7}" for p in PHASES)
            + "  claim+zarr+sql  overhead/solve  cpu/run  all overhead"
        )
        for row in report["phases"]:
            med = row["median_s"]
            cells = " ".join(f"{1e3 * med[p]:7.1f}" for p in PHASES)
            print(
                f"{row['network']:8} {row['mode']:10} {cells}  "
                f"{1e3 * row['claim_zarr_sql_s']:11.1f} ms  {row['overhead_over_solve']:14.2f}"
                f"  {1e3 * row['cpu_per_run_s']:6.1f} ms  {1e3 * row['overhead_all_s']:8.1f} ms"
            )
        svc = report["services"]
        print(f"\nServices ({svc['load']})")
        print(
            f"broker send {svc['broker_send_per_s']:.0f}/s, receive "
            f"{svc['broker_receive_per_s']:.0f}/s; Zarr writes {svc['zarr_writes_per_s']:.0f}/s"
            f" per process one by one, {svc['zarr_block_run_writes_per_s']:.0f} runs/s in blocks"
            " of 32"
        )
        for m in svc["model"]:
            print(
                f"{m['network']:21} worker s/run {m['worker_seconds_per_run']:.4f}, database "
                f"s/run {m['database_seconds_per_run']:.4f}: database saturates at "
                f"{m['workers_to_saturate_database']:.0f} workers, broker (unbatched) at "
                f"{m['workers_to_saturate_broker_unbatched']:.0f}"
            )
    if "throughput" in report:
        print(f"\nThroughput ({report['throughput'][-1]['load']})")
        print(
            f"{'network':8} {'workers':>7} {'batch':>5} {'first result s':>14} "
            f"{'span s':>7} {'runs/s':>7}"
        )
        for r in report["throughput"]:
            print(
                f"{r['network']:8} {r['workers']:7d} {r['batch']:5d} "
                f"{r['submitted_to_first_result_s']:14.2f} {r['active_span_s']:7.2f} "
                f"{r['runs_per_s']:7.1f}"
            )
        for s in report["scaling"]:
            print(
                f"{s['network']:8} batch {s['batch']:3d}: 1 -> 2 workers "
                f"efficiency {100 * s['efficiency_1_to_2']:.0f} %"
            )
    if "big" in report:
        b = report["big"]
        print(
            f"\nCampaign {b['network']} {b['method']} x{b['runs']} on {b['workers']} workers "
            f"({'cold' if b['cold_cache'] else 'warm'} cache; {b['load']})"
        )
        print(
            f"end to end {b['end_to_end_s']:.1f} s, first result "
            f"{b['submitted_to_first_result_s']:.1f} s after submission, span "
            f"{b['active_span_s']:.1f} s, {b['runs_per_s']:.2f} runs/s; prebuild "
            f"{b['prebuild_s']} s (network build {b['prebuild_build_s']} s, compile and load "
            f"{b['prebuild_compile_s']} s); compile+load in runs "
            f"{b['compile_s'] + b['load_s']:.2f} s; worker CPU {b['worker_cpu_s']:.1f} s; "
            f"compile share {100 * b['compile_share']:.1f} %, network build share "
            f"{100 * b['build_share']:.1f} %"
        )


if __name__ == "__main__":
    main()
