"""Write ``ieee14_pvd1.raw``/``.dyr`` from ANDES's IEEE 14-bus spreadsheet with distributed PV
(``cases/ieee14/ieee14_pvd1.xlsx`` of the ANDES 2.0.0 distribution: data only, no ANDES code is
used), then read the files back and check every written value against the spreadsheet.

    /tmp/andes-venv/bin/python tests/data/psse/ieee14_pvd1_from_xlsx.py PATH/TO/ieee14_pvd1.xlsx

(any Python with pandas and openpyxl). Conventions as ``ieee14_solar_from_xlsx.py``: powers on
100 MVA become MW / Mvar, angles degrees, ``trans = 1`` lines two-winding transformers (ratio at
bus1), GENROU's M = 2H and its ZSORCE (ra, xd2). The network is not ``ieee14.raw``'s: machine 8
delivers 30 MW (35 in ``ieee14.raw``), buses 9 and 14 have shunts and bus 4 a PV generator.

Distributed PV: the sheet's ten PVD1 rows each take the share gammap = gammaq = 0.1 of the PV
generator 6 at bus 4 (5 MW, 3 Mvar) on their own base Sn = 1 MVA. PSS/E attaches one dynamic
record to one machine, so that generator is written as ten machines at bus 4 (IDs '1' .. '10',
one per row in sheet order), each with gammap p0, gammaq q0, gamma qmax, gamma qmin, gamma pmax,
gamma pmin, the generator's voltage set-point and (ra, xs), MBASE = the row's Sn; the shares must
add up to 1 (checked). Each row becomes a PVD1 record (``models/devices/pvd1.py``: ICONs IGREG,
Pqflag; CONs Xc .. Khv):

* IGREG (igreg empty): 0, the terminal bus. Xc, Qmx, Qmn, v0, v1, dqdv, Imax (ialim), Vt0 ..
  Vt3, Vrflag, Ft0 .. Ft3 (Hz), Frflag: the sheet's values (all on the row's base Sn).
* fdbd, Ddn: ANDES takes them in Hz and pu/Hz, the specification per unit of frequency: written
  fdbd / fn and Ddn fn (fn the row's, 60 Hz); the check multiplies back.
* Tg: the sheet's tip, which must equal its tiq (ANDES has two lags, the specification one).
* Tf: the Tf of the row's BusFreq (ANDES measures the frequency with that device: a lag Tf and a
  washout Tw; the model's washout is 0.02 s, and the script checks the BusFreq's Tw is that).
* Vtmax, Lvpnt1, Lvpnt0, Qmin, Khv (no columns: ANDES has no such logic): 9999, 0.01, 0, -Imax,
  0, so that the high-voltage reactive logic is off and the low-voltage active logic acts
  only below 0.01 pu (where the voltage trip has already removed the PV).

Left out: the ACEc row (an area control error nobody reads), the BusFreq rows (1 .. 3 feed
stabilizers whose input codes do not read them; 4 becomes Tf), the Toggler rows (events come from
the references script), PVD1's gammap, gammaq (in the machines' powers) and Sn (MBASE).
"""

from __future__ import annotations

import contextlib
import math
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
SBASE = 100.0
STEM = "ieee14_pvd1"
PV_GEN = 6
"""The spreadsheet's PV generator the PVD1 rows share."""
TW_FREQ = 0.02
"""The washout of ``models.devices.pvd1`` (TW_FREQ): the BusFreq's Tw must equal it."""
PVD1_CONS = ("Xc", "Qmx", "Qmn", "v0", "v1", "dqdv", "fdbd", "Ddn", "Imax", "Vt0", "Vt1", "Vt2",
             "Vt3", "Vrflag", "Ft0", "Ft1", "Ft2", "Ft3", "Frflag", "Tg", "Tf", "Vtmax", "Lvpnt1",
             "Lvpnt0", "Qmin", "Khv")  # fmt: skip
SHEET = {"Xc": "xc", "Qmx": "qmx", "Qmn": "qmn", "v0": "v0", "v1": "v1", "dqdv": "dqdv",
         "Imax": "ialim", "Vt0": "vt0", "Vt1": "vt1", "Vt2": "vt2", "Vt3": "vt3",
         "Vrflag": "vrflag", "Ft0": "ft0", "Ft1": "ft1", "Ft2": "ft2", "Ft3": "ft3",
         "Frflag": "frflag", "Tg": "tip"}  # fmt: skip
