"""Write ``ieee14_gast.dyr``, ``ieee14_hygov.dyr`` and ``ieee14_ieesgo.dyr`` from ANDES's IEEE
14-bus governor spreadsheets (``cases/ieee14/ieee14_gast.xlsx``, ``ieee14_hygov.xlsx``,
``ieee14_ieesgo.xlsx`` of the ANDES 2.0.0 distribution: data only), each to run with the unchanged
``ieee14.raw``; then check the network and every written value.

    /tmp/andes-venv/bin/python tests/data/psse/ieee14_governors_from_xlsx.py PATH/TO/cases/ieee14

ANDES is used as an external program only, to read the files (never copied): the checks compare
what ANDES reads from each spreadsheet with what it reads from ``ieee14.raw`` (every numeric
power-flow parameter of Bus, PQ, PV, Slack, Shunt and Line to 1e-12, the buses' starting
voltages to the raw file's printed 1e-5; only the line ratings differ, which no dynamic run
reads) and with the values read back from the written ``.dyr`` (every value of
every record, ANDES's default where a sheet leaves a column out or empty: HYGOV's VELM 0.3 and
all of IEESGO's values). Conventions: GENROU's H = M / 2; PSS/E's CON order for each record
(GAST: R, T1, T2, T3, AT, KT, VMAX, VMIN, DTURB; HYGOV: R, r, Tr, Tf, Tg, VELM, GMAX, GMIN, TW,
At, DTURB, qNL; IEESGO: T1 .. T6, K1, K2, K3, PMAX, PMIN). Left out: the BusFreq measurements,
the Toggler events and, in ``ieee14_gast``, the AC8B exciter of the machine at bus 8 (not a
raptorgrid model; both simulators run the written file, so that machine's field voltage is
constant in both).
"""

from __future__ import annotations

import sys
from pathlib import Path

import andes
import numpy as np

HERE = Path(__file__).resolve().parent
CASES = ("gast", "hygov", "ieesgo")
RECORDS = {
    "GENROU": ("Td10", "Td20", "Tq10", "Tq20", "M", "D", "xd", "xq", "xd1", "xq1", "xd2", "xl",
               "S10", "S12"),
    "TGOV1": ("R", "T1", "VMAX", "VMIN", "T2", "T3", "Dt"),
    "EXST1": ("TR", "VIMAX", "VIMIN", "TC", "TB", "KA", "TA", "VRMAX", "VRMIN", "KC", "KF", "TF"),
    "ESST3A": ("TR", "VIMAX", "VIMIN", "KM", "TC", "TB", "KA", "TA", "VRMAX", "VRMIN", "KG", "KP",
               "KI", "VBMAX", "KC", "XL", "VGMAX", "THETAP", "TM", "VMMAX", "VMMIN"),
    "GAST": ("R", "T1", "T2", "T3", "AT", "KT", "VMAX", "VMIN", "Dt"),
    "HYGOV": ("R", "r", "Tr", "Tf", "Tg", "VELM", "GMAX", "GMIN", "Tw", "At", "Dt", "qNL"),
    "IEESGO": ("T1", "T2", "T3", "T4", "T5", "T6", "K1", "K2", "K3", "PMAX", "PMIN"),
}  # fmt: skip
"""Model -> ANDES's parameter names in PSS/E's CON order (GENROU's M is written as H = M / 2)."""
NETWORK = ("Bus", "PQ", "PV", "Slack", "Shunt", "Line")
RATINGS = {"rate_a", "rate_b", "rate_c"}
START = {("Bus", "v0"), ("Bus", "a0")}
START_TOLERANCE = 1e-5
"""The power flow's starting voltages (pu, rad): ieee14.raw prints them to 5 decimals."""


def load(path: Path):
    return andes.load(str(path), setup=True, default_config=True, no_output=True)


def written_values(model: str, row) -> list[float]:
    values = [float(row[k]) for k in RECORDS[model]]
    if model == "GENROU":
        values[4] /= 2.0  # H = M / 2
    return values


def write(folder: Path, case: str) -> list[tuple[str, int, list[float]]]:
    """Write ``ieee14_<case>.dyr``; returns (model, bus, values) of each record written."""
    ss = load(folder / f"ieee14_{case}.xlsx")
    bus_of = {i: int(b) for i, b in zip(ss.GENROU.idx.v, ss.GENROU.bus.v, strict=True)}
    records = []
    for model in RECORDS:
        mdl = getattr(ss, model)
        if mdl.n == 0:
            continue
        frame = mdl.as_df(vin=True)
        for _, row in frame.iterrows():
            bus = int(row["bus"]) if model == "GENROU" else bus_of[row["syn"]]
            records.append((model, bus, written_values(model, row)))
    text = "".join(
        f"{bus} '{model}' 1 " + " ".join(repr(v) for v in values) + " /\n"
        for model, bus, values in records
    )
    (HERE / f"ieee14_{case}.dyr").write_text(text)
    return records


def check(folder: Path, case: str, records) -> int:
    """Compare the network with ``ieee14.raw`` and read every written value back; returns the
    number of values checked."""
    count = 0
    sheet, raw = load(folder / f"ieee14_{case}.xlsx"), load(HERE / "ieee14.raw")
    for name in NETWORK:
        a, b = getattr(raw, name).as_df(vin=True), getattr(sheet, name).as_df(vin=True)
        if len(a) != len(b):
            raise SystemExit(f"{case}: {name} has {len(b)} rows, ieee14.raw {len(a)}")
        for col in a.columns:
            if col in RATINGS or col == "uid" or a[col].dtype.kind not in "fi":
                continue
            x, y = a[col].to_numpy(float), b[col].to_numpy(float)
            tol = START_TOLERANCE if (name, col) in START else 1e-12
            if not np.allclose(x, y, rtol=0, atol=tol, equal_nan=True):
                raise SystemExit(f"{case}: {name}.{col} differs from ieee14.raw: {y} vs {x}")
            count += len(x)
    read = {}
    for rec in (HERE / f"ieee14_{case}.dyr").read_text().split("/"):
        fields = rec.split()
        if fields:
            read[(fields[1].strip("'"), int(fields[0]))] = [float(v) for v in fields[3:]]
    if len(read) != len(records):
        raise SystemExit(f"{case}: {len(read)} records read back, {len(records)} written")
    for model, bus, values in records:
        if read[(model, bus)] != values:
            raise SystemExit(f"{case}: {model} at bus {bus}: read {read[(model, bus)]}, {values}")
        count += len(values)
    return count


if __name__ == "__main__":
    andes.config_logger(stream_level=40)
    for name in CASES:
        done = write(Path(sys.argv[1]), name)
        models = sorted({m for m, _, _ in done})
        n = check(Path(sys.argv[1]), name, done)
        print(f"wrote ieee14_{name}.dyr ({', '.join(models)}); {n} values checked")
