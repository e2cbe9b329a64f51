"""Every case of the model library through the platform: a 1 s disturbance, Radau against a
tight reference (issue: model library, done criterion).

For each case this writes a one-scenario campaign spec (the fault of ``disturbance_for``: a
three-phase fault at the load bus with the largest constant-impedance load, 0.1-0.183 s; the
cascaded line, which has no machines, a 50 % load step; the EMT machine its source switch-off
at 0.05 s), runs it with
``raptorgrid run`` on the embedded platform (SQLite, local Zarr, a real Celery worker; a
scratch data directory per case) with Radau at rtol 1e-6 / atol 1e-8 and a reference run (Radau
at rtol 1e-10 / atol 1e-12 by default), and reads the scored results back from the campaign's
database: sizes, the run's status, runtime, accepted steps, and its error against the reference.
Qualification: normalized state error <= 1e-5, bus-voltage MAE <= 1e-5 pu, KCL <= 1e-6 pu.

    python benchmarks/model_library.py [--cases wscc9 ieee14 ...] [--reference radau|kvaerno5]
                                       [--json]

The dq networks and the EMT inverter (``dq_*``, ``emt_gfl``) have their own benchmark with
their own disturbances and baselines: ``benchmarks/dq_networks.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import dump, print_table  # noqa: E402
from models.library import NETWORKS, build_system  # noqa: E402

T_END = 1.0
RADAU = {"rtol": 1e-6, "atol": 1e-8}
REFERENCES = {
    "radau": {"method": "radau", "options": {"rtol": 1e-10, "atol": 1e-12}},
    "kvaerno5": {"method": "kvaerno5", "options": {"rtol": 1e-10, "atol": 1e-12}},
}
THRESHOLDS = {"state_error": 1e-5, "voltage_mae": 1e-5, "kcl_max": 1e-6}


def disturbance_for(system) -> dict:  # noqa: ANN001
    """A fault at the load bus with the largest constant-impedance load (load step when the
    system has no generators to disturb with a fault, the cascaded line)."""
    loads = system.names.get("load", ())
    heaviest = loads[int(np.argmax(np.asarray(system.params["load_g"])))]
    if "source" in system.names and "generator" in system.names:  # the EMT machine: islanding
        return {"kind": "source_switch", "source": system.names["source"][0], "t": 0.05}
    if "generator" not in system.names:
        return {"kind": "load_step", "bus": heaviest, "t": 0.1, "scale": 1.5}
    return {"kind": "bus_fault", "bus": heaviest, "t_fault": 0.1, "t_clear": 0.183, "x": 0.01}


def _label(disturbance: dict) -> str:
    element = disturbance.get("bus") or disturbance.get("source")
    return f"{disturbance['kind']}:{element}"


def spec_for(case: str, system, reference: str) -> dict:  # noqa: ANN001
    return {
        "name": f"model library: {case}, 1 s, Radau vs {reference} reference",
        "network": case,
        "t_end": T_END,
        "n_eval": 201,
        "disturbances": [disturbance_for(system)],
        "methods": [{"method": "radau", "options": RADAU}],
        "reference": REFERENCES[reference],
        "thresholds": THRESHOLDS,
    }


def run_case(case: str, reference: str, workdir: Path, jax_cache_dir: Path | None = None) -> dict:
    """Run ``case``'s campaign in ``workdir``; ``jax_cache_dir``: the executable store to
    share (the tests pass theirs, so structures compiled by other tests are loaded, not
    compiled again), else the data directory's own."""
    system = build_system(case)
    spec = spec_for(case, system, reference)
    data_dir = workdir / case
    data_dir.mkdir(parents=True, exist_ok=True)
    spec_path = data_dir / "spec.json"
    spec_path.write_text(json.dumps(spec, indent=1))
    env = dict(os.environ, RAPTORGRID_DATA_DIR=str(data_dir))
    for var in ("RAPTORGRID_DATABASE_URL", "RAPTORGRID_BROKER_URL"):
        env.pop(var, None)
    if jax_cache_dir is not None:
        env["RAPTORGRID_JAX_CACHE_DIR"] = str(jax_cache_dir)
    start = time.perf_counter()
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "raptorgrid"), "run", str(spec_path), "--workers", "1"],
        env=env, cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    wall = time.perf_counter() - start
    row = {
        "case": case,
        "n_x": system.n_x,
        "n_z": system.n_z,
        "disturbance": _label(spec["disturbances"][0]),
        "platform_wall_s": round(wall, 1),
    }
    if proc.returncode != 0:
        return {**row, "status": f"campaign failed (exit {proc.returncode})",
                "detail": proc.stdout[-400:] + proc.stderr[-400:]}  # fmt: skip
    return {**row, **_results(data_dir)}


def _results(data_dir: Path) -> dict:
    """The scored Radau run and the reference run, read from the campaign's database."""
    from raptorgrid.db import Database
    from raptorgrid.repository.stats import Filters, config_stats
    from raptorgrid.settings import Settings

    db = Database.from_settings(Settings(data_dir=data_dir, database_url=""))
    try:
        with db.read() as session:  # a fresh data directory: its one campaign has id 1
            configs, _ = config_stats(
                session=session, campaign_id=1, filters=Filters(include_reference=True)
            )
    finally:
        db.dispose()
    radau = next(c for c in configs if not c.is_reference)
    ref = next(c for c in configs if c.is_reference)
    return {
        "status": "succeeded" if radau.succeeded == radau.runs else "failed",
        "radau_runtime_s": radau.median_runtime_s,
        "radau_steps": radau.mean_accepted,
        "reference_runtime_s": ref.median_runtime_s,
        "reference_status": "succeeded" if ref.succeeded == ref.runs else "failed",
        "state_error": radau.max_state_error,
        "voltage_mae": radau.max_voltage_mae,
        "kcl_max": radau.max_kcl,
        "qualified": radau.qualified,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    rms_and_emt_sm = [n for n in NETWORKS if not n.startswith("dq_") and n != "emt_gfl"]
    parser.add_argument("--cases", nargs="+", default=rms_and_emt_sm, choices=list(NETWORKS))
    parser.add_argument("--reference", default="radau", choices=list(REFERENCES))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="raptorgrid-models-") as tmp:
        for case in args.cases:
            rows.append(run_case(case, args.reference, Path(tmp)))
            if not args.json:
                print(f"{case}: {rows[-1].get('status')}", flush=True)
    if args.json:
        print(dump("model_library", rows, []))
        return
    columns = ["case", "n_x", "n_z", "disturbance", "status", "radau_runtime_s", "radau_steps",
               "reference_status", "reference_runtime_s", "state_error", "voltage_mae",
               "kcl_max", "qualified", "platform_wall_s"]  # fmt: skip
    print_table(rows, columns)
    for r in rows:
        if "detail" in r:
            print(f"\n{r['case']}: {r['detail']}")


if __name__ == "__main__":
    main()
