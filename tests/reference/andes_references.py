"""Reference trajectories from ANDES for the PSS/E cross-check (``tests/test_psse_crosscheck.py``).

ANDES (GPL) is used only as an external program: run this script with the Python of a separate
virtual environment that has ``pip install andes`` (never install it into the project's), e.g.

    python3 -m venv /tmp/andes-venv && /tmp/andes-venv/bin/pip install andes==2.0.0
    /tmp/andes-venv/bin/python tests/reference/andes_references.py [CASE ...]

It reads the ``.raw``/``.dyr`` pairs of ``tests/data/psse``, runs ANDES's power flow (tolerance
1e-12) and its implicit-trapezoid time domain simulation at a fixed step of 1 ms and of 1/30 s for
each event of ``CASES``, and writes for each case and event ``<case>_<event>.csv`` (the 1 ms run
interpolated onto a 10 ms grid, times within 1.5 ms of an event left out: t, omega[gen],
delta[gen], V[bus]; generator names gen<bus>_<id>, bus names bus<number>) and ``spread.json``
(per case, event and quantity the largest difference between the 1/30 s run and the 1 ms run at
the 1/30 s run's points: ANDES's own step-size spread, from which the test tolerances are
stated; rotor angles relative to the first machine; a tripped machine left out, since ANDES
freezes the states of a machine it switches off while raptorgrid lets it run unloaded),
``cases.json`` (the events) and ``power_flow.json`` (ANDES's solved bus voltages).
"""

from __future__ import annotations

import csv
import json
import re
import sys
import tempfile
from pathlib import Path

import andes
import numpy as np
import yaml

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data" / "psse"
OUT = HERE / "andes"
T_END = 3.0
T_EVENT = 0.5
T_CLEAR = 0.6
FAULT_X = 0.01
"""Fault reactance (pu on the system base; resistance 0)."""

