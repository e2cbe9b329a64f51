"""Write ``ieee14_zip.raw``/``.dyr`` from ANDES's IEEE 14-bus case with a ZIP load
(``cases/ieee14/ieee14_zip.json`` of the ANDES 2.0.0 distribution: data only, no ANDES code is
used), then read the files back and check every written value against the JSON.

    python3 tests/data/psse/ieee14_zip_from_json.py PATH/TO/ieee14_zip.json

Conventions as ``ieee14_solar_from_xlsx.py``: powers on 100 MVA become MW / Mvar, angles degrees,
``trans = 1`` lines two-winding transformers (ratio at bus1), GENROU's M = 2H, a machine's ZSORCE
its (ra, xd2). Records: GENROU, TGOV1, EXST1, ESST3A per their ``syn``.

The ZIP record (``ZIP_1`` on ``PQ_1``, bus 2: kpp 50, kpi 40, kpz 0; kqp 100, kqi 0, kqz 0 %)
becomes bus 2's load record's parts, at the voltage the power flow holds there (bus 2 is a
generator bus: its machine's VS, 1.03 pu), so the load draws PQ_1's p0 + j q0 at the power flow:

    PL = p0 kpp / K,  IP = p0 kpi / (K V0),  YP = p0 kpz / (K V0^2)  (MW; K = kpp + kpi + kpz)

and likewise QL, IQ, -YQ from q0 and kqp, kqi, kqz. Reading: the JSON's P percentages sum to 90,
not 100 (ANDES's own check ``kpc`` flags it; ANDES 2.0.0 runs the JSON with bus 2 drawing 90 % of
p0 from t = 0: its initialization reports a 0.022 pu mismatch at bus 2 and fails). They are taken
as the split of p0 in those proportions (K = 90): 5/9 constant power, 4/9 constant current. Each
generator bus's VM is written as its machine's VS (the voltage it solves to), so a reader that
evaluates the load at the raw's VM (ANDES's) draws the same p0; other buses keep the JSON's v0.

Left out: the BusFreq rows (nothing reads them), the Toggler row (events come from the references
script).
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SBASE = 100.0
STEM = "ieee14_zip"
ESST3A_CONS = ("TR", "VIMAX", "VIMIN", "KM", "TC", "TB", "KA", "TA", "VRMAX", "VRMIN", "KG", "KP",
               "KI", "VBMAX", "KC", "XL", "VGMAX", "THETAP", "TM", "VMMAX", "VMMIN")  # fmt: skip
EXST1_CONS = ("TR", "VIMAX", "VIMIN", "TC", "TB", "KA", "TA", "VRMAX", "VRMIN", "KC", "KF", "TF")
GENROU_CONS = ("Td10", "Td20", "Tq10", "Tq20", "H", "D", "xd", "xq", "xd1", "xq1", "xd2", "xl",
               "S10", "S12")  # fmt: skip
TGOV1_CONS = ("R", "T1", "VMAX", "VMIN", "T2", "T3", "Dt")


def fmt(value: float) -> str:
    return repr(float(value))


def record(bus: int, model: str, values) -> str:
    return f"{bus} '{model}' 1 " + " ".join(fmt(v) for v in values) + " /"


def zip_parts(pq: dict, z: dict, v0: float) -> list[float]:
    """(PL, QL, IP, IQ, YP, YQ) in MW / Mvar of the load record of PQ ``pq`` with ZIP ``z`` at
    the power-flow voltage ``v0`` (module docstring; YQ positive capacitive, PSS/E's sign)."""
    kp = z["kpp"] + z["kpi"] + z["kpz"]
    kq = z["kqp"] + z["kqi"] + z["kqz"]
    p, q = pq["p0"] * SBASE, pq["q0"] * SBASE
    return [p * z["kpp"] / kp, q * z["kqp"] / kq, p * z["kpi"] / kp / v0, q * z["kqi"] / kq / v0,
            p * z["kpz"] / kp / v0**2, 0.0 - q * z["kqz"] / kq / v0**2]  # fmt: skip


def generator_voltages(x: dict) -> dict[int, float]:
    return {int(g["bus"]): float(g["v0"]) for g in x["PV"] + x["Slack"]}


def write(path: Path) -> dict[str, list]:
    """Write the pair; returns, per file, (record kind, key, values) as written."""
    x = json.loads(path.read_text())
    written: dict[str, list] = {"raw": [], "dyr": []}
    gens = [(g, 2) for g in x["PV"]] + [(g, 3) for g in x["Slack"]]
    kind = {int(g["bus"]): k for g, k in gens}
    vs = generator_voltages(x)
    zips = {z["pq"]: z for z in x["ZIP"]}
    rows = [
        "0, 100.0, 33, 0, 1, 60.0 / written from ieee14_zip.json by ieee14_zip_from_json.py",
        "IEEE 14-BUS SYSTEM WITH A ZIP LOAD AT BUS 2 (ANDES ieee14_zip.json)",
        "GENROU, TGOV1, EXST1, ESST3A; bus 2 load: constant power and constant current parts",
    ]
    for b in x["Bus"]:
        vm = vs.get(int(b["idx"]), b["v0"])
        values = [b["Vn"], vm, math.degrees(b["a0"])]
        rows.append(
            f"{int(b['idx'])}, '{b['name']}', {fmt(b['Vn'])}, {kind.get(int(b['idx']), 1)}, "
            f"{int(b['area'])}, {int(b['zone'])}, 1, {fmt(vm)}, {fmt(math.degrees(b['a0']))}"
        )
        written["raw"].append(("bus", int(b["idx"]), values))
    rows.append("0 / END OF BUS DATA, BEGIN LOAD DATA")
    for ld in x["PQ"]:
        bus = int(ld["bus"])
        if ld["idx"] in zips:
            if bus not in vs:
                raise SystemExit(f"ZIP on {ld['idx']}: bus {bus} is not a generator bus")
            parts = zip_parts(ld, zips[ld["idx"]], vs[bus])
        else:
            parts = [ld["p0"] * SBASE, ld["q0"] * SBASE, 0.0, 0.0, 0.0, 0.0]
        rows.append(f"{bus}, '1', 1, 1, 1, " + ", ".join(fmt(v) for v in parts) + ", 1, 1")
        written["raw"].append(("load", bus, parts))
    rows.append("0 / END OF LOAD DATA, BEGIN FIXED SHUNT DATA")
    for sh in x["Shunt"]:
        rows.append(f"{int(sh['bus'])}, '1', 1, {fmt(sh['g'] * SBASE)}, {fmt(sh['b'] * SBASE)}")
        written["raw"].append(("shunt", int(sh["bus"]), [sh["g"] * SBASE, sh["b"] * SBASE]))
    rows.append("0 / END OF FIXED SHUNT DATA, BEGIN GENERATOR DATA")
    machine = {int(m["gen"]): m for m in x["GENROU"]}
    for g, _ in gens:
        m = machine[int(g["idx"])]
        if m["Sn"] != g["Sn"] or int(m["bus"]) != int(g["bus"]):
            raise SystemExit(f"generator {g['idx']}: GENROU Sn/bus differ from the generator's")
        values = [g["p0"] * SBASE, g["q0"] * SBASE, g["qmax"] * SBASE, g["qmin"] * SBASE,
                  g["v0"], g["Sn"], m["ra"], m["xd2"], g["pmax"] * SBASE,
                  g["pmin"] * SBASE]  # fmt: skip
        v = [fmt(val) for val in values]
        rows.append(
            f"{int(g['bus'])}, '1', {v[0]}, {v[1]}, {v[2]}, {v[3]}, {v[4]}, 0, {v[5]}, "
            f"{v[6]}, {v[7]}, 0.0, 0.0, 1.0, 1, 100.0, {v[8]}, {v[9]}"
        )
        written["raw"].append(("generator", int(g["bus"]), values))
    rows.append("0 / END OF GENERATOR DATA, BEGIN BRANCH DATA")
    for br in (r for r in x["Line"] if r["trans"] == 0):
        rows.append(
            f"{int(br['bus1'])}, {int(br['bus2'])}, '1', {fmt(br['r'])}, {fmt(br['x'])}, "
            f"{fmt(br['b'])}, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1"
        )
        key = int(br["bus1"]) * 100 + int(br["bus2"])
        written["raw"].append(("branch", key, [br["r"], br["x"], br["b"]]))
    rows.append("0 / END OF BRANCH DATA, BEGIN TRANSFORMER DATA")
    for br in (r for r in x["Line"] if r["trans"] == 1):
        rows += [
            f"{int(br['bus1'])}, {int(br['bus2'])}, 0, '1', 1, 1, 1, 0.0, 0.0, 2, ' ', 1",
            f"{fmt(br['r'])}, {fmt(br['x'])}, 100.0",
            f"{fmt(br['tap'])}, 0.0, {fmt(math.degrees(br['phi']))}, 0.0, 0.0, 0.0, 0, 0, 1.1, "
            "0.9, 1.1, 0.9, 33, 0, 0.0, 0.0",
            "1.0, 0.0",
        ]
        written["raw"].append(("transformer", int(br["bus1"]) * 100 + int(br["bus2"]),
                               [br["r"], br["x"], br["tap"], math.degrees(br["phi"])]))  # fmt: skip
    rows.append("0 / END OF TRANSFORMER DATA, BEGIN AREA DATA")
    for a in x["Area"]:
        rows.append(f"{int(a['idx'])}, 0, 0.0, 10.0, '{a['name']}'")
    rows += [f"0 / END OF {s} DATA" for s in ("AREA", "TWO-TERMINAL DC", "VSC DC LINE",
                                               "IMPEDANCE CORRECTION", "MULTI-TERMINAL DC",
                                               "MULTI-SECTION LINE")]  # fmt: skip
    for z in sorted({int(b["zone"]) for b in x["Bus"]}):
        rows.append(f"{z}, 'ZONE{z}'")
    rows += [f"0 / END OF {s} DATA" for s in ("ZONE", "INTER-AREA TRANSFER", "OWNER", "FACTS",
                                               "SWITCHED SHUNT", "GNE",
                                               "INDUCTION MACHINE")]  # fmt: skip
    rows.append("Q")
    (HERE / f"{STEM}.raw").write_text("\n".join(rows) + "\n")

    dyr = []

    def add(bus_no: int, model: str, values) -> None:
        dyr.append(record(bus_no, model, values))
        written["dyr"].append((model, bus_no, [float(v) for v in values]))

    bus_of = {m["idx"]: int(m["bus"]) for m in x["GENROU"]}
    for m in x["GENROU"]:
        if m["xq2"] != m["xd2"]:
            raise SystemExit(f"GENROU at bus {m['bus']}: xq2 {m['xq2']} != xd2 {m['xd2']}")
        add(int(m["bus"]), "GENROU", genrou_values(m))
    for t in x["TGOV1"]:
        add(bus_of[t["syn"]], "TGOV1", [t[k] for k in TGOV1_CONS])
    for e in x["EXST1"]:
        add(bus_of[e["syn"]], "EXST1", [e[k] for k in EXST1_CONS])
    for e in x["ESST3A"]:
        add(bus_of[e["syn"]], "ESST3A", [e[k] for k in ESST3A_CONS])
    (HERE / f"{STEM}.dyr").write_text("\n".join(dyr) + "\n")
    return written


def genrou_values(m: dict) -> list[float]:
    """GENROU's CONs in PSS/E order from an ANDES row (H = M / 2)."""
    return [m["M"] / 2 if k == "H" else m[k] for k in GENROU_CONS]


def check(written: dict, path: Path) -> int:
    """Read both files back: every dyr record's values exactly as written and equal to the JSON's
    at their PSS/E positions, every raw value on the raw file, and the bus 2 load drawing PQ_1's
    p0 + j q0 at VS; returns the count of values checked."""
    x = json.loads(path.read_text())
    records = {}
    for rec in (HERE / f"{STEM}.dyr").read_text().split("/"):
        fields = rec.split()
        if fields:
            records[(fields[1].strip("'"), int(fields[0]))] = [float(v) for v in fields[3:]]
    for model, bus_no, values in written["dyr"]:
        if records[(model, bus_no)] != values:
            raise SystemExit(f"{model} at bus {bus_no}: read {records[(model, bus_no)]}")
    count = 0
    bus_of = {m["idx"]: int(m["bus"]) for m in x["GENROU"]}
    sheets = [("GENROU", m, int(m["bus"]), genrou_values(m)) for m in x["GENROU"]]
    sheets += [("TGOV1", t, bus_of[t["syn"]], [t[k] for k in TGOV1_CONS]) for t in x["TGOV1"]]
    sheets += [("EXST1", e, bus_of[e["syn"]], [e[k] for k in EXST1_CONS]) for e in x["EXST1"]]
    sheets += [("ESST3A", e, bus_of[e["syn"]], [e[k] for k in ESST3A_CONS])
               for e in x["ESST3A"]]  # fmt: skip
    for model, row, bus_no, values in sheets:
        if records[(model, bus_no)] != [float(v) for v in values]:
            raise SystemExit(f"{model} {row['idx']} departs from the JSON")
        count += len(values)
    if len(records) != len(sheets):
        raise SystemExit(f"{len(records)} dyr records for {len(sheets)} JSON rows")
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
    vs = generator_voltages(x)
    pq = {ld["idx"]: ld for ld in x["PQ"]}
    for z in x["ZIP"]:
        ld = pq[z["pq"]]
        pl, ql, ip, iq, yp, yq = zip_parts(ld, z, vs[int(ld["bus"])])
        v0 = vs[int(ld["bus"])]
        p, q = pl + ip * v0 + yp * v0**2, ql + iq * v0 - yq * v0**2
        if abs(p - ld["p0"] * SBASE) > 1e-12 or abs(q - ld["q0"] * SBASE) > 1e-12:
            raise SystemExit(f"{z['idx']}: the load draws {p} + j {q} MVA at VS, not p0 + j q0")
        count += 2
    return count


if __name__ == "__main__":
    done = write(Path(sys.argv[1]))
    print(f"wrote {STEM}.raw and {STEM}.dyr; {check(done, Path(sys.argv[1]))} values checked")
