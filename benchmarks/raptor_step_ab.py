"""RAPTOR step-control variants side by side in one process (issue: RAPTOR at the paper's cost,
item 6): each model-library case of ``benchmarks/raptor_library.py`` (and Robertson's kinetics
to t = 1e11 at atol = rtol / 100, sampled on a log grid from 1e-6 so every decade is checked,
errors against Radau at rtol 1e-12: max relative error, the same where rtol |x| >= atol, and
max |error| / (atol + rtol |x|)) solved with the default options and with each variant, warm
(one untimed solve per variant first), the timed solves interleaved ``--repeats`` times, CPU
clock; the minimum CPU of the repeats is reported with the ratio variant / default, and the
attempts per shape-parameter level (``a_max_levels``) so the level actually used shows.

A variant is a JSON object of RAPTOR options (and "_ceiling_expiry", which sets
``solvers.raptor.control.CEILING_EXPIRY``), e.g. the controller before item 6:

    python benchmarks/raptor_step_ab.py --variant '{"a_max_levels": [2.7777777777777777, 4, 6],
        "level_thresholds": [1000, 10000], "_ceiling_expiry": 1e300}'

or

    python benchmarks/raptor_step_ab.py --variant '{"a_max_levels": [2.78], "level_thresholds": []}'
                                        [--cases wscc9 emt_sm ...] [--robertson-rtols 1e-6 1e-8]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from benchmarks.common import print_table  # noqa: E402

LEVEL_LOG: list[int] = []
DEFAULT_EXPIRY: list[float] = []
"""``control.CEILING_EXPIRY`` as shipped; a variant key "_ceiling_expiry" replaces it for that
variant's solves (a solver constant, not an option)."""


def count_levels() -> None:
    """Record the bank index of every attempt (level = index // draws)."""
    from solvers.raptor import control, runner

    DEFAULT_EXPIRY.append(control.CEILING_EXPIRY)
    orig_init = runner._Compiled.__init__

    def init(self, *args, **kwargs):  # noqa: ANN001
        orig_init(self, *args, **kwargs)
        attempt = self.attempt

        def logged(*a):  # noqa: ANN002
            LEVEL_LOG.append(int(a[8]))
            return attempt(*a)

        self.attempt = logged

    runner._Compiled.__init__ = init


def timed(system, scenario, options: dict, draws: int) -> dict:  # noqa: ANN001
    from solvers import solve
    from solvers.raptor import control

    options = dict(options)
    control.CEILING_EXPIRY = options.pop("_ceiling_expiry", DEFAULT_EXPIRY[0])
    LEVEL_LOG.clear()
    start = time.process_time()
    result = solve(system, scenario, "raptor", **options)
    cpu = time.process_time() - start
    levels = collections.Counter(i // draws for i in LEVEL_LOG)
    s = result.stats
    return {
        "cpu": cpu,
        "accepted": s.accepted,
        "rejected": s.rejected,
        "levels": "/".join(str(levels.get(k, 0)) for k in range(max(levels, default=0) + 1)),
        "result": result,
    }


def compare(name: str, system, scenario, variants: list[dict], repeats: int, ref=None) -> list:  # noqa: ANN001
    draws = 8
    for options in variants:
        timed(system, scenario, options, options.get("draws", draws))
    best: dict[int, dict] = {}
    for _ in range(repeats):
        for k, options in enumerate(variants):
            row = timed(system, scenario, options, options.get("draws", draws))
            if k not in best or row["cpu"] < best[k]["cpu"]:
                best[k] = row
    rows = []
    for k, options in enumerate(variants):
        row = best[k]
        attempts = row["accepted"] + row["rejected"]
        out = {
            "case": name,
            "variant": k,
            "cpu_s": round(row["cpu"], 3),
            "cpu_ratio": round(row["cpu"] / best[0]["cpu"], 2),
            "accepted": row["accepted"],
            "rejected": row["rejected"],
            "rejected_share": round(row["rejected"] / max(attempts, 1), 3),
            "attempts_per_level": row["levels"],
        }
        if ref is not None:
            res, rtol, atol = row["result"], options["rtol"], options["atol"]
            diff = np.abs(res.x_eval - ref.x_eval)
            significant = np.abs(ref.x_eval) > 1e-20
            rel = np.where(significant, diff / np.maximum(np.abs(ref.x_eval), 1e-300), 0.0)
            out["max_rel_error"] = float(rel.max())
            relative_regime = rtol * np.abs(ref.x_eval) >= atol
            out["max_rel_error_rtol_regime"] = float(np.max(np.where(relative_regime, rel, 0.0)))
            out["max_err_over_tol"] = float(np.max(diff / (atol + rtol * np.abs(ref.x_eval))))
        rows.append(out)
    return rows


def main() -> None:
    from benchmarks.raptor_library import LARGE, scenario_for
    from models.library import build_system, network_names

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = [n for n in network_names() if n not in LARGE]
    parser.add_argument("--cases", nargs="*", default=default, choices=network_names())
    parser.add_argument("--variant", action="append", default=[], help="JSON options")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--robertson-rtols", nargs="*", type=float, default=[1e-6, 1e-8])
    args = parser.parse_args()
    variants = [json.loads(v) for v in args.variant]
    count_levels()
    rows = []
    for name in args.cases:
        system = build_system(name)
        scenario = scenario_for(name, system, False)
        rows += compare(name, system, scenario, [{}, *variants], args.repeats)
        print(f"{name} done, load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
    if args.robertson_rtols:
        from dae_examples import robertson

        from models.dae import Scenario
        from solvers import solve

        grid = np.concatenate([[0.0], np.logspace(-6, 11, 171)])  # every decade sampled
        system, scenario = robertson(), Scenario(t_end=1e11, t_eval=grid)
        ref = solve(system, scenario, "radau", rtol=1e-12, atol=1e-14)
        for rtol in args.robertson_rtols:
            tol = {"rtol": rtol, "atol": rtol / 100}
            radau = solve(system, scenario, "radau", **tol)
            rows += compare(
                f"robertson {rtol:g} (radau {radau.stats.accepted})",
                system,
                scenario,
                [tol, *({**tol, **v} for v in variants)],
                args.repeats,
                ref,
            )
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"variant 0 = defaults; {', '.join(f'{k + 1} = {v}' for k, v in enumerate(variants))}")
    print(f"CPU clock, min of {args.repeats} interleaved warm solves; load average {load}")
    print_table(rows, list(dict.fromkeys(k for row in rows for k in row)))


if __name__ == "__main__":
    main()