KUNDUR_EVENTS = {"fault_bus": 8, "line": (7, 8, "1"), "gen": (3, "1")}
IEEE14_EVENTS = {"fault_bus": 9, "line": (4, 5, "1"), "gen": (3, "1")}
CASES = {
    "kundur_gencls": ("kundur.raw", "kundur_gencls.dyr", KUNDUR_EVENTS),
    "kundur_genrou": ("kundur.raw", "kundur_genrou_tgov1.dyr", KUNDUR_EVENTS),
    "kundur_sexs": ("kundur.raw", "kundur_sexs_tgov1.dyr", KUNDUR_EVENTS),
    "kundur_full": ("kundur.raw", "kundur_full.dyr", KUNDUR_EVENTS),
    "ieee14_genrou": (
        "ieee14.raw", "ieee14_genrou_tgov1.dyr",
        {"fault_bus": 9, "line": (4, 5, "1"), "gen": (3, "1")},
    ),
    "ieee14_exst1": (
        "ieee14.raw", "ieee14_exst1_ieeeg1.dyr",
        {"fault_bus": 9, "line": (4, 5, "1"), "gen": (3, "1")},
    ),
    "ieee14_full": (
        "ieee14.raw", "ieee14.dyr",
        {"fault_bus": 9, "line": (4, 5, "1"), "gen": (3, "1")},
    ),
    "ieee14_ieesgo": ("ieee14.raw", "ieee14_ieesgo.dyr", IEEE14_EVENTS),
    "ieee14_hygov": ("ieee14.raw", "ieee14_hygov.dyr", IEEE14_EVENTS),
    "ieee14_gast": ("ieee14.raw", "ieee14_gast.dyr", IEEE14_EVENTS),
    "ieee14_solar": ("ieee14_solar.raw", "ieee14_solar.dyr", IEEE14_EVENTS),
    "ieee14_pvd1": ("ieee14_pvd1.raw", "ieee14_pvd1.dyr", IEEE14_EVENTS),
    "ieee14_zip": (
        "ieee14_zip.raw", "ieee14_zip.dyr",
        {**IEEE14_EVENTS, "loads": "as given", "fault_x": 0.3},
    ),
    "npcc_full": (
        "npcc.raw", "npcc_full.dyr", {"fault_bus": 1, "line": (1, 2, "1"), "gen": (24, "1")}
    ),
    "wecc_gencls": (
        "wecc.raw", "wecc_gencls.dyr", {"fault_bus": 38, "line": (38, 45, "1"), "gen": (39, "1")}
    ),
    "wecc_full": (
        "wecc.raw", "wecc_full.dyr", {"fault_bus": 38, "line": (38, 45, "1"), "gen": (39, "1")}
    ),
    "ieee39_repaired": (
        "ieee39_repaired.raw", "ieee39_repaired.dyr",
        {"fault_bus": 16, "line": (16, 17, "1"), "gen": (38, "1")},
    ),
    **{
        f"ieee14_{name}": (
            "ieee14.raw", f"ieee14_{name}.dyr",
            {"fault_bus": 9, "line": (4, 5, "1"), "gen": (3, "1")},
        )
        for name in ("ieeet1", "esst1a", "exac1", "esac1a")
    },
}  # fmt: skip
"""case -> (raw, dyr, events): a bus fault (T_EVENT to T_CLEAR, x = FAULT_X, or the case's
``fault_x``), a line trip (from, to, circuit) and a generator trip (bus, machine ID), each at
T_EVENT; ``loads``: see ``LOADS_AS_GIVEN``. ieee14_zip's fault is x = 0.3 pu: its loads kept
constant power, ANDES 2.0.0 stops at the fault ("time step reduced to zero") with x = 0.01 and
0.1 pu (1 ms) and at 0.549 s with 0.2 pu; with 0.3 pu it runs (lowest bus voltage 0.41 pu)."""
PSSE_ORDER = {
    "ESST1A": ("UEL", "VOS", "TR", "VIMAX", "VIMIN", "TC", "TB", "TC1", "TB1", "KA", "TA", "VAMAX",
               "VAMIN", "VRMAX", "VRMIN", "KC", "KF", "TF", "KLR", "ILR"),
    "ESAC1A": ("TR", "TB", "TC", "KA", "TA", "VAMAX", "VAMIN", "TE", "KF", "TF", "KC", "KD", "KE",
               "E1", "SE1", "E2", "SE2", "VRMAX", "VRMIN"),
}  # fmt: skip
"""PSS/E's value order (PSS(R)E Model Library) of the models whose order ANDES 2.0.0's ``.dyr``
reader (``andes/io/psse-dyr.yaml``) takes differently: their records are rewritten into the
reader's order before ANDES reads them (``andes_reader_order``), and the values ANDES loads are
checked against the record's (``check_loaded``)."""
ANDES_NAME = {"UEL": "UELc", "VOS": "VOSc"}
"""ANDES's parameter names where they differ from the reader's input names."""
COARSE = {("ieee14_solar", "fault"): 1 / 250}
"""The coarse step of a spread where ANDES 2.0.0 cannot run 1/30 s: in ieee14_solar's fault its
1/30 s and 1/60 s runs stop at the clearing ("time step reduced to zero": ESST3A's rectifier
function meets a negative square root) and its 1/120 s run ends at a wrong point (bus 9 stays at
0.25 pu after the clearing); its 1/250 s run follows the 1 ms run."""
PVD1_ORDER = ("IGREG", "Pqflag", "Xc", "Qmx", "Qmn", "v0", "v1", "dqdv", "fdbd", "Ddn", "Imax",
              "Vt0", "Vt1", "Vt2", "Vt3", "Vrflag", "Ft0", "Ft1", "Ft2", "Ft3", "Frflag", "Tg",
              "Tf", "Vtmax", "Lvpnt1", "Lvpnt0", "Qmin", "Khv")  # fmt: skip
"""The PVD1 record's order (``models/devices/pvd1.py``). ANDES 2.0.0's ``.dyr`` reader has no
PVD1: its records are left out of the file ANDES reads and added as ANDES PVD1 devices
(``add_pvd1``), each with a BusFreq at its bus."""
PVD1_TW = 0.02
"""The washout of the frequency PVD1 measures (``models.devices.pvd1.TW_FREQ``): the Tw of the
BusFreq each ANDES PVD1 reads."""
RECLOSE_CASES = ("ieee14_genrou",)
"""Cases with a fourth event, ``reclose``: the line of ``line`` tripped at T_EVENT and reclosed
at T_CLEAR (ANDES's two ``Toggle`` records on it)."""
LOADS_AS_GIVEN = "as given"
"""A case's ``loads`` entry for loads kept as the .raw gives them in ANDES's dynamics
(``as_given_loads``); without it ANDES's default conversion applies (its PQ config p2z = q2z = 1:
every load constant admittance in the time domain)."""
POWER_FLOW_ONLY = ("ieee39.raw", "npcc.raw")
"""Raw files whose solved voltages are stored too (no dynamic reference)."""


