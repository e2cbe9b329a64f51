"""Our trajectories on PSS/E data against ANDES's (``tests/reference/andes``; regenerate with
``tests/reference/andes_references.py`` in a separate environment). Tolerance per case, event
and quantity: ANDES's own step-size spread (its 1/30 s run against its 1 ms run), so a pass
means we agree with ANDES's 1 ms trajectory better than ANDES at its usual step agrees with
itself. Loads: constant admittance in dynamics on both sides (ANDES's default conversion, asked
for explicitly: ``tests.psse_crosscheck.load_conversion``), except the cases whose reference keeps
the .raw's load parts (``"loads": "as given"``, e.g. ieee14_zip)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from models.devices import ESDC2A, EXDC2, IEEEST, MODELS
from models.devices import esac1a as esac1a_module
from models.devices.base import DeviceModel, lag, lead_lag, non_windup, saturation
from models.devices.esdc2a import NO_LIMIT
from models.devices.esst3a import _fex as esst3a_fex
from models.devices.exac1 import ac_vfe
from models.devices.exdc2 import _init as exdc2_init
from models.psse.case import ANDES_LOAD_CONVERSION, build_psse_case
from models.psse.dyr import parse_dyr
from models.psse.raw import parse_raw
from tests.psse_crosscheck import (
    DATA,
    EVENTS,
    KINDS,
    deviations,
    load_conversion,
    metadata,
    reference,
    spread,
    system,
)

ANDES_DEPARTS = {"kundur_full": "EXDC2", "ieee39_repaired": "IEEEST",
                 "wecc_full": "ESDC2A, IEEEG1", "ieee14_exac1": "EXAC1",
                 "ieee14_esac1a": "ESAC1A", "ieee14_hygov": "HYGOV",
                 "ieee14_pvd1": "PVD1"}  # fmt: skip
"""Cases whose models ANDES 2.0.0 writes differently from PSS/E's block diagram: compared within
ANDES's spread only with that departure given to ours (``andes_exdc2``, ``andes_ieeest``,
``andes_esdc2a`` with ``andes_ieeeg1_rates``, ``andes_hygov``; PVD1's self-resetting trips in
``tests/test_psse_pvd1.py``); see ``docs/models.md``."""
CASES = sorted(set(metadata()["cases"]) - set(ANDES_DEPARTS))
RADAU = {"rtol": 1e-6, "atol": 1e-8}
"""Our runs' tolerances: their integration error is below 0.5 % of ANDES's spread on every case
and event (each deviation / spread ratio at rtol 1e-6 within 0.004 of the ratio at rtol 1e-7,
measured 2026-12-04), at 60 % of rtol 1e-7's CPU. (At rtol 1e-5 it is not: wecc_gencls's line
trip's speed ratio moves from 0.008 to 0.18.)"""


@pytest.mark.parametrize("event", EVENTS)
@pytest.mark.parametrize("case", CASES)
def test_radau_matches_andes_within_its_step_spread(case: str, event: str) -> None:
    found = deviations(case, event, "radau", **RADAU)
    assert found["succeeded"] == 1.0
    allowed = spread()[f"{case}_{event}"]
    for kind in KINDS:
        assert found[kind] <= allowed[kind], (kind, found[kind], allowed[kind])


def test_raptor_matches_andes_on_a_genrou_fault() -> None:
    found = deviations("kundur_genrou", "fault", "raptor", rtol=1e-6)
    allowed = spread()["kundur_genrou_fault"]
    assert found["succeeded"] == 1.0
    for kind in KINDS:
        assert found[kind] <= allowed[kind], (kind, found[kind], allowed[kind])


