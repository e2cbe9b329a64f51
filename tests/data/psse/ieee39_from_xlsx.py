"""Write ``ieee39_full.raw``/``.dyr`` and ``ieee39_repaired.raw``/``.dyr`` from ANDES's IEEE
39-bus spreadsheet (``cases/ieee39/ieee39_full.xlsx`` of the ANDES distribution: data only, no
ANDES code is used), then read the files back and check every written value against the
spreadsheet (a repaired value against the repair rule).

    /tmp/andes-venv/bin/python tests/data/psse/ieee39_from_xlsx.py PATH/TO/ieee39_full.xlsx

(any Python with pandas and openpyxl). Conventions: ANDES's per-unit powers are on 100 MVA and
become MW / Mvar; angles become degrees; a line with ``trans = 1`` becomes a two-winding
transformer (CW = CZ = CM = 1: ratio at bus1 in pu, impedance in pu on the system base);
GENROU's M = 2H; the machine's source impedance ZSORCE is GENROU's (ra, xd2); TGOV1N rows become
TGOV1 records (same parameters; its Tn and wref0 are not PSS/E data). Left out: the BusFreq
measurements, the ACE controller and the (disabled) Toggler.

``ieee39_full``: the spreadsheet as it is, without its IEEEST stabilizers. Nine of its ten GENROU
machines have X''d = X''q below the leakage reactance Xl (e.g. 0.00792 pu against Xl 0.125),
which PSS/E's GENROU does not admit; raptorgrid refuses the pair (``tests/test_psse_dyr.py``).

``ieee39_repaired``: the same data with one documented repair, plus the IEEEST stabilizers.
Repair rule: a machine whose X''d (= X''q) is not above Xl gets X''d = X''q = (Xl + X'd) / 2,
the midpoint of the interval (Xl, X'd] that GENROU's ordering Xl < X''d <= X'q <= X'd admits
(here X'q = X'd for every machine); its ZSORCE becomes (ra, the new X''d). The midpoint makes
GENROU's two flux-weighting ratios (X''d - Xl)/(X'd - Xl) and (X'd - X''d)/(X'd - Xl) both 1/2,
far from the singular ends of the interval, and it is the textbook proportion (Kundur's example
machine: Xl 0.2, X'd 0.3, X''d 0.25); the one machine that already satisfies the ordering (bus 35,
X''d 0.46538, Xl 0.224, X'd 0.5) keeps its value. Every machine's ordering is checked. The
spreadsheet's IEEEST rows are PSS/E IEEEST records: MODE is PSS/E's input code IC (3,
electrical power: implemented, ``models.devices.base.STABILIZER_INPUTS``), busr empty (IB = 0),
A1 .. A6, T1 .. T6, KS, LSMAX, LSMIN, VCU, VCL in PSS/E's order; each attaches to the machine of
its IEEEX1 exciter (its BusFreq input is used only by code 2).
"""

from __future__ import annotations

import contextlib
import math
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
SBASE = 100.0


def fmt(value: float) -> str:
    return repr(float(value))


def repaired_xd2(m) -> float:
    """X''d (= X''q) of a GENROU row under the repair rule (module docstring)."""
    return float(m.xd2) if m.xd2 > m.xl else (float(m.xl) + float(m.xd1)) / 2.0