def power_flow(raw: Path) -> dict:
    ss = andes.load(str(raw), setup=True, default_config=True, no_output=True)
    ss.PFlow.config.tol = 1e-12
    ss.PFlow.run()
    return {
        f"bus{int(b)}": [float(v), float(a)]
        for b, v, a in zip(ss.Bus.idx.v, ss.Bus.v.v, ss.Bus.a.v, strict=True)
    }


def machines(dyr: Path) -> list[tuple[int, str, str]]:
    """(bus, id, model) of the machine records in file order (the order ANDES adds them)."""
    out = []
    text = dyr.read_text()
    for rec in re.split(r"/", text):
        fields = rec.replace(",", " ").split()
        if len(fields) >= 3 and fields[1].strip("'").upper() in ("GENCLS", "GENROU", "GENSAL"):
            out.append((int(fields[0]), fields[2].strip("'"), fields[1].strip("'").upper()))
    return out


def device_records_only(dyr: Path, folder: Path) -> Path:
    """A copy of ``dyr`` without ANDES's event records (``Line 'Toggle' ...``): the events of a
    reference run are the ones this script adds."""
    kept = [r for r in dyr.read_text().split("/") if r.split() and r.split()[0].isdigit()
            and r.split()[1].strip("'").upper() != "PVD1"]  # fmt: skip
    out = folder / dyr.name
    out.write_text("/\n".join(r.strip("\n") for r in kept) + "/\n")
    return out


def reader_inputs() -> dict[str, list[str]]:
    """ANDES's ``.dyr`` reader order of each model of ``PSSE_ORDER`` (its ``psse-dyr.yaml``)."""
    table = yaml.safe_load((Path(andes.__file__).parent / "io" / "psse-dyr.yaml").read_text())
    return {m: [str(n) for n in table[m]["inputs"][2:]] for m in PSSE_ORDER}


def psse_records(dyr: Path, model: str) -> list[tuple[int, list[float]]]:
    """(bus, values in PSS/E order) of the ``model`` records of ``dyr``."""
    out = []
    for rec in dyr.read_text().split("/"):
        fields = rec.split()
        if len(fields) > 3 and fields[0].isdigit() and fields[1].strip("'").upper() == model:
            out.append((int(fields[0]), [float(v) for v in fields[3:]]))
    return out


def andes_reader_order(dyr: Path) -> Path:
    """``dyr`` (a copy of it in the same folder) with each ``PSSE_ORDER`` record's values put in
    the order ANDES's reader takes them (same values, same names)."""
    order = reader_inputs()
    kept = []
    for rec in dyr.read_text().split("/"):
        fields = rec.split()
        model = fields[1].strip("'").upper() if len(fields) > 3 else ""
        if model in PSSE_ORDER:
            named = dict(zip(PSSE_ORDER[model], fields[3:], strict=True))
            rec = " ".join(fields[:3] + [named[n] for n in order[model]])
        if rec.split():
            kept.append(rec.strip("\n"))
    out = dyr.with_name("andes_order_" + dyr.name)
    out.write_text("/\n".join(kept) + "/\n")
    return out


def check_loaded(ss, dyr: Path) -> None:
    """Each ``PSSE_ORDER`` model's values as ANDES loaded them equal the PSS/E record's."""
    for model, names in PSSE_ORDER.items():
        records = psse_records(dyr, model)
        if not records:
            continue
        mdl = getattr(ss, model)
        if mdl.n != len(records):
            raise SystemExit(f"{model}: ANDES loaded {mdl.n} records of {len(records)}")
        for k, (_, vals) in enumerate(records):
            for name, value in zip(names, vals, strict=True):
                got = float(getattr(mdl, ANDES_NAME.get(name, name)).v[k])
                if got != value:
                    raise SystemExit(f"{model} record {k}: ANDES read {name} = {got}, not {value}")


