"""Write ``ieee14_solar.raw``/``.dyr`` from ANDES's IEEE 14-bus spreadsheet with a solar plant
(``cases/ieee14/ieee14_solar.xlsx`` of the ANDES 2.0.0 distribution: data only, no ANDES code is
used), then read the files back and check every written value against the spreadsheet.

    /tmp/andes-venv/bin/python tests/data/psse/ieee14_solar_from_xlsx.py PATH/TO/ieee14_solar.xlsx

(any Python with pandas and openpyxl). Conventions as ``ieee39_from_xlsx.py``: powers on 100 MVA
become MW / Mvar, angles degrees, ``trans = 1`` lines two-winding transformers (ratio at bus1),
GENROU's M = 2H, a GENROU machine's ZSORCE its (ra, xd2); the converter's generator (PV 5 at bus
8) keeps the PV row's (ra, xs) as ZSORCE (a current source does not use it). Records: GENROU,
TGOV1, EXST1, ESST3A per their ``syn``; REGCA1, REECA1, REPCA1 on the machine at bus 8 in PSS/E's
ICON/CON order. Values the spreadsheet leaves empty, written as:

* REGCA1 LVPLSW: not a column of the sheet; 1 (ANDES's default, LVPL enabled).
* REECA1 IREG (busr empty): 0, the terminal bus. REPCA1 IREG (busr empty): 0.
* REPCA1 Rc, Xc (empty): ANDES then takes the monitored line's r and x (Line_20, 8 -> 7:
  0 and 0.17615), which are written; BUS1, BUS2, CKTID: Line_20's buses 8, 7 and circuit 1.
* REPCA1 PLflag (0 in the sheet) is not a PSS/E datum (ANDES sets it to 1 when it reads a
  ``.dyr``); with Fflag = 0 the plant's active-power path does not act either way. busf (empty):
  ANDES adds a BusFreq at bus 8 with its defaults.

Left out: the BusFreq rows (buses 1, 2, 3; nothing reads them), the Toggler rows (events come from
the references script), the REGCA1 row's ra, xs (not REGCA1 data).
"""

from __future__ import annotations

import contextlib
import math
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
SBASE = 100.0
STEM = "ieee14_solar"
REECA1_CONS = ("Vdip", "Vup", "Trv", "dbd1", "dbd2", "Kqv", "Iqh1", "Iql1", "Vref0", "Iqfrz",
               "Thld", "Thld2", "Tp", "QMax", "QMin", "VMAX", "VMIN", "Kqp", "Kqi", "Kvp", "Kvi",
               "Vref1", "Tiq", "dPmax", "dPmin", "PMAX", "PMIN", "Imax", "Tpord", "Vq1", "Iq1",
               "Vq2", "Iq2", "Vq3", "Iq3", "Vq4", "Iq4", "Vp1", "Ip1", "Vp2", "Ip2", "Vp3", "Ip3",
               "Vp4", "Ip4")  # fmt: skip
REPCA1_CONS = ("Tfltr", "Kp", "Ki", "Tft", "Tfv", "Vfrz", "Rc", "Xc", "Kc", "emax", "emin",
               "dbd1", "dbd2", "Qmax", "Qmin", "Kpg", "Kig", "Tp", "fdbd1", "fdbd2", "femax",
               "femin", "Pmax", "Pmin", "Tg", "Ddn", "Dup")  # fmt: skip
REGCA1_CONS = ("Tg", "Rrpwr", "Brkpt", "Zerox", "Lvpl1", "Volim", "Lvpnt1", "Lvpnt0", "Iolim",
               "Tfltr", "Khv", "Iqrmax", "Iqrmin", "Accel")  # fmt: skip
ESST3A_CONS = ("TR", "VIMAX", "VIMIN", "KM", "TC", "TB", "KA", "TA", "VRMAX", "VRMIN", "KG", "KP",
               "KI", "VBMAX", "KC", "XL", "VGMAX", "THETAP", "TM", "VMMAX", "VMMIN")  # fmt: skip
EXST1_CONS = ("TR", "VIMAX", "VIMIN", "TC", "TB", "KA", "TA", "VRMAX", "VRMIN", "KC", "KF", "TF")


def fmt(value: float) -> str:
    return repr(float(value))


def record(bus: int, model: str, values) -> str:
    return f"{bus} '{model}' 1 " + " ".join(fmt(v) for v in values) + " /"


