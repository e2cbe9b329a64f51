"""Write ``ieee14_ieeet1.dyr``, ``ieee14_esst1a.dyr``, ``ieee14_exac1.dyr``, ``ieee14_esac1a.dyr``
from ANDES's IEEE 14-bus spreadsheets ``cases/ieee14/ieee14_<model>.xlsx`` (data only; ANDES is
used as a program to read them, with its documented default for each empty cell), check that
each spreadsheet's network is the one of ``ieee14.raw`` (so the pair is ``ieee14.raw`` + the
written ``.dyr``), then read the written files back and check every value against the
spreadsheet.

    /tmp/andes-venv/bin/python tests/data/psse/ieee14_exciters_from_xlsx.py [ANDES_CASES_DIR]

Each spreadsheet has five GENROU machines (buses 1, 2, 3, 6, 8), a TGOV1 on each, EXST1 on bus 2,
ESST3A on buses 1, 3, 6 and the named exciter on bus 8, whose cells are all empty (ANDES's
defaults; ``ieee14_exac1.xlsx`` gives E1 0, SE(E1) 0, E2 1, SE(E2) 1, its defaults too). Written
in PSS/E's CON order (``PSSE_ORDER``: PSS(R)E Model Library; for ESST1A and ESAC1A it differs from
the order ANDES 2.0.0's ``.dyr`` reader assumes, which ``tests/reference/andes_references.py``
handles). GENROU's H = M / 2. Left out: the BusFreq measurements and the Toggler (a line trip and
reclosure at 1.0 / 1.1 s; the cross-check's events are its own). The network check compares every
numeric parameter of Bus, PQ, PV, Slack, Shunt and Line as ANDES loads the spreadsheet and
``ieee14.raw`` to 1e-12 relative (the raw file holds angles in degrees: round-off), except the
line ratings (rate_a, rate_b, rate_c: not in the spreadsheet, not used in dynamics).
"""

from __future__ import annotations

import sys
from pathlib import Path

import andes
import numpy as np

HERE = Path(__file__).resolve().parent
EXCITERS = ("IEEET1", "ESST1A", "EXAC1", "ESAC1A")
PSSE_ORDER = {
    "GENROU": ("Td10", "Td20", "Tq10", "Tq20", "H", "D", "xd", "xq", "xd1", "xq1", "xd2", "xl",
               "S10", "S12"),
    "TGOV1": ("R", "T1", "VMAX", "VMIN", "T2", "T3", "Dt"),
    "EXST1": ("TR", "VIMAX", "VIMIN", "TC", "TB", "KA", "TA", "VRMAX", "VRMIN", "KC", "KF", "TF"),
    "ESST3A": ("TR", "VIMAX", "VIMIN", "KM", "TC", "TB", "KA", "TA", "VRMAX", "VRMIN", "KG", "KP",
               "KI", "VBMAX", "KC", "XL", "VGMAX", "THETAP", "TM", "VMMAX", "VMMIN"),
    "IEEET1": ("TR", "KA", "TA", "VRMAX", "VRMIN", "KE", "TE", "KF", "TF", "Switch", "E1", "SE1",
               "E2", "SE2"),
    "ESST1A": ("UELc", "VOSc", "TR", "VIMAX", "VIMIN", "TC", "TB", "TC1", "TB1", "KA", "TA",
               "VAMAX", "VAMIN", "VRMAX", "VRMIN", "KC", "KF", "TF", "KLR", "ILR"),
    "EXAC1": ("TR", "TB", "TC", "KA", "TA", "VRMAX", "VRMIN", "TE", "KF", "TF", "KC", "KD", "KE",
              "E1", "SE1", "E2", "SE2"),
    "ESAC1A": ("TR", "TB", "TC", "KA", "TA", "VAMAX", "VAMIN", "TE", "KF", "TF", "KC", "KD", "KE",
               "E1", "SE1", "E2", "SE2", "VRMAX", "VRMIN"),
}  # fmt: skip
"""PSS/E's value order per model, in ANDES's parameter names (ESST1A's ICONs UEL, VOS first)."""
ICONS = {"ESST1A": 2}
NETWORK = ("Bus", "PQ", "PV", "Slack", "Shunt", "Line")
NOT_COMPARED = {"rate_a", "rate_b", "rate_c", "subidx", "name", "idx", "uid"}