def as_given_loads(ss, raw: Path) -> None:
    """ANDES's own load handling made to keep the .raw's load parts: ANDES's reader makes each
    load record one constant-power PQ of p0 = PL + IP V + YP V^2 (and q0 = QL + IQ V - YQ V^2) at
    the raw's VM (``andes/io/psse.py``); here its PQ loads stay constant power in the time domain
    (``p2p = q2q = 1``) and each record with a constant-current or constant-admittance part gets
    a ``ZIP`` on its PQ (which ANDES switches off in the time domain), with the parts'
    percentages at the raw's VM: kpp = 100 PL / p0, kpi = 100 IP V / p0, kpz = 100 YP V^2 / p0
    (and for Q). ANDES's ZIP splits the PQ's solved power by them at the solved voltage, so the
    two agree where the solved voltage is the raw's VM (a generator bus written at its VS)."""
    for key, value in (("p2p", 1.0), ("p2i", 0.0), ("p2z", 0.0), ("q2q", 1.0), ("q2i", 0.0),
                       ("q2z", 0.0)):  # fmt: skip
        setattr(ss.PQ.config, key, value)
    vm = {}
    loads = []
    section = "bus"
    for line in raw.read_text().splitlines()[3:]:
        fields = [f.strip() for f in line.split("/")[0].split(",")]
        if fields[0] == "0":
            if section == "load":
                break
            section = "load"
            continue
        if section == "bus":
            vm[int(fields[0])] = float(fields[7])
        else:
            loads.append((int(fields[0]), [float(v) for v in fields[5:11]]))
    pq = list(zip(ss.PQ.idx.v, ss.PQ.bus.v, strict=True))
    for k, (bus, (pl, ql, ip, iq, yp, yq)) in enumerate(loads):
        if not any((ip, iq, yp, yq)):
            continue
        if int(pq[k][1]) != bus:
            raise SystemExit(f"PQ {pq[k][0]} is at bus {pq[k][1]}, load record {k} at {bus}")
        v = vm[bus]
        p, q = pl + ip * v + yp * v**2, ql + iq * v - yq * v**2
        ss.add("ZIP", {"pq": pq[k][0], "kpp": 100 * pl / p, "kpi": 100 * ip * v / p,
                       "kpz": 100 * yp * v**2 / p, "kqp": 100 * ql / q, "kqi": 100 * iq * v / q,
                       "kqz": -100 * yq * v**2 / q})  # fmt: skip


def raw_machines(raw: Path) -> list[tuple[int, str]]:
    """(bus, id) of the raw file's generator records in order."""
    text = raw.read_text().splitlines()
    start = next(k for k, s in enumerate(text) if "BEGIN GENERATOR DATA" in s.upper())
    out = []
    for line in text[start + 1 :]:
        if line.strip().startswith("0 /") or line.strip() == "0":
            break
        fields = [f.strip() for f in line.split(",")]
        out.append((int(fields[0]), fields[1].strip("'").strip()))
    return out


def add_pvd1(ss, raw: Path, dyr: Path) -> None:
    """Each PVD1 record of ``dyr`` as an ANDES PVD1 on its machine's PV generator (the whole of
    it: gammap = gammaq = 1, Sn its MBASE), reading a BusFreq at its bus (Tf the record's, Tw
    ``PVD1_TW``). ANDES takes fdbd in Hz and Ddn in pu/Hz (the record: per unit of frequency),
    has two lags Tip = Tiq = Tg, and has none of Vtmax, Lvpnt1, Lvpnt0, Qmin, Khv: a record whose
    values of these would act (Khv != 0, Lvpnt0 != 0, Lvpnt1 > 0.01, Qmin > -Imax) is refused."""
    records = psse_records(dyr, "PVD1")
    ids = [r.split()[2].strip("'") for r in dyr.read_text().split("/")
           if len(r.split()) > 3 and r.split()[1].strip("'").upper() == "PVD1"]  # fmt: skip
    order = raw_machines(raw)
    pv_at = {}  # the ANDES PV of each raw machine (ANDES adds a bus's PV records in raw order)
    for b in sorted({b for b, _ in order}):
        pvs = [i for i, pb in zip(ss.PV.idx.v, ss.PV.bus.v, strict=True) if int(pb) == b]
        gids = [g for ob, g in order if ob == b]
        if len(pvs) == len(gids):
            pv_at.update({(b, g): i for g, i in zip(gids, pvs, strict=True)})
    fn = float(ss.config.freq)
    freq_of = {}
    for (bus, values), gid in zip(records, ids, strict=True):
        v = dict(zip(PVD1_ORDER, values, strict=True))
        if v["Khv"] != 0 or v["Lvpnt0"] != 0 or v["Lvpnt1"] > 0.01 or v["Qmin"] > -v["Imax"]:
            raise SystemExit(f"PVD1 at bus {bus} '{gid}': a logic ANDES's PVD1 lacks would act")
        if v["IGREG"] != 0:
            raise SystemExit(f"PVD1 at bus {bus} '{gid}': IGREG != 0")
        if bus not in freq_of:
            freq_of[bus] = ss.add("BusFreq", {"bus": bus, "Tf": v["Tf"], "Tw": PVD1_TW, "fn": fn})
        gen = pv_at[(bus, gid)]
        sn = float(ss.PV.Sn.v[ss.PV.idx.v.index(gen)])
        ss.add("PVD1", {
            "bus": bus, "gen": gen, "Sn": sn, "fn": fn, "busf": freq_of[bus], "xc": v["Xc"],
            "pqflag": v["Pqflag"], "qmx": v["Qmx"], "qmn": v["Qmn"], "v0": v["v0"], "v1": v["v1"],
            "dqdv": v["dqdv"], "fdbd": v["fdbd"] * fn, "ddn": v["Ddn"] / fn, "ialim": v["Imax"],
            "vt0": v["Vt0"], "vt1": v["Vt1"], "vt2": v["Vt2"], "vt3": v["Vt3"],
            "vrflag": v["Vrflag"], "ft0": v["Ft0"], "ft1": v["Ft1"], "ft2": v["Ft2"],
            "ft3": v["Ft3"], "frflag": v["Frflag"], "tip": v["Tg"], "tiq": v["Tg"],
            "gammap": 1.0, "gammaq": 1.0,
        })  # fmt: skip


