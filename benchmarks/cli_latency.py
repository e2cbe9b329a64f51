"""Start-up latency of ``raptorgrid run`` on the embedded default (issue: CLI start to first
run within 5 s with a warm cache).

Runs the CLI ``--repeat`` times on the throughput benchmark's small campaign
(``benchmarks.throughput.spec``: wscc9, Radau rtol 1e-4, t_end 0.3 s) in a fresh data
directory (the first repeat fills the executable store: the cold row; the others are warm)
and reads from the campaign's SQL rows, relative to the command's
start (wall clock: this is a latency, not a speed ratio): campaign stored, first run started,
first result committed, last result, and the command's exit.

    .venv/bin/python benchmarks/cli_latency.py --runs 60 --workers 2 --repeat 3 [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import load_average  # noqa: E402
from benchmarks.throughput import spec  # noqa: E402

CLI = Path(sys.executable).with_name("raptorgrid")
"""The console script installed beside this interpreter (what a user types)."""


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def one(data_dir: Path, spec_path: Path, workers: int) -> dict:
    database = data_dir / "raptorgrid.sqlite"
    for path in data_dir.glob("raptorgrid.sqlite*"):  # a fresh campaign database each time
        path.unlink()
    env = {**os.environ, "RAPTORGRID_DATA_DIR": str(data_dir)}
    start = time.time()
    done = subprocess.run(
        [str(CLI), "run", str(spec_path), "--workers", str(workers)],
        env=env,
        capture_output=True,
        text=True,
    )
    end = time.time()
    if done.returncode != 0:
        raise RuntimeError(f"raptorgrid run failed:\n{done.stdout}\n{done.stderr}")
    with sqlite3.connect(database) as db:
        (stored,) = db.execute("select min(created_at) from campaigns").fetchone()
        first_start, first_end, last_end = db.execute(
            "select min(started_at), min(finished_at), max(finished_at) from runs"
        ).fetchone()
    return {
        "stored_s": _epoch(stored) - start,
        "first_run_started_s": _epoch(first_start) - start,
        "first_result_s": _epoch(first_end) - start,
        "last_result_s": _epoch(last_end) - start,
        "exit_s": end - start,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        spec_path = Path(tmp) / "spec.json"
        spec_path.write_text(json.dumps(spec("wscc9", args.runs)))
        data_dir = Path(tmp) / "data"
        for k in range(args.repeat):
            row = {"cache": "cold" if k == 0 else "warm", **one(data_dir, spec_path, args.workers)}
            row["load"] = load_average()
            rows.append(row)
            if not args.json:
                print(
                    f"{row['cache']:5} stored {row['stored_s']:5.1f} s  first run started "
                    f"{row['first_run_started_s']:5.1f} s  first result "
                    f"{row['first_result_s']:5.1f} s  last result {row['last_result_s']:5.1f} s"
                    f"  exit {row['exit_s']:5.1f} s"
                    f"  ({row['load']})"
                )
    if args.json:
        print(json.dumps({"benchmark": "cli_latency", "runs": args.runs,
                          "workers": args.workers, "rows": rows}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