def andes_exdc2() -> DeviceModel:
    """EXDC2 with ANDES 2.0.0's two departures from PSS/E's block diagram, for the cross-check
    only (written from ANDES's documented equations, no ANDES code): regulator limits VRMIN,
    VRMAX not multiplied by VT (non-windup), and the field voltage its exciter state times the
    machine speed (the rate feedback reads the state before that product)."""

    def init(efd, vt, p, sig):
        return EXDC2.init(efd, vt, {**p, "VRMAX": p["VRMAX"] / vt, "VRMIN": p["VRMIN"] / vt})

    def derivatives(xs, vt, vref, vs, p, sig):
        vc, xl, vr, vp, xf = xs
        d_vc, vc_out = lag(vc, vt, p["TR"])
        u = vref - vc_out + vs - p["KF"] * (vp - xf) / p["TF1"]
        d_xl, y = lead_lag(xl, u, p["TC"], p["TB"])
        d_vr = non_windup((p["KA"] * y - vr) / p["TA"], vr, p["VRMIN"], p["VRMAX"])
        se = saturation(vp, p["sat_a"], p["sat_b"])
        d_vp = (jnp.clip(vr, p["VRMIN"], p["VRMAX"]) - (p["KE"] + se) * vp) / p["TE"]
        return d_vc, d_xl, d_vr, d_vp, (vp - xf) / p["TF1"]

    def output(xs, vt, p, sig):
        return xs[3] * sig["omega"]

    return DeviceModel(name="EXDC2", role="exciter", params=EXDC2.params, states=EXDC2.states,
                       source="ANDES 2.0.0 EXDC2 (cross-check only)", check=EXDC2.check,
                       init=init, derivatives=derivatives, output=output,
                       inputs=("omega",))  # fmt: skip


@pytest.mark.parametrize("event", EVENTS)
def test_kundur_full_exdc2_matches_andes_given_its_departures(event: str, monkeypatch) -> None:
    """kundur_full (GENROU, EXDC2, TGOV1): with ANDES's EXDC2 departures our run lies within
    ANDES's spread; with PSS/E's EXDC2 it runs through (the moving limit binds in the fault)
    and departs by the amounts measured in ``docs/models.md``."""
    spec = metadata()["cases"]["kundur_full"]
    raw, dyr = (DATA / spec["raw"]).read_text(), (DATA / spec["dyr"]).read_text()
    allowed = spread()[f"kundur_full_{event}"]
    found = deviations("kundur_full", event, "radau", **RADAU)
    assert found["succeeded"] == 1.0
    assert max(found[k] / allowed[k] for k in KINDS) > 1.0  # the departure shows
    monkeypatch.setitem(MODELS, "EXDC2", andes_exdc2())
    built = build_psse_case(raw, dyr, "kundur_full", raw_file=spec["raw"], dyr_file=spec["dyr"],
                            load_conversion=load_conversion("kundur_full"))  # fmt: skip
    found = deviations("kundur_full", event, "radau", built=built, **RADAU)
    assert found["succeeded"] == 1.0
    for kind in KINDS:
        assert found[kind] <= allowed[kind], (kind, found[kind], allowed[kind])


def andes_ieeest(ra: np.ndarray) -> DeviceModel:
    """IEEEST with ANDES 2.0.0's input for code 3, for the cross-check only (written from ANDES's
    documented equations, no ANDES code): the air-gap power (its electrical torque te) instead of
    PSS/E's electrical power at the terminals, i.e. PELEC + Ra (Id^2 + Iq^2), Ra the machine's
    ZSORCE resistance (``ra``: per IEEEST instance, in record order). Equal when Ra = 0."""

    def air_gap(sig):
        return {**sig, "pe": sig["pe"] + ra * (sig["Id"] ** 2 + sig["Iq"] ** 2)}

    def init(sig, p):
        return IEEEST.init({k: np.asarray(v) for k, v in air_gap(sig).items()}, p)

    return DeviceModel(name="IEEEST", role="stabilizer", params=IEEEST.params,
                       states=IEEEST.states, source="ANDES 2.0.0 IEEEST (cross-check only)",
                       check=IEEEST.check, init=init,
                       derivatives=lambda xs, sig, p: IEEEST.derivatives(xs, air_gap(sig), p),
                       output=lambda xs, sig, p: IEEEST.output(xs, air_gap(sig), p))  # fmt: skip


