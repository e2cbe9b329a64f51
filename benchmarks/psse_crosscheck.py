"""Our trajectories on the PSS/E cases beside ANDES's references, per case, event and quantity:
the largest deviation against ANDES's 1 ms run and ANDES's own step-size spread (its 1/30 s run
against its 1 ms run), which is the tolerance of ``tests/test_psse_crosscheck.py``.

    python benchmarks/psse_crosscheck.py [--method radau] [--rtol 1e-8] [--json]

Quantities: rotor speed omega (pu), rotor angle relative to the first machine (rad), bus voltage
magnitude (pu); a tripped machine is left out (ANDES freezes it, raptorgrid lets it run
unloaded). References: ``tests/reference/andes`` (ANDES 2.0.0, regenerate with
``tests/reference/andes_references.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import load_average  # noqa: E402
from tests.psse_crosscheck import EVENTS, KINDS, deviations, metadata, spread  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", default="radau")
    parser.add_argument("--rtol", type=float, default=1e-8)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for case in sorted(metadata()["cases"]):
        for event in EVENTS:
            start = time.process_time()
            found = deviations(case, event, args.method, rtol=args.rtol, atol=args.rtol / 100)
            cpu = time.process_time() - start
            allowed = spread()[f"{case}_{event}"]
            rows.append({"case": case, "event": event, "cpu_s": cpu, "ours": found,
                         "andes_spread": allowed})  # fmt: skip
    if args.json:
        print(json.dumps({"method": args.method, "rtol": args.rtol, "load": load_average(),
                          "rows": rows}, indent=1))  # fmt: skip
        return
    print(f"{args.method} rtol {args.rtol:g} against ANDES 1 ms; {load_average()}")
    head = " | ".join(f"{k} ours / ANDES spread" for k in KINDS)
    print(f"| case | event | {head} | worst ratio |")
    print("|---|---|" + "---|" * (len(KINDS) + 1))
    for r in rows:
        cells = " | ".join(f"{r['ours'][k]:.1e} / {r['andes_spread'][k]:.1e}" for k in KINDS)
        worst = max(r["ours"][k] / r["andes_spread"][k] for k in KINDS)
        print(f"| {r['case']} | {r['event']} | {cells} | {worst:.2f} |")


if __name__ == "__main__":
    main()