def write(xlsx: Path, repair: bool) -> dict[str, list[tuple[str, int, list[float]]]]:
    """Write one pair (``ieee39_repaired`` with ``repair``, else ``ieee39_full``); returns, per
    file, (record kind, key, values) as written."""
    stem = "ieee39_repaired" if repair else "ieee39_full"
    x = pd.read_excel(xlsx, sheet_name=None)
    bus, pq, pv, slack = x["Bus"], x["PQ"], x["PV"], x["Slack"]
    line, shunt, genrou = x["Line"], x["Shunt"], x["GENROU"]
    written: dict[str, list] = {"raw": [], "dyr": []}
    gens = pd.concat([pv.assign(kind=2), slack.assign(kind=3)], ignore_index=True)
    kind = {int(b): int(k) for b, k in zip(gens.bus, gens.kind, strict=True)}
    rows = [
        "0, 100.0, 33, 0, 1, 60.0 / written from ieee39_full.xlsx by ieee39_from_xlsx.py",
        "IEEE 39-BUS SYSTEM (ANDES ieee39_full.xlsx)",
        "GENROU (X''d repaired: (Xl + X'd)/2 where X''d <= Xl), IEEEX1, TGOV1, IEEEST"
        if repair
        else "GENROU, IEEEX1, TGOV1; IEEEST left out",
    ]
    for b in bus.itertuples():
        values = [b.Vn, b.v0, math.degrees(b.a0)]
        rows.append(
            f"{int(b.idx)}, '{b.name}', {fmt(b.Vn)}, {kind.get(int(b.idx), 1)}, "
            f"{int(b.area)}, {int(b.zone)}, 1, {fmt(b.v0)}, {fmt(math.degrees(b.a0))}"
        )
        written["raw"].append(("bus", int(b.idx), values))
    rows.append("0 / END OF BUS DATA, BEGIN LOAD DATA")
    for ld in pq.itertuples():
        rows.append(
            f"{int(ld.bus)}, '1', 1, 1, 1, {fmt(ld.p0 * SBASE)}, {fmt(ld.q0 * SBASE)}, "
            "0.0, 0.0, 0.0, 0.0, 1, 1"
        )
        written["raw"].append(("load", int(ld.bus), [ld.p0 * SBASE, ld.q0 * SBASE]))
    rows.append("0 / END OF LOAD DATA, BEGIN FIXED SHUNT DATA")
    for sh in shunt.itertuples():
        rows.append(f"{int(sh.bus)}, '1', 1, {fmt(sh.g * SBASE)}, {fmt(sh.b * SBASE)}")
        written["raw"].append(("shunt", int(sh.bus), [sh.g * SBASE, sh.b * SBASE]))
    rows.append("0 / END OF FIXED SHUNT DATA, BEGIN GENERATOR DATA")
    machine = {int(g.bus): g for g in genrou.itertuples()}
    xd2 = {int(m.bus): repaired_xd2(m) if repair else float(m.xd2) for m in genrou.itertuples()}
    for g in gens.itertuples():
        m = machine[int(g.bus)]
        if m.Sn != g.Sn:
            raise SystemExit(f"bus {g.bus}: GENROU Sn {m.Sn} != generator Sn {g.Sn}")
        values = [g.p0 * SBASE, g.q0 * SBASE, g.qmax * SBASE, g.qmin * SBASE, g.v0, g.Sn, m.ra,
                  xd2[int(g.bus)], g.pmax * SBASE, g.pmin * SBASE]  # fmt: skip
        v = [fmt(val) for val in values]
        rows.append(
            f"{int(g.bus)}, '1', {v[0]}, {v[1]}, {v[2]}, {v[3]}, {v[4]}, 0, {v[5]}, "
            f"{v[6]}, {v[7]}, 0.0, 0.0, 1.0, 1, 100.0, {v[8]}, {v[9]}"
        )
        written["raw"].append(("generator", int(g.bus), values))
    rows.append("0 / END OF GENERATOR DATA, BEGIN BRANCH DATA")
    circuits: dict[tuple[int, int], int] = {}
    for br in line[line.trans == 0].itertuples():
        key = (int(br.bus1), int(br.bus2))
        circuits[key] = circuits.get(key, 0) + 1
        rows.append(
            f"{key[0]}, {key[1]}, '{circuits[key]}', {fmt(br.r)}, {fmt(br.x)}, "
            f"{fmt(br.b)}, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1"
        )
        written["raw"].append(("branch", key[0] * 1000 + key[1], [br.r, br.x, br.b]))
    rows.append("0 / END OF BRANCH DATA, BEGIN TRANSFORMER DATA")
    for br in line[line.trans == 1].itertuples():
        rows += [
            f"{int(br.bus1)}, {int(br.bus2)}, 0, '1', 1, 1, 1, 0.0, 0.0, 2, ' ', 1",
            f"{fmt(br.r)}, {fmt(br.x)}, 100.0",
            f"{fmt(br.tap)}, 0.0, {fmt(math.degrees(br.phi))}, 0.0, 0.0, 0.0, 0, 0, 1.1, 0.9, "
            "1.1, 0.9, 33, 0, 0.0, 0.0",
            "1.0, 0.0",
        ]
        written["raw"].append(("transformer", int(br.bus1) * 1000 + int(br.bus2),
                               [br.r, br.x, br.tap, math.degrees(br.phi)]))  # fmt: skip
    rows.append("0 / END OF TRANSFORMER DATA, BEGIN AREA DATA")
    for a in x["Area"].itertuples():
        rows.append(f"{int(a.idx)}, 0, 0.0, 10.0, '{a.name}'")
    rows += ["0 / END OF AREA DATA, BEGIN TWO-TERMINAL DC DATA"] + [
        f"0 / END OF {s} DATA" for s in (
            "TWO-TERMINAL DC", "VSC DC LINE", "IMPEDANCE CORRECTION", "MULTI-TERMINAL DC",
            "MULTI-SECTION LINE")
    ]  # fmt: skip
    for z in sorted(set(int(v) for v in bus.zone)):
        rows.append(f"{z}, 'ZONE{z}'")
    rows += [
        f"0 / END OF {s} DATA"
        for s in (
            "ZONE",
            "INTER-AREA TRANSFER",
            "OWNER",
            "FACTS",
            "SWITCHED SHUNT",
            "GNE",
            "INDUCTION MACHINE",
        )
    ]
    rows.append("Q")
    (HERE / f"{stem}.raw").write_text("\n".join(rows) + "\n")

    dyr = []
    for m in genrou.itertuples():
        if m.xq2 != m.xd2:
            raise SystemExit(f"GENROU at bus {m.bus}: xq2 {m.xq2} != xd2 {m.xd2}")
        values = [m.Td10, m.Td20, m.Tq10, m.Tq20, m.M / 2, m.D, m.xd, m.xq, m.xd1, m.xq1,
                  xd2[int(m.bus)], m.xl, m.S10, m.S12]  # fmt: skip
        dyr.append(f"{int(m.bus)} 'GENROU' 1 " + " ".join(fmt(v) for v in values) + " /")
        written["dyr"].append(("GENROU", int(m.bus), values))
    bus_of = {m.idx: int(m.bus) for m in genrou.itertuples()}
    for e in x["IEEEX1"].itertuples():
        values = [e.TR, e.KA, e.TA, e.TB, e.TC, e.VRMAX, e.VRMIN, e.KE, e.TE, e.KF1, e.TF1, 0.0,
                  e.E1, e.SE1, e.E2, e.SE2]  # fmt: skip
        dyr.append(f"{bus_of[e.syn]} 'IEEEX1' 1 " + " ".join(fmt(v) for v in values) + " /")
        written["dyr"].append(("IEEEX1", bus_of[e.syn], values))
    for t in x["TGOV1N"].itertuples():
        values = [t.R, t.T1, t.VMAX, t.VMIN, t.T2, t.T3, t.Dt]
        dyr.append(f"{bus_of[t.syn]} 'TGOV1' 1 " + " ".join(fmt(v) for v in values) + " /")
        written["dyr"].append(("TGOV1", bus_of[t.syn], values))
    if repair:
        avr_bus = {e.idx: bus_of[e.syn] for e in x["IEEEX1"].itertuples()}
        for s in x["IEEEST"].itertuples():
            if int(s.MODE) not in (1, 3, 4, 5) or not pd.isna(s.busr):
                raise SystemExit(f"{s.idx}: MODE {s.MODE}, busr {s.busr} not implemented")
            values = [s.MODE, 0, s.A1, s.A2, s.A3, s.A4, s.A5, s.A6, s.T1, s.T2, s.T3, s.T4,
                      s.T5, s.T6, s.KS, s.LSMAX, s.LSMIN, s.VCU, s.VCL]  # fmt: skip
            icons = f"{int(s.MODE)} 0 "
            dyr.append(f"{avr_bus[s.avr]} 'IEEEST' 1 " + icons
                       + " ".join(fmt(v) for v in values[2:]) + " /")  # fmt: skip
            written["dyr"].append(("IEEEST", avr_bus[s.avr], values))
    (HERE / f"{stem}.dyr").write_text("\n".join(dyr) + "\n")
    return written