@pytest.mark.parametrize("event", EVENTS)
def test_ieee39_repaired_matches_andes_given_its_ieeest_input(event: str, monkeypatch) -> None:
    """ieee39_repaired (GENROU with the repaired X''d, IEEEX1, TGOV1, IEEEST on all ten machines):
    ANDES's IEEEST code 3 reads the air-gap power, PSS/E's the terminal power; the machines' Ra
    (up to 0.0615 pu, bus 35) make them differ. With PSS/E's input the generator trip departs
    from ANDES by more than ANDES's spread in bus voltage (the washout passes the slow change of
    Ra I^2 as the other machines take up the lost power; the fault and the line trip stay within
    the spread); with ANDES's input all three events lie well within it."""
    spec = metadata()["cases"]["ieee39_repaired"]
    raw, dyr = (DATA / spec["raw"]).read_text(), (DATA / spec["dyr"]).read_text()
    allowed = spread()[f"ieee39_repaired_{event}"]
    found = deviations("ieee39_repaired", event, "radau", **RADAU)
    assert found["succeeded"] == 1.0
    worst = max(found[k] / allowed[k] for k in KINDS)
    assert worst > 1.0 if event == "gen" else worst <= 1.0, (found, allowed)
    ra = {g.bus: g.zr for g in parse_raw(raw, spec["raw"]).generators}
    order = [r.bus for r in parse_dyr(dyr, spec["dyr"]).records if r.model == "IEEEST"]
    monkeypatch.setitem(MODELS, "IEEEST", andes_ieeest(np.array([ra[b] for b in order])))
    built = build_psse_case(raw, dyr, "ieee39_repaired", raw_file=spec["raw"], dyr_file=spec["dyr"],
                            load_conversion=load_conversion("ieee39_repaired"))  # fmt: skip
    assert built.info["init_max_abs_f"] <= 1e-8 and built.info["init_max_abs_g"] <= 1e-8
    found = deviations("ieee39_repaired", event, "radau", built=built, **RADAU)
    assert found["succeeded"] == 1.0
    for kind in KINDS:
        assert found[kind] <= allowed[kind], (kind, found[kind], allowed[kind])


def andes_esdc2a() -> DeviceModel:
    """ESDC2A with ANDES 2.0.0's reading of KE = 0, for the cross-check only (written from ANDES's
    documented equations, no ANDES code): KE used as given (0), not PSS/E's effective
    KE = -SE(Efd0), so the regulator starts at VR = SE(Efd0) Efd0 instead of 0. VRMAX = 0 is no
    upper limit on both sides (ANDES's 999)."""

    def init(efd, vt, p):
        vrmax = np.asarray(np.where(np.asarray(p["VRMAX"]) == 0, NO_LIMIT, p["VRMAX"]), float)
        out = exdc2_init(efd, vt, {**p, "VRMAX": vrmax})
        return {**out, "KE_eff": np.asarray(p["KE"], float), "VRMAX_eff": vrmax}

    return DeviceModel(name="ESDC2A", role="exciter", params=ESDC2A.params,
                       states=ESDC2A.states, source="ANDES 2.0.0 ESDC2A (cross-check only)",
                       check=ESDC2A.check, init=init, derivatives=ESDC2A.derivatives,
                       output=ESDC2A.output)  # fmt: skip


def andes_ieeeg1_rates(raw: str, dyr: str) -> str:
    """``dyr`` with each IEEEG1's valve rate limits Uo, Uc times SBASE / MBASE of its machine: ANDES
    2.0.0's IEEEG1 runs its servo on the system base (K, PMAX, PMIN are converted from the
    machine's base, its declared power parameters) but uses UO, UC as given, so its rate limits
    are UO, UC pu/s of the system base, i.e. UO SBASE / MBASE pu/s of the machine's (from which
    parameters ANDES declares as powers, no ANDES code; for the cross-check only). Equal when
    MBASE = SBASE (ieee14's 100 MVA machines)."""
    net = parse_raw(raw, "case.raw")
    mbase = {(g.bus, g.id.strip()): g.mbase for g in net.generators}
    out = []
    for rec in dyr.split("/"):
        fields = rec.split()
        if len(fields) > 10 and fields[1].strip("'") == "IEEEG1":
            scale = net.sbase / mbase[(int(fields[0]), fields[2].strip("'"))]
            # bus, 'IEEEG1', id, ICONs M1 M2, CONs K T1 T2 T3 Uo Uc ...
            fields[9] = repr(float(fields[9]) * scale)
            fields[10] = repr(float(fields[10]) * scale)
            rec = "\n" + " ".join(fields) + "\n"
        out.append(rec)
    return "/".join(out)