"""PVD1 CONs copied from a sheet column unchanged."""
ESST3A_CONS = ("TR", "VIMAX", "VIMIN", "KM", "TC", "TB", "KA", "TA", "VRMAX", "VRMIN", "KG", "KP",
               "KI", "VBMAX", "KC", "XL", "VGMAX", "THETAP", "TM", "VMMAX", "VMMIN")  # fmt: skip
EXST1_CONS = ("TR", "VIMAX", "VIMIN", "TC", "TB", "KA", "TA", "VRMAX", "VRMIN", "KC", "KF", "TF")
IEEEG1_CONS = ("K", "T1", "T2", "T3", "UO", "UC", "PMAX", "PMIN", "T4", "K1", "K2", "T5", "K3",
               "K4", "T6", "K5", "K6", "T7", "K7", "K8")  # fmt: skip
IEEEST_CONS = ("A1", "A2", "A3", "A4", "A5", "A6", "T1", "T2", "T3", "T4", "T5", "T6", "KS",
               "LSMAX", "LSMIN", "VCU", "VCL")  # fmt: skip
ST2CUT_CONS = ("K1", "K2", "T1", "T2", "T3", "T4", "T5", "T6", "T7", "T8", "T9", "T10", "LSMAX",
               "LSMIN", "VCU", "VCL")  # fmt: skip


def fmt(value: float) -> str:
    return repr(float(value))


def record(bus: int, model: str, gid: str, values) -> str:
    return f"{bus} '{model}' {gid} " + " ".join(fmt(v) for v in values) + " /"


def pvd1_values(row, busfreq) -> dict[str, float]:
    """The PVD1 record's values (name -> value) from a sheet row and its BusFreq row."""
    if not pd.isna(row.igreg):
        raise SystemExit(f"{row.name}: igreg given; a remote bus is not implemented")
    if row.tip != row.tiq:
        raise SystemExit(f"{row.name}: tip {row.tip} != tiq {row.tiq} (one lag Tg)")
    if busfreq.Tw != TW_FREQ:
        raise SystemExit(f"{busfreq.idx}: Tw {busfreq.Tw} is not the model's {TW_FREQ}")
    out = {k: float(row[v]) for k, v in SHEET.items()}
    out.update(fdbd=row.fdbd / row.fn, Ddn=row.ddn * row.fn, Tf=float(busfreq.Tf), Vtmax=9999.0,
               Lvpnt1=0.01, Lvpnt0=0.0, Qmin=-float(row.ialim), Khv=0.0)  # fmt: skip
    return {"IGREG": 0.0, "Pqflag": float(row.pqflag), **{k: out[k] for k in PVD1_CONS}}