def load(path: Path, **kw):
    return andes.load(str(path), setup=True, no_output=True, default_config=True, **kw)


def values(model, name: str) -> np.ndarray:
    if name == "H":
        return np.asarray(model.M.v, float) / 2.0
    return np.asarray(getattr(model, name).v, float)


def check_network(ss, raw) -> int:
    """Every numeric network parameter equal (module docstring); returns the count compared."""
    count = 0
    for m in NETWORK:
        a, b = getattr(ss, m), getattr(raw, m)
        if a.n != b.n:
            raise SystemExit(f"{m}: {a.n} rows in the spreadsheet, {b.n} in ieee14.raw")
        for name, p in a.params.items():
            if name in NOT_COMPARED or not hasattr(p, "v"):
                continue
            va, vb = np.asarray(p.v), np.asarray(getattr(b, name).v)
            try:
                va, vb = va.astype(float), vb.astype(float)
            except (TypeError, ValueError):
                if [str(x) for x in va] != [str(x) for x in vb]:
                    raise SystemExit(f"{m}.{name}: {va} != {vb}") from None
                count += va.size
                continue
            if not np.allclose(va, vb, rtol=1e-12, atol=1e-14, equal_nan=True):
                raise SystemExit(f"{m}.{name}: spreadsheet {va} != ieee14.raw {vb}")
            count += va.size
    return count


def fmt(value: float) -> str:
    return str(int(value)) if value == int(value) and abs(value) < 1e6 else repr(float(value))


def records(ss, exciter: str) -> list[tuple[str, int, list[float]]]:
    """(model, bus, values in PSS/E order) of every device record, machines first."""
    gen = ss.GENROU
    bus_of = {idx: int(b) for idx, b in zip(gen.idx.v, gen.bus.v, strict=True)}
    out = [("GENROU", bus_of[i], [float(values(gen, n)[k]) for n in PSSE_ORDER["GENROU"]])
           for k, i in enumerate(gen.idx.v)]  # fmt: skip
    for model in ("TGOV1", "EXST1", "ESST3A", exciter):
        mdl = getattr(ss, model)
        for k, syn in enumerate(mdl.syn.v):
            out.append((model, bus_of[syn], [float(values(mdl, n)[k]) for n in PSSE_ORDER[model]]))
    return out


def write(ss, exciter: str) -> Path:
    lines = []
    for model, bus, vals in records(ss, exciter):
        text = " ".join(fmt(v) for v in vals)
        lines.append(f"{bus} '{model}' 1 {text} /")
    path = HERE / f"ieee14_{exciter.lower()}.dyr"
    path.write_text("\n".join(lines) + "\n")
    return path


def read_back(path: Path) -> list[tuple[str, int, list[float]]]:
    out = []
    for rec in path.read_text().split("/"):
        fields = rec.split()
        if fields:
            out.append((fields[1].strip("'"), int(fields[0]), [float(v) for v in fields[3:]]))
    return out


def main() -> None:
    cases = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(andes.__file__).parent / "cases"
    andes.config_logger(stream_level=40)
    raw = load(HERE / "ieee14.raw")
    for exciter in EXCITERS:
        ss = load(cases / "ieee14" / f"ieee14_{exciter.lower()}.xlsx")
        n_net = check_network(ss, raw)
        path = write(ss, exciter)
        expected, found = records(ss, exciter), read_back(path)
        if [(m, b) for m, b, _ in expected] != [(m, b) for m, b, _ in found]:
            raise SystemExit(f"{path.name}: records differ from the spreadsheet's")
        n_dyn = 0
        for (model, bus, want), (_, _, got) in zip(expected, found, strict=True):
            if len(got) != len(PSSE_ORDER[model]) or got != want:
                raise SystemExit(f"{path.name}: {model} at bus {bus}: {got} != {want}")
            n_dyn += len(got)
        print(f"{path.name}: {len(found)} records, {n_dyn} dynamic values and {n_net} network "
              f"values (ieee14.raw) checked against ieee14_{exciter.lower()}.xlsx")  # fmt: skip


if __name__ == "__main__":
    main()