def check(written: dict, xlsx: Path, repair: bool) -> int:
    """Read the dyr back (every value exactly as in the spreadsheet, a repaired X''d as the rule
    gives it, and GENROU's ordering Xl < X''d <= X'q <= X'd in the repaired pair) and the raw's
    numbers (each written value found, as written, on its record's line); returns the values
    checked."""
    stem = "ieee39_repaired" if repair else "ieee39_full"
    count = 0
    records = {}
    for rec in (HERE / f"{stem}.dyr").read_text().split("/"):
        fields = rec.split()
        if fields:
            records[(fields[1].strip("'"), int(fields[0]))] = [float(v) for v in fields[3:]]
    for model, bus, values in written["dyr"]:
        read = records[(model, bus)]
        if read != [float(v) for v in values]:
            raise SystemExit(f"{model} at bus {bus}: read {read}, spreadsheet {values}")
        count += len(values)
    genrou = pd.read_excel(xlsx, sheet_name="GENROU")
    for m in genrou.itertuples():
        read = records[("GENROU", int(m.bus))]
        xd1, xq1, xd2, xl = read[8], read[9], read[10], read[11]
        sheet = [m.Td10, m.Td20, m.Tq10, m.Tq20, m.M / 2, m.D, m.xd, m.xq, m.xd1, m.xq1]
        if read[:10] != [float(v) for v in sheet] or (xl, read[12:]) != (m.xl, [m.S10, m.S12]):
            raise SystemExit(f"GENROU at bus {m.bus}: read {read} departs from the spreadsheet")
        expected = repaired_xd2(m) if repair else float(m.xd2)
        if xd2 != expected or (repair and not xl < xd2 <= xq1 <= xd1):
            raise SystemExit(f"GENROU at bus {m.bus}: X''d {xd2} (rule: {expected}), Xl {xl}, "
                             f"X'q {xq1}, X'd {xd1}")  # fmt: skip
    raw_numbers = set()
    for row in (HERE / f"{stem}.raw").read_text().splitlines():
        for cell in row.split("/")[0].replace(",", " ").split():
            with contextlib.suppress(ValueError):  # quoted names and codes
                raw_numbers.add(float(cell))
    for kind, key, values in written["raw"]:
        for v in values:
            if float(v) not in raw_numbers:
                raise SystemExit(f"{kind} {key}: value {v} not in the raw file")
            count += 1
    return count


if __name__ == "__main__":
    for repair, stem in ((False, "ieee39_full"), (True, "ieee39_repaired")):
        done = write(Path(sys.argv[1]), repair)
        n = check(done, Path(sys.argv[1]), repair)
        print(f"wrote {stem}.raw and {stem}.dyr; {n} values checked")
