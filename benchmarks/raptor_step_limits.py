"""Which limit binds RAPTOR's interval growth (issue: RAPTOR at the paper's cost, item 6).

Robertson's kinetics (``tests/dae_examples.robertson``) to t = 1e11, atol = rtol / 100, or a
model-library case: every attempt is logged (t, h, level from h * rho, chord iterations and
contraction rate, error indicator, accepted or why rejected) and, for each accepted interval, the
controller's proposal is decomposed into the limits that could have bound it: the PI proposal
itself (accuracy), the growth cap fac_max, the no-growth-after-rejection rule, the chord-failure
ceiling, the runner's factorization-keeping hysteresis (H_KEEP), the segment end (STRETCH) and
max_interval. Counts per binding limit, and a per-decade summary of t, are printed. Nothing in
the solver is changed: the controller's and the runner's functions are wrapped in this process.

    python benchmarks/raptor_step_limits.py [--rtol 1e-8] [--case robertson|NAME] [--dump F]
                                            [--options '{"a_max_levels": [2.78]}']
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


def instrument() -> tuple[list, list]:
    """Wrap the controller and the compiled attempt; returns (attempt log, decision log)."""
    from solvers.raptor import control, runner

    attempts: list[dict] = []
    decisions: list[dict] = []
    pi = control.PIController
    orig_accepted, orig_rejected = pi.accepted, pi.rejected

    def accepted(self, h, err):  # noqa: ANN001
        e = max(err, 1e-10)
        prev = e if self.err_prev is None else self.err_prev
        s = self._scale
        fac_pi = self.safety * e ** (-self.k_i * s) * prev ** (self.k_p * s)
        just_rejected = self.just_rejected
        ceiling = self.h_ceiling
        k_eff = self.k_eff
        h_new = orig_accepted(self, h, err)
        fac_cap = min(self.fac_max, max(self.fac_min, fac_pi))
        candidates = {"pi": h * fac_pi}
        if fac_pi > self.fac_max:
            candidates["fac_max"] = h * self.fac_max
        if fac_pi < self.fac_min:
            candidates["fac_min"] = h * self.fac_min
        if just_rejected and fac_cap > 1.0:
            candidates["after_rejection"] = h
        ceil_bound = max(h, control.CEILING_SAFETY * ceiling)
        if ceil_bound < min(h * fac_cap, h if just_rejected and fac_cap > 1 else np.inf):
            candidates["ceiling"] = ceil_bound
        binding = min(candidates, key=lambda k: (candidates[k], k != "pi"))
        decisions.append(
            {
                "h": h,
                "err": err,
                "fac_pi": fac_pi,
                "k_eff": k_eff,
                "ceiling": ceiling,
                "h_new": h_new,
                "binding": binding,
            }
        )
        return h_new

    def rejected(self, h, err):  # noqa: ANN001
        return orig_rejected(self, h, err)

    pi.accepted, pi.rejected = accepted, rejected

    orig_init = runner._Compiled.__init__

    def init(self, *args, **kwargs):  # noqa: ANN001
        orig_init(self, *args, **kwargs)
        attempt = self.attempt

        def logged(*a):  # noqa: ANN002
            raw = attempt(*a)
            attempts.append(
                {
                    "h": float(a[3]),
                    "idx": int(a[8]),
                    "mu": float(a[10]),
                    "refactor": int(a[16]),
                    "x0": np.asarray(a[0]).tolist(),
                    "status": int(raw["status"]),
                    "it": int(raw["newton_iterations"]),
                    "rate": float(raw["rate_max"]),
                    "err": float(raw["err"]),
                    "g_end": float(raw["g_end"]),
                }
            )
            return raw

        self.attempt = logged

    runner._Compiled.__init__ = init
    return attempts, decisions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rtol", type=float, default=1e-8)
    parser.add_argument("--case", default="robertson")
    parser.add_argument("--dump", default=None, help="write the per-attempt log as JSON here")
    parser.add_argument("--options", default="{}", help="extra RAPTOR options as JSON")
    args = parser.parse_args()
    attempts, decisions = instrument()

    from models.dae import Scenario
    from solvers import solve

    if args.case == "robertson":
        from dae_examples import robertson

        system, scenario = robertson(), Scenario(t_end=1e11)
        kw = {"rtol": args.rtol, "atol": args.rtol / 100}
    else:
        from benchmarks.raptor_library import scenario_for
        from models.library import build_system

        system = build_system(args.case)
        scenario = scenario_for(args.case, system, False)
        kw = {"rtol": args.rtol}
    kw.update(json.loads(args.options))
    solve(system, scenario, "raptor", **kw)
    attempts.clear()
    decisions.clear()
    start = time.process_time()
    result = solve(system, scenario, "raptor", **kw)
    cpu = time.process_time() - start
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    s = result.stats
    print(
        f"{args.case} rtol {args.rtol:g}: {s.accepted} + {s.rejected}, CPU {cpu:.3f} s, load {load}"
    )
    counts = collections.Counter(d["binding"] for d in decisions)
    print("binding limit of accepted intervals' proposals:", dict(counts.most_common()))
    errs = np.array([d["err"] for d in decisions])
    print(
        "accepted err quantiles (10/50/90 %):",
        np.round(np.quantile(errs, [0.1, 0.5, 0.9]), 3).tolist(),
        " fac_pi median",
        round(float(np.median([d["fac_pi"] for d in decisions])), 3),
    )
    its = collections.Counter(a["it"] for a in attempts)
    print("chord iterations per attempt:", dict(sorted(its.items())))
    statuses = collections.Counter(
        "chord_fail" if a["status"] != 1 else ("err>1" if a["err"] > 1 else "ok") for a in attempts
    )
    print("attempt outcomes:", dict(statuses))
    if args.dump:
        Path(args.dump).write_text(json.dumps({"attempts": attempts, "decisions": decisions}))


if __name__ == "__main__":
    main()
