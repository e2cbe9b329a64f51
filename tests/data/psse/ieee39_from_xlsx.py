"""Write ``ieee39_full.raw`` and ``ieee39_full.dyr`` from ANDES's IEEE 39-bus spreadsheet
(``cases/ieee39/ieee39_full.xlsx`` of the ANDES distribution: data only, no ANDES code is used),
then read both files back and check every written value against the spreadsheet.

    /tmp/andes-venv/bin/python tests/data/psse/ieee39_from_xlsx.py PATH/TO/ieee39_full.xlsx

(any Python with pandas and openpyxl). Conventions: ANDES's per-unit powers are on 100 MVA and
become MW / Mvar; angles become degrees; a line with ``trans = 1`` becomes a two-winding
transformer (CW = CZ = CM = 1: ratio at bus1 in pu, impedance in pu on the system base);
GENROU's M = 2H; the machine's source impedance ZSORCE is GENROU's (ra, xd2); TGOV1N rows become
TGOV1 records (same parameters; its Tn and wref0 are not PSS/E data). Left out: the IEEEST
stabilizers (not supported yet), the BusFreq measurements, the ACE controller and the (disabled)
Toggler.
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


def write(xlsx: Path) -> dict[str, list[tuple[str, int, list[float]]]]:
    """Write the two files; returns, per file, (record kind, key, values) as written."""
    x = pd.read_excel(xlsx, sheet_name=None)
    bus, pq, pv, slack = x["Bus"], x["PQ"], x["PV"], x["Slack"]
    line, shunt, genrou = x["Line"], x["Shunt"], x["GENROU"]
    written: dict[str, list] = {"raw": [], "dyr": []}
    gens = pd.concat([pv.assign(kind=2), slack.assign(kind=3)], ignore_index=True)
    kind = {int(b): int(k) for b, k in zip(gens.bus, gens.kind, strict=True)}
    rows = [
        "0, 100.0, 33, 0, 1, 60.0 / written from ieee39_full.xlsx by ieee39_from_xlsx.py",
        "IEEE 39-BUS SYSTEM (ANDES ieee39_full.xlsx)",
        "GENROU, IEEEX1, TGOV1; IEEEST left out",
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
    for g in gens.itertuples():
        m = machine[int(g.bus)]
        if m.Sn != g.Sn:
            raise SystemExit(f"bus {g.bus}: GENROU Sn {m.Sn} != generator Sn {g.Sn}")
        values = [g.p0 * SBASE, g.q0 * SBASE, g.qmax * SBASE, g.qmin * SBASE, g.v0, g.Sn, m.ra,
                  m.xd2, g.pmax * SBASE, g.pmin * SBASE]  # fmt: skip
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
    (HERE / "ieee39_full.raw").write_text("\n".join(rows) + "\n")

    dyr = []
    for m in genrou.itertuples():
        if m.xq2 != m.xd2:
            raise SystemExit(f"GENROU at bus {m.bus}: xq2 {m.xq2} != xd2 {m.xd2}")
        values = [m.Td10, m.Td20, m.Tq10, m.Tq20, m.M / 2, m.D, m.xd, m.xq, m.xd1, m.xq1, m.xd2,
                  m.xl, m.S10, m.S12]  # fmt: skip
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
    (HERE / "ieee39_full.dyr").write_text("\n".join(dyr) + "\n")
    return written


def check(written: dict) -> int:
    """Read the dyr back (every value exactly as in the spreadsheet) and the raw's numbers
    (each written value found, as written, on its record's line); returns the values checked."""
    count = 0
    records = {}
    for rec in (HERE / "ieee39_full.dyr").read_text().split("/"):
        fields = rec.split()
        if fields:
            records[(fields[1].strip("'"), int(fields[0]))] = [float(v) for v in fields[3:]]
    for model, bus, values in written["dyr"]:
        read = records[(model, bus)]
        if read != [float(v) for v in values]:
            raise SystemExit(f"{model} at bus {bus}: read {read}, spreadsheet {values}")
        count += len(values)
    raw_numbers = set()
    for row in (HERE / "ieee39_full.raw").read_text().splitlines():
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
    done = write(Path(sys.argv[1]))
    print(f"wrote ieee39_full.raw and ieee39_full.dyr; {check(done)} values checked")