def run(raw: Path, dyr: Path, event: str, spec: dict, h: float):
    with tempfile.TemporaryDirectory() as folder:
        plain = andes_reader_order(device_records_only(dyr, Path(folder)))
        ss = andes.load(str(raw), addfile=str(plain), setup=False, default_config=True,
                        no_output=True)  # fmt: skip
    if psse_records(dyr, "PVD1"):
        add_pvd1(ss, raw, dyr)
    gens = machines(dyr)
    if event == "fault":
        fault = {"bus": spec["fault_bus"], "tf": T_EVENT, "tc": T_CLEAR, "rf": 0.0}
        ss.add("Fault", {**fault, "xf": spec.get("fault_x", FAULT_X)})
    elif event == "line":
        f, t, ckt = spec["line"]
        idx = [
            i for i, a, b in zip(ss.Line.idx.v, ss.Line.bus1.v, ss.Line.bus2.v, strict=True)
            if {int(a), int(b)} == {f, t}
        ]  # fmt: skip
        ss.add("Toggle", {"model": "Line", "dev": idx[int(ckt) - 1], "t": T_EVENT})
    elif event == "reclose":  # two toggles of the line: trip at T_EVENT, reclose at T_CLEAR
        f, t, ckt = spec["line"]
        idx = [
            i for i, a, b in zip(ss.Line.idx.v, ss.Line.bus1.v, ss.Line.bus2.v, strict=True)
            if {int(a), int(b)} == {f, t}
        ]  # fmt: skip
        for when in (T_EVENT, T_CLEAR):
            ss.add("Toggle", {"model": "Line", "dev": idx[int(ckt) - 1], "t": when})
    elif event == "gen":
        bus, gid = spec["gen"]
        k = [i for i, (b, g, _) in enumerate(gens) if b == bus and g == gid][0]
        model = gens[k][2]
        mdl = getattr(ss, model)
        dev = [i for i, b in zip(mdl.idx.v, mdl.bus.v, strict=True) if int(b) == bus][0]
        ss.add("Toggle", {"model": model, "dev": dev, "t": T_EVENT})
    if spec.get("loads") == LOADS_AS_GIVEN:
        as_given_loads(ss, raw)
    ss.setup()
    check_loaded(ss, dyr)
    ss.PFlow.config.tol = 1e-12
    ss.PFlow.run()
    pf = {
        f"bus{int(b)}": [float(v), float(a)]
        for b, v, a in zip(ss.Bus.idx.v, ss.Bus.v.v, ss.Bus.a.v, strict=True)
    }
    ss.TDS.config.tf = T_END
    ss.TDS.config.tstep = h
    ss.TDS.config.fixt = 1
    ss.TDS.config.shrinkt = 0
    ss.TDS.config.no_tqdm = 1
    ss.TDS.config.criteria = 0  # run the horizon out; the tripped machine may slip poles
    ss.TDS.run()
    t = np.asarray(ss.dae.ts.t)
    cols: dict[str, np.ndarray] = {}
    counters: dict[str, int] = {}
    for bus, gid, model in gens:
        mdl = getattr(ss, model)
        k = counters.get(model, 0)
        counters[model] = k + 1
        name = f"gen{bus}_{gid}"
        cols[f"omega[{name}]"] = ss.dae.ts.x[:, mdl.omega.a[k]]
        cols[f"delta[{name}]"] = ss.dae.ts.x[:, mdl.delta.a[k]]
    for k, bus in enumerate(ss.Bus.idx.v):
        cols[f"V[bus{int(bus)}]"] = ss.dae.ts.y[:, ss.Bus.v.a[k]]
    return t, cols, pf