@pytest.mark.parametrize("event", ["line", "gen", pytest.param("fault", marks=pytest.mark.slow)])
def test_wecc_full_matches_andes_given_its_esdc2a_and_ieeeg1_readings(
    event: str, monkeypatch
) -> None:
    """wecc_full (179 buses; GENROU, ESDC2A, EXST1, ESST3A, IEEEG1, IEEEST, ST2CUT) departs from
    ANDES in two models. ESDC2A: its eight records have KE = 0, which PSS/E turns into an
    effective KE = -SE(Efd0) (each of the eight starts above its saturation's start) and ANDES
    reads as 0; the generator trip shows it. IEEEG1: ANDES's valve rate limits act on the system
    base (``andes_ieeeg1_rates``), 1/64 pu/s of MBASE on the 6400 MVA machine at bus 139 instead
    of 1 pu/s; in the bus fault its servo sits on that rate (ours never reaches 1 pu/s) and its
    rotor angle departs by about 3 times ANDES's spread. With PSS/E's models our run departs
    in the generator trip and the fault; given both of ANDES's readings all three events lie
    within ANDES's spread (``docs/models.md``; the fault's Radau run takes ~1 min on 2 cores)."""
    spec = metadata()["cases"]["wecc_full"]
    raw, dyr = (DATA / spec["raw"]).read_text(), (DATA / spec["dyr"]).read_text()
    allowed = spread()[f"wecc_full_{event}"]
    system("wecc_full")  # cached with PSS/E's ESDC2A before the patch (``disturbance`` reads it)
    if event in ("gen", "fault"):
        found = deviations("wecc_full", event, "radau", **RADAU)
        assert found["succeeded"] == 1.0
        assert max(found[k] / allowed[k] for k in KINDS) > 1.0  # the departures show
    patched = andes_ieeeg1_rates(raw, dyr)
    rates = {(r.bus, r.id): r.values for r in parse_dyr(patched, spec["dyr"]).records
             if r.model == "IEEEG1"}  # fmt: skip
    given = {(r.bus, r.id): r.values for r in parse_dyr(dyr, spec["dyr"]).records
             if r.model == "IEEEG1"}  # fmt: skip
    net = parse_raw(raw, spec["raw"])
    mbase = {(g.bus, g.id.strip()): g.mbase for g in net.generators}
    uo = MODELS["IEEEG1"].params.index("Uo")
    assert rates.keys() == given.keys() and len(rates) == 29
    for key, values in rates.items():
        scale = net.sbase / mbase[key]
        assert values[uo] == pytest.approx(given[key][uo] * scale)
        assert values[uo + 1] == pytest.approx(given[key][uo + 1] * scale)
        assert values[:uo] + values[uo + 2 :] == given[key][:uo] + given[key][uo + 2 :]
    monkeypatch.setitem(MODELS, "ESDC2A", andes_esdc2a())
    built = build_psse_case(raw, patched, "wecc_full", raw_file=spec["raw"], dyr_file=spec["dyr"],
                            load_conversion=load_conversion("wecc_full"))  # fmt: skip
    assert built.info["init_max_abs_f"] <= 1e-8 and built.info["init_max_abs_g"] <= 1e-8
    found = deviations("wecc_full", event, "radau", built=built, **RADAU)
    assert found["succeeded"] == 1.0
    for kind in KINDS:
        assert found[kind] <= allowed[kind], (kind, found[kind], allowed[kind])


def andes_hygov() -> DeviceModel:
    """HYGOV with ANDES 2.0.0's governor limits, for the cross-check only (written from ANDES's
    documented equations, no ANDES code): the desired gate c = xi + e / r, where only the
    integral part xi (state ``c`` here) is limited to [GMIN, GMAX] (non-windup) and its rate
    d xi/dt = e to [-VELM - e / r, VELM - e / r]; PSS/E's (ours) limits the whole c and its rate
    (e + Tr de/dt) / (r Tr) to +-VELM. Equal within the limits when r Tr = 1 (ieee14_hygov)."""
    hygov = MODELS["HYGOV"]

    def derivatives(xs, omega, pref, p):
        e, xi, g, q = xs
        c = xi + e / p["r"]
        d_e = (pref - (omega - 1.0) - p["R"] * c - e) / p["Tf"]
        rate = jnp.clip(e, -p["VELM"] - e / p["r"], p["VELM"] - e / p["r"])
        d_xi = non_windup(rate, xi, p["GMIN"], p["GMAX"])
        head = (q / jnp.maximum(g, 1e-6)) ** 2
        return d_e, d_xi, (c - g) / p["Tg"], (1.0 - head) / p["TW"]

    return DeviceModel(name="HYGOV", role="governor", params=hygov.params, states=hygov.states,
                       source="ANDES 2.0.0 HYGOV (cross-check only)", check=hygov.check,
                       init=hygov.init, derivatives=derivatives,
                       output=hygov.output)  # fmt: skip