def write(xlsx: Path) -> dict[str, list]:
    """Write the pair; returns, per file, (record kind, key, values) as written."""
    x = pd.read_excel(xlsx, sheet_name=None)
    bus, pq, pv, slack = x["Bus"], x["PQ"], x["PV"], x["Slack"]
    line, shunt, genrou, pvd1 = x["Line"], x["Shunt"], x["GENROU"], x["PVD1"]
    written: dict[str, list] = {"raw": [], "dyr": []}
    gens = pd.concat([pv.assign(kind=2), slack.assign(kind=3)], ignore_index=True)
    kind = {int(b): int(k) for b, k in zip(gens.bus, gens.kind, strict=True)}
    rows = [
        "0, 100.0, 33, 0, 1, 60.0 / written from ieee14_pvd1.xlsx by ieee14_pvd1_from_xlsx.py",
        "IEEE 14-BUS SYSTEM WITH DISTRIBUTED PV AT BUS 4 (ANDES ieee14_pvd1.xlsx)",
        "GENROU, TGOV1, IEEEG1, EXST1, ESST3A, IEEEST, ST2CUT; ten PVD1 at bus 4",
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
    shares = pvd1[pvd1.gen == PV_GEN]
    if (
        len(shares) != len(pvd1)
        or abs(shares.gammap.sum() - 1) > 1e-12
        or abs(shares.gammaq.sum() - 1) > 1e-12
    ):
        raise SystemExit("the PVD1 rows do not share generator 6 exactly")
    for g in gens.itertuples():
        m = machine.get(int(g.idx))
        if m is not None and (m.Sn != g.Sn or int(m.bus) != int(g.bus)):
            raise SystemExit(f"generator {g.idx}: GENROU Sn/bus differ from the generator's")
        parts = [(1, 1.0, 1.0, g.Sn)] if int(g.idx) != PV_GEN else [
            (k + 1, r.gammap, r.gammaq, r.Sn) for k, r in enumerate(shares.itertuples())
        ]  # fmt: skip
        ra, zx = (m.ra, m.xd2) if m is not None else (g.ra, g.xs)
        for gid, gp, gq, mbase in parts:
            values = [gp * g.p0 * SBASE, gq * g.q0 * SBASE, gq * g.qmax * SBASE,
                      gq * g.qmin * SBASE, g.v0, mbase, ra, zx, gp * g.pmax * SBASE,
                      gp * g.pmin * SBASE]  # fmt: skip
            v = [fmt(val) for val in values]
            rows.append(
                f"{int(g.bus)}, '{gid}', {v[0]}, {v[1]}, {v[2]}, {v[3]}, {v[4]}, 0, {v[5]}, "
                f"{v[6]}, {v[7]}, 0.0, 0.0, 1.0, 1, 100.0, {v[8]}, {v[9]}"
            )
            written["raw"].append(("generator", int(g.bus) * 100 + gid, values))
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

    def add(bus_no: int, model: str, values, gid: str = "1") -> None:
        dyr.append(record(bus_no, model, gid, values))
        written["dyr"].append((model, bus_no, gid, [float(v) for v in values]))

    bus_of = {m.idx: int(m.bus) for m in genrou.itertuples()}
    for m in genrou.itertuples():
        if m.xq2 != m.xd2:
            raise SystemExit(f"GENROU at bus {m.bus}: xq2 {m.xq2} != xd2 {m.xd2}")
        add(int(m.bus), "GENROU", genrou_values(m))
    for t in x["TGOV1"].itertuples():
        add(bus_of[t.syn], "TGOV1", [t.R, t.T1, t.VMAX, t.VMIN, t.T2, t.T3, t.Dt])
    for t in x["IEEEG1"].itertuples():
        if not pd.isna(t.syn2):
            raise SystemExit(f"{t.idx}: a second machine (syn2) is not written")
        add(bus_of[t.syn], "IEEEG1", [0, 0, *(getattr(t, k) for k in IEEEG1_CONS)])
    avr_of = {}
    for name, cons in (("EXST1", EXST1_CONS), ("ESST3A", ESST3A_CONS)):
        for e in x[name].itertuples():
            add(bus_of[e.syn], name, [getattr(e, k) for k in cons])
            avr_of[e.idx] = bus_of[e.syn]
    for s in x["IEEEST"].itertuples():
        add(avr_of[s.avr], "IEEEST", [s.MODE, 0, *(getattr(s, k) for k in IEEEST_CONS)])
    for s in x["ST2CUT"].itertuples():
        add(avr_of[s.avr], "ST2CUT", [s.MODE, 0, s.MODE2, 0, *(getattr(s, k) for k in ST2CUT_CONS)])
    busfreq = {b.idx: b for b in x["BusFreq"].itertuples()}
    for k, row in enumerate(shares.itertuples()):
        row = shares.iloc[k]
        values = pvd1_values(row, busfreq[row.busf])
        add(int(row.bus), "PVD1", list(values.values()), gid=str(k + 1))
    (HERE / f"{STEM}.dyr").write_text("\n".join(dyr) + "\n")
    return written


def genrou_values(m) -> list:
    return [m.Td10, m.Td20, m.Tq10, m.Tq20, m.M / 2, m.D, m.xd, m.xq, m.xd1, m.xq1, m.xd2, m.xl,
            m.S10, m.S12]  # fmt: skip


def check(written: dict, xlsx: Path) -> int:
    """Read both files back: every dyr record's values exactly as written, the spreadsheet's
    values at their positions (fdbd, Ddn converted back), every raw value on the raw file;
    returns the count of values checked."""
    x = pd.read_excel(xlsx, sheet_name=None)
    records = {}
    for rec in (HERE / f"{STEM}.dyr").read_text().split("/"):
        fields = rec.split()
        if fields:
            key = (fields[1].strip("'"), int(fields[0]), fields[2])
            records[key] = [float(v) for v in fields[3:]]
    count = 0
    for model, bus_no, gid, values in written["dyr"]:
        if records[(model, bus_no, gid)] != values:
            raise SystemExit(
                f"{model} at bus {bus_no} '{gid}': read {records[(model, bus_no, gid)]}"
            )
    names = ("IGREG", "Pqflag", *PVD1_CONS)
    busfreq = {b.idx: b for b in x["BusFreq"].itertuples()}
    for k in range(len(x["PVD1"])):
        row = x["PVD1"].iloc[k]
        read = dict(zip(names, records[("PVD1", int(row.bus), str(k + 1))], strict=True))
        expected = {**{n: float(row[c]) for n, c in SHEET.items()},
                    "Pqflag": float(row.pqflag), "IGREG": 0.0, "Tf": float(busfreq[row.busf].Tf),
                    "Vtmax": 9999.0, "Lvpnt1": 0.01, "Lvpnt0": 0.0, "Qmin": -float(row.ialim),
                    "Khv": 0.0}  # fmt: skip
        for n, value in expected.items():
            if read[n] != value:
                raise SystemExit(f"PVD1 row {k} {n}: read {read[n]}, sheet {value}")
        if read["Tg"] != float(row.tiq):
            raise SystemExit(f"PVD1 row {k}: Tg {read['Tg']} != tiq {row.tiq}")
        for n, back, sheet in (("fdbd", read["fdbd"] * row.fn, row.fdbd),
                               ("Ddn", read["Ddn"] / row.fn, row.ddn)):  # fmt: skip
            if abs(back - sheet) > 1e-15 * abs(sheet):
                raise SystemExit(f"PVD1 row {k} {n}: {back} back, sheet {sheet}")
        count += len(expected) + 3
    bus_of = {m.idx: int(m.bus) for m in x["GENROU"].itertuples()}
    for m in x["GENROU"].itertuples():
        sheet = [float(v) for v in genrou_values(m)]
        if records[("GENROU", int(m.bus), "1")] != sheet:
            raise SystemExit(f"GENROU at bus {m.bus} departs from the sheet")
        count += len(sheet)
    for t in x["TGOV1"].itertuples():
        sheet = [float(v) for v in (t.R, t.T1, t.VMAX, t.VMIN, t.T2, t.T3, t.Dt)]
        if records[("TGOV1", bus_of[t.syn], "1")] != sheet:
            raise SystemExit(f"TGOV1 {t.idx} departs from the sheet")
        count += len(sheet)
    for t in x["IEEEG1"].itertuples():
        sheet = [0.0, 0.0, *(float(getattr(t, k)) for k in IEEEG1_CONS)]
        if records[("IEEEG1", bus_of[t.syn], "1")] != sheet:
            raise SystemExit(f"IEEEG1 {t.idx} departs from the sheet")
        count += len(IEEEG1_CONS)
    avr_of = {}
    for sheet_name, names_ in (("EXST1", EXST1_CONS), ("ESST3A", ESST3A_CONS)):
        for e in x[sheet_name].itertuples():
            sheet = [float(getattr(e, k)) for k in names_]
            if records[(sheet_name, bus_of[e.syn], "1")] != sheet:
                raise SystemExit(f"{sheet_name} {e.idx} departs from the sheet")
            avr_of[e.idx] = bus_of[e.syn]
            count += len(sheet)
    for s in x["IEEEST"].itertuples():
        sheet = [float(s.MODE), 0.0, *(float(getattr(s, k)) for k in IEEEST_CONS)]
        if records[("IEEEST", avr_of[s.avr], "1")] != sheet:
            raise SystemExit(f"IEEEST {s.idx} departs from the sheet")
        count += len(sheet) - 1
    for s in x["ST2CUT"].itertuples():
        sheet = [float(s.MODE), 0.0, float(s.MODE2), 0.0,
                 *(float(getattr(s, k)) for k in ST2CUT_CONS)]  # fmt: skip
        if records[("ST2CUT", avr_of[s.avr], "1")] != sheet:
            raise SystemExit(f"ST2CUT {s.idx} departs from the sheet")
        count += len(sheet) - 2
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