def sample(t: np.ndarray, cols: dict, times: np.ndarray, skip: tuple[float, ...]):
    """Values at ``times`` (linear interpolation of the run; ANDES steps around each event, so its
    points are offset from a regular grid), leaving out times within 1.5 ms of an event."""
    keep = np.array([all(abs(g - s) > 1.5e-3 for s in skip) for g in times])
    grid = times[keep]
    return grid, {k: np.interp(grid, t, v) for k, v in cols.items()}


def _stored(name: str) -> dict:
    path = OUT / name
    return json.loads(path.read_text()) if path.exists() else {}


def main() -> None:
    """All of ``CASES``, or those named on the command line (merged into the stored files)."""
    OUT.mkdir(parents=True, exist_ok=True)
    andes.config_logger(stream_level=40)
    chosen = sys.argv[1:] or list(CASES)
    unknown = sorted(set(chosen) - set(CASES))
    if unknown:
        raise SystemExit(f"unknown cases {unknown}; valid: {sorted(CASES)}")
    spread, power_flows = {}, {}
    for case in chosen:
        raw, dyr, spec = CASES[case]
        for event in ("fault", "line", "gen", *(("reclose",) if case in RECLOSE_CASES else ())):
            skip = (T_EVENT, T_CLEAR) if event in ("fault", "reclose") else (T_EVENT,)
            t1, c1, pf = run(DATA / raw, DATA / dyr, event, spec, 1e-3)
            t2, c2, _ = run(DATA / raw, DATA / dyr, event, spec, COARSE.get((case, event), 1 / 30))
            power_flows[raw] = pf
            grid, fine = sample(t1, c1, np.round(np.arange(0.0, T_END + 1e-9, 0.01), 6), skip)
            path = OUT / f"{case}_{event}.csv"
            with path.open("w", newline="") as fh:
                writer = csv.writer(fh)
                writer.writerow(["t", *fine])
                for i, tv in enumerate(grid):
                    writer.writerow([f"{tv:.3f}", *(f"{fine[k][i]:.10g}" for k in fine)])
            _, a = sample(t1, c1, t2, skip)  # the 1 ms run at the 1/30 s run's points
            _, b = sample(t2, c2, t2, skip)
            per = {}
            tripped = f"gen{spec['gen'][0]}_{spec['gen'][1]}" if event == "gen" else None
            for kind in ("omega", "delta", "V"):
                keys = [k for k in a if k.startswith(kind + "[") and f"[{tripped}]" not in k]
                if kind == "delta":  # relative to the first machine
                    ref = keys[0]
                    diff = max(np.max(np.abs((a[k] - a[ref]) - (b[k] - b[ref]))) for k in keys)
                else:
                    diff = max(np.max(np.abs(a[k] - b[k])) for k in keys)
                per[kind] = float(diff)
            spread[f"{case}_{event}"] = per
            print(case, event, per, flush=True)
    for raw in POWER_FLOW_ONLY:
        power_flows[raw] = power_flow(DATA / raw)
    # merged into the stored files as they are now (another case's run may have written them)
    spread = {**_stored("spread.json"), **spread}
    power_flows = {**_stored("power_flow.json"), **power_flows}
    (OUT / "spread.json").write_text(json.dumps(spread, indent=1, sort_keys=True) + "\n")
    cases = {**_stored("cases.json").get("cases", {}),
             **{c: {"raw": r, "dyr": d, **e} for c, (r, d, e) in CASES.items()
                if c in chosen}}  # fmt: skip
    meta = {"cases": cases, "t_end": T_END, "t_event": T_EVENT, "t_clear": T_CLEAR,
            "fault_x": FAULT_X, "andes": andes.__version__}  # fmt: skip
    (OUT / "cases.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    (OUT / "power_flow.json").write_text(json.dumps(power_flows, indent=1, sort_keys=True) + "\n")
    print("andes", andes.__version__, "python", sys.version.split()[0], file=sys.stderr)


if __name__ == "__main__":
    main()