@pytest.mark.parametrize("event", EVENTS)
def test_ieee14_hygov_matches_andes_given_its_governor_limits(event: str, monkeypatch) -> None:
    """ieee14_hygov (HYGOV on machine 8, a condenser-sized unit at c0 = 0.45 pu with GMAX =
    0.45001): PSS/E's HYGOV (ours) limits the whole desired gate c at GMAX, so after the generator
    trip machine 8 cannot open its gate; ANDES 2.0.0 limits only the PI's integral part and lets
    c = xi + e / r pass GMAX by e / r. With PSS/E's limits our run departs from ANDES in the line
    trip and the generator trip (the fault stays within the spread: the gate closes); given
    ANDES's limits (``andes_hygov``) all three events lie within ANDES's spread."""
    spec = metadata()["cases"]["ieee14_hygov"]
    raw, dyr = (DATA / spec["raw"]).read_text(), (DATA / spec["dyr"]).read_text()
    allowed = spread()[f"ieee14_hygov_{event}"]
    found = deviations("ieee14_hygov", event, "radau", **RADAU)
    assert found["succeeded"] == 1.0
    worst = max(found[k] / allowed[k] for k in KINDS)
    assert worst > 1.0 if event in ("line", "gen") else worst <= 1.0, (found, allowed)
    monkeypatch.setitem(MODELS, "HYGOV", andes_hygov())
    built = build_psse_case(raw, dyr, "ieee14_hygov", raw_file=spec["raw"], dyr_file=spec["dyr"],
                            load_conversion=load_conversion("ieee14_hygov"))  # fmt: skip
    assert built.info["init_max_abs_f"] <= 1e-8 and built.info["init_max_abs_g"] <= 1e-8
    found = deviations("ieee14_hygov", event, "radau", built=built, **RADAU)
    assert found["succeeded"] == 1.0
    for kind in KINDS:
        assert found[kind] <= allowed[kind], (kind, found[kind], allowed[kind])


def with_values(dyr: str, model: str, **values: float) -> str:
    """``dyr`` with the named values of every ``model`` record replaced (the cross-check's
    readings of ANDES; every other value unchanged)."""
    names = MODELS[model].params
    out = []
    for rec in dyr.split("/"):
        fields = rec.split()
        if len(fields) > 3 and fields[1].strip("'") == model:
            given = dict(zip(names, fields[3:], strict=True))
            given.update({k: repr(float(v)) for k, v in values.items()})
            rec = "\n" + " ".join(fields[:3] + [given[n] for n in names]) + " "
        out.append(rec)
    return "/".join(out)


def _andes_reading(case: str, event: str, model: str, patch=None, **values: float):
    """(found with PSS/E's model, found with ANDES's reading, allowed) for one event; ``patch()``
    is called between the two runs (after the PSS/E run is traced)."""
    spec = metadata()["cases"][case]
    raw, dyr = (DATA / spec["raw"]).read_text(), (DATA / spec["dyr"]).read_text()
    allowed = spread()[f"{case}_{event}"]
    found = deviations(case, event, "radau", **RADAU)
    assert found["succeeded"] == 1.0
    if patch is not None:
        patch()
    changed = with_values(dyr, model, **values)
    assert changed != dyr
    built = build_psse_case(raw, changed, case, raw_file=spec["raw"], dyr_file=spec["dyr"],
                            load_conversion=load_conversion(case))  # fmt: skip
    assert built.info["init_max_abs_f"] <= 1e-8 and built.info["init_max_abs_g"] <= 1e-8
    andes = deviations(case, event, "radau", built=built, **RADAU)
    assert andes["succeeded"] == 1.0
    return found, andes, allowed


@pytest.mark.parametrize(("event", "departs"), [("fault", False), ("line", True), ("gen", True)])
def test_ieee14_exac1_matches_andes_given_its_transducer_reading(event: str, departs: bool) -> None:
    """ieee14_exac1 (EXAC1 on machine 8, TR = 0.01 s): ANDES 2.0.0's EXAC1 compares Vref with the
    bus voltage, its transducer lag unused. With PSS/E's TR ours departs from ANDES in the line
    trip (bus voltage, 1.4 times ANDES's spread) and the generator trip (angle, 1.8 times) and
    lies within the spread in the fault; given TR = 0 all three lie within it."""
    found, andes, allowed = _andes_reading("ieee14_exac1", event, "EXAC1", TR=0.0)
    assert (max(found[k] / allowed[k] for k in KINDS) > 1.0) == departs, (found, allowed)
    for kind in KINDS:
        assert andes[kind] <= allowed[kind], (kind, andes[kind], allowed[kind])