def write(xlsx: Path) -> dict[str, list]:
    """Write the pair; returns, per file, (record kind, key, values) as written."""
    x = pd.read_excel(xlsx, sheet_name=None)
    bus, pq, pv, slack = x["Bus"], x["PQ"], x["PV"], x["Slack"]
    line, shunt, genrou = x["Line"], x["Shunt"], x["GENROU"]
    written: dict[str, list] = {"raw": [], "dyr": []}
    gens = pd.concat([pv.assign(kind=2), slack.assign(kind=3)], ignore_index=True)
    kind = {int(b): int(k) for b, k in zip(gens.bus, gens.kind, strict=True)}
    rows = [
        "0, 100.0, 33, 0, 1, 60.0 / written from ieee14_solar.xlsx by ieee14_solar_from_xlsx.py",
        "IEEE 14-BUS SYSTEM WITH A SOLAR PLANT AT BUS 8 (ANDES ieee14_solar.xlsx)",
        "GENROU, TGOV1, EXST1, ESST3A; REGCA1, REECA1, REPCA1 at bus 8",
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
    machine = {int(m.gen): m for m in genrou.itertuples()}
    for g in gens.itertuples():
        m = machine.get(int(g.idx))
        if m is not None and (m.Sn != g.Sn or int(m.bus) != int(g.bus)):
            raise SystemExit(f"generator {g.idx}: GENROU Sn/bus differ from the generator's")
        ra, zx = (m.ra, m.xd2) if m is not None else (g.ra, g.xs)
        values = [g.p0 * SBASE, g.q0 * SBASE, g.qmax * SBASE, g.qmin * SBASE, g.v0, g.Sn, ra,
                  zx, g.pmax * SBASE, g.pmin * SBASE]  # fmt: skip
        v = [fmt(val) for val in values]
        rows.append(
            f"{int(g.bus)}, '1', {v[0]}, {v[1]}, {v[2]}, {v[3]}, {v[4]}, 0, {v[5]}, "
            f"{v[6]}, {v[7]}, 0.0, 0.0, 1.0, 1, 100.0, {v[8]}, {v[9]}"
        )
        written["raw"].append(("generator", int(g.bus), values))
    rows.append("0 / END OF GENERATOR DATA, BEGIN BRANCH DATA")
    for br in line[line.trans == 0].itertuples():
        rows.append(
            f"{int(br.bus1)}, {int(br.bus2)}, '1', {fmt(br.r)}, {fmt(br.x)}, "
            f"{fmt(br.b)}, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1"
        )
        written["raw"].append(("branch", int(br.bus1) * 100 + int(br.bus2), [br.r, br.x, br.b]))
    rows.append("0 / END OF BRANCH DATA, BEGIN TRANSFORMER DATA")
    for br in line[line.trans == 1].itertuples():
        rows += [
            f"{int(br.bus1)}, {int(br.bus2)}, 0, '1', 1, 1, 1, 0.0, 0.0, 2, ' ', 1",
            f"{fmt(br.r)}, {fmt(br.x)}, 100.0",
            f"{fmt(br.tap)}, 0.0, {fmt(math.degrees(br.phi))}, 0.0, 0.0, 0.0, 0, 0, 1.1, 0.9, "
            "1.1, 0.9, 33, 0, 0.0, 0.0",
            "1.0, 0.0",
        ]
        written["raw"].append(("transformer", int(br.bus1) * 100 + int(br.bus2),
                               [br.r, br.x, br.tap, math.degrees(br.phi)]))  # fmt: skip
    rows.append("0 / END OF TRANSFORMER DATA, BEGIN AREA DATA")
    for a in x["Area"].itertuples():
        rows.append(f"{int(a.idx)}, 0, 0.0, 10.0, '{a.name}'")
    rows += [f"0 / END OF {s} DATA" for s in ("AREA", "TWO-TERMINAL DC", "VSC DC LINE",
                                               "IMPEDANCE CORRECTION", "MULTI-TERMINAL DC",
                                               "MULTI-SECTION LINE")]  # fmt: skip
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
    (HERE / f"{STEM}.raw").write_text("\n".join(rows) + "\n")

    dyr = []

    def add(bus_no: int, model: str, values) -> None:
        dyr.append(record(bus_no, model, values))
        written["dyr"].append((model, bus_no, [float(v) for v in values]))

    bus_of = {m.idx: int(m.bus) for m in genrou.itertuples()}
    for m in genrou.itertuples():
        if m.xq2 != m.xd2:
            raise SystemExit(f"GENROU at bus {m.bus}: xq2 {m.xq2} != xd2 {m.xd2}")
        add(int(m.bus), "GENROU", [m.Td10, m.Td20, m.Tq10, m.Tq20, m.M / 2, m.D, m.xd, m.xq,
                                   m.xd1, m.xq1, m.xd2, m.xl, m.S10, m.S12])  # fmt: skip
    for t in x["TGOV1"].itertuples():
        add(bus_of[t.syn], "TGOV1", [t.R, t.T1, t.VMAX, t.VMIN, t.T2, t.T3, t.Dt])
    for e in x["EXST1"].itertuples():
        add(bus_of[e.syn], "EXST1", [getattr(e, k) for k in EXST1_CONS])
    for e in x["ESST3A"].itertuples():
        add(bus_of[e.syn], "ESST3A", [getattr(e, k) for k in ESST3A_CONS])
    reg = x["REGCA1"].iloc[0]
    reg_bus = int(reg.bus)
    if "Lvplsw" in reg:
        raise SystemExit("the sheet now gives Lvplsw: write it instead of the default")
    add(reg_bus, "REGCA1", [1.0, *(reg[k] for k in REGCA1_CONS)])
    ree = x["REECA1"].iloc[0]
    if not pd.isna(ree.busr):
        raise SystemExit("REECA1 busr given: a remote bus is not implemented")
    flags = [ree.PFFLAG, ree.VFLAG, ree.QFLAG, ree.PFLAG, ree.PQFLAG]
    add(reg_bus, "REECA1", [0, *flags, *(ree[k] for k in REECA1_CONS)])
    rep = x["REPCA1"].iloc[0]
    ln = line[line.idx == rep.line].iloc[0]
    if not (pd.isna(rep.busr) and pd.isna(rep.Rc) and pd.isna(rep.Xc) and int(ln.bus1) == reg_bus):
        raise SystemExit("REPCA1: busr, Rc, Xc or its line differ from what this script writes")
    filled = {**{k: rep[k] for k in REPCA1_CONS}, "Rc": ln.r, "Xc": ln.x}
    add(reg_bus, "REPCA1", [0, int(ln.bus1), int(ln.bus2), 1, rep.VCFlag, rep.RefFlag, rep.Fflag,
                            *(filled[k] for k in REPCA1_CONS)])  # fmt: skip
    (HERE / f"{STEM}.dyr").write_text("\n".join(dyr) + "\n")
    return written


def check(written: dict, xlsx: Path) -> int:
    """Read both files back: every dyr record's values exactly as written, the spreadsheet's
    values at their PSS/E positions, and every raw value on the raw file; returns the count."""
    x = pd.read_excel(xlsx, sheet_name=None)
    records = {}
    for rec in (HERE / f"{STEM}.dyr").read_text().split("/"):
        fields = rec.split()
        if fields:
            records[(fields[1].strip("'"), int(fields[0]))] = [float(v) for v in fields[3:]]
    count = 0
    for model, bus_no, values in written["dyr"]:
        if records[(model, bus_no)] != values:
            raise SystemExit(f"{model} at bus {bus_no}: read {records[(model, bus_no)]}")
    sheet_values = {
        "REGCA1": (x["REGCA1"].iloc[0], REGCA1_CONS, 1),
        "REECA1": (x["REECA1"].iloc[0], REECA1_CONS, 6),
        "REPCA1": (x["REPCA1"].iloc[0], REPCA1_CONS, 7),
    }
    for model, (row, names, icons) in sheet_values.items():
        read = records[(model, int(x["REGCA1"].iloc[0].bus))]
        for k, name in enumerate(names):
            expected = row[name]
            if model == "REPCA1" and name in ("Rc", "Xc"):
                ln = x["Line"][x["Line"].idx == row.line].iloc[0]
                expected = ln.r if name == "Rc" else ln.x
            if read[icons + k] != float(expected):
                raise SystemExit(f"{model} {name}: read {read[icons + k]}, sheet {expected}")
            count += 1
    ree = records[("REECA1", int(x["REGCA1"].iloc[0].bus))]
    row = x["REECA1"].iloc[0]
    if ree[1:6] != [float(row[f]) for f in ("PFFLAG", "VFLAG", "QFLAG", "PFLAG", "PQFLAG")]:
        raise SystemExit("REECA1 flags differ from the sheet")
    count += 5
    rep = records[("REPCA1", int(x["REGCA1"].iloc[0].bus))]
    row = x["REPCA1"].iloc[0]
    if rep[4:7] != [float(row.VCFlag), float(row.RefFlag), float(row.Fflag)]:
        raise SystemExit("REPCA1 flags differ from the sheet")
    count += 3
    bus_of = {m.idx: int(m.bus) for m in x["GENROU"].itertuples()}
    for m in x["GENROU"].itertuples():
        sheet = [m.Td10, m.Td20, m.Tq10, m.Tq20, m.M / 2, m.D, m.xd, m.xq, m.xd1, m.xq1, m.xd2,
                 m.xl, m.S10, m.S12]  # fmt: skip
        if records[("GENROU", int(m.bus))] != [float(v) for v in sheet]:
            raise SystemExit(f"GENROU at bus {m.bus} departs from the sheet")
        count += len(sheet)
    for t in x["TGOV1"].itertuples():
        sheet = [t.R, t.T1, t.VMAX, t.VMIN, t.T2, t.T3, t.Dt]
        if records[("TGOV1", bus_of[t.syn])] != [float(v) for v in sheet]:
            raise SystemExit(f"TGOV1 {t.idx} departs from the sheet")
        count += len(sheet)
    for sheet_name, names in (("EXST1", EXST1_CONS), ("ESST3A", ESST3A_CONS)):
        for e in x[sheet_name].itertuples():
            sheet = [float(getattr(e, k)) for k in names]
            if records[(sheet_name, bus_of[e.syn])] != sheet:
                raise SystemExit(f"{sheet_name} {e.idx} departs from the sheet")
            count += len(sheet)
    raw_numbers = set()
    for row_text in (HERE / f"{STEM}.raw").read_text().splitlines():
        for cell in row_text.split("/")[0].replace(",", " ").split():
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
    print(f"wrote {STEM}.raw and {STEM}.dyr; {check(done, Path(sys.argv[1]))} values checked")