@pytest.mark.parametrize("event", EVENTS)
def test_ieee14_esac1a_matches_andes_given_its_three_departures(event: str, monkeypatch) -> None:
    """ieee14_esac1a (ESAC1A on machine 8, ANDES's defaults: KF 0.1, VRMAX/VRMIN +-7.3): ANDES
    2.0.0's ESAC1A has no rate feedback, no VRMAX/VRMIN, and no lower limit on VE (its FEX is 1
    for IN <= 0). With PSS/E's block diagram ours departs by 15 to 220 times ANDES's spread in
    every event; given the three (KF = 0, VRMAX/VRMIN = +-999, VE free below 0 with FEX(IN <= 0)
    = 1, for the test only) all three events lie within it."""

    def free_exciter(vr, ve, ifd, p):
        vfe = ac_vfe(ve, ifd, p)
        return (vr - vfe) / p["TE"], vfe

    def negative_passes(ve, ifd, p):
        i_n = p["KC"] * ifd / jnp.where(ve > 0, ve, 1.0)
        return ve * jnp.where(ve > 0, esst3a_fex(i_n), 1.0)

    def patch() -> None:
        monkeypatch.setattr(esac1a_module, "ac_exciter_derivative", free_exciter)
        monkeypatch.setattr(esac1a_module, "ac_output", negative_passes)

    found, andes, allowed = _andes_reading("ieee14_esac1a", event, "ESAC1A", patch, KF=0.0,
                                           VRMAX=999.0, VRMIN=-999.0)  # fmt: skip
    assert min(found[k] / allowed[k] for k in KINDS) > 10.0, (found, allowed)
    for kind in KINDS:
        assert andes[kind] <= allowed[kind], (kind, andes[kind], allowed[kind])


@pytest.mark.parametrize("method", ["radau", "raptor"])
def test_a_trip_and_reclose_matches_andes_two_toggles(method: str) -> None:
    """IEEE 14 (GENROU + TGOV1): line 4-5 tripped at 0.5 s and reclosed at 0.6 s
    (``BranchTrip(reclose=...)``) against ANDES's two ``Toggle`` records on the line, within
    ANDES's own step-size spread, by Radau and by RAPTOR."""
    found = deviations("ieee14_genrou", "reclose", method, **RADAU)
    assert found["succeeded"] == 1.0
    allowed = spread()["ieee14_genrou_reclose"]
    for kind in KINDS:
        assert found[kind] <= allowed[kind], (kind, found[kind], allowed[kind])
    # the reclose matters: ANDES's trip-only and trip-and-reclose runs differ far beyond it
    t_r, reclosed = reference("ieee14_genrou", "reclose")
    t_o, opened = reference("ieee14_genrou", "line")
    _, i_r, i_o = np.intersect1d(t_r, t_o, return_indices=True)
    differ = max(float(np.max(np.abs(reclosed[k][i_r] - opened[k][i_o]))) for k in reclosed)
    assert differ > 10 * max(allowed.values())


@pytest.mark.parametrize("event", EVENTS)
def test_ieee14_zip_loads_as_given_match_andes_and_converted_ones_do_not(event: str) -> None:
    """ieee14_zip (bus 2: 5/9 constant power, 4/9 constant current; the other loads constant
    power; ANDES run with its PQ loads kept constant power and a ZIP for bus 2): our default (the
    .raw's parts as given) lies within ANDES's spread in all three events (the generic test);
    with ANDES's default conversion (everything constant admittance) it departs in each by far
    more than the spread (measured: 20 to 380 times)."""
    spec = metadata()["cases"]["ieee14_zip"]
    assert spec["loads"] == "as given" and load_conversion("ieee14_zip") is None
    raw, dyr = (DATA / spec["raw"]).read_text(), (DATA / spec["dyr"]).read_text()
    converted = build_psse_case(raw, dyr, "ieee14_zip", raw_file=spec["raw"], dyr_file=spec["dyr"],
                                load_conversion=ANDES_LOAD_CONVERSION)  # fmt: skip
    found = deviations("ieee14_zip", event, "radau", built=converted, **RADAU)
    assert found["succeeded"] == 1.0
    allowed = spread()[f"ieee14_zip_{event}"]
    assert min(found[k] / allowed[k] for k in KINDS) > 10.0, (found, allowed)
