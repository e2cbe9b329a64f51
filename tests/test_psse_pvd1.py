"""PVD1 (``models/devices/pvd1.py``): its refusals, its trip fractions with their latch, its
frequency droop, the ieee14_pvd1 case's equilibrium, the latch in a fault, and the cross-check
against ANDES 2.0.0 given ANDES's self-resetting trips (``tests/reference/andes``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from models.devices import MODELS, PVD1
from models.devices.pvd1 import CONS, ICONS, STATES, TW_FREQ, _commands, _derivatives, latched
from models.psse.case import ANDES_LOAD_CONVERSION, build_psse_case
from models.scenarios import make_scenario
from solvers import solve
from tests.psse_crosscheck import KINDS, deviations, disturbance, metadata, spread
from tests.test_psse_crosscheck import RADAU, with_values

DATA = Path(__file__).resolve().parent / "data" / "psse"
CASE = "ieee14_pvd1"
PV = [f"gen4_{k}" for k in range(1, 11)]


def record_values() -> dict[str, float]:
    """The first PVD1 record of the case's .dyr (name -> value)."""
    for rec in (DATA / f"{CASE}.dyr").read_text().split("/"):
        fields = rec.split()
        if len(fields) > 3 and fields[1] == "'PVD1'":
            return dict(zip(ICONS + CONS, map(float, fields[3:]), strict=True))
    raise AssertionError("no PVD1 record")


def params(**changes: float) -> dict[str, jnp.ndarray]:
    """One instance's parameters (the case's record, ``changes``) with the derived values of a
    start at P = 0.5, Q = 0.3 pu and 60 Hz."""
    values = {**record_values(), **changes, "pref": 0.5, "qref": 0.3, "fn": 60.0}
    return {k: jnp.asarray([v]) for k, v in values.items()}


def states(f_hz: float = 60.0, latch: float = 1.0) -> tuple:
    """States at 0.5 / 0.3 pu currents, frequency ``f_hz`` (th - fw = 2 pi TW (f - 60)) and every
    latch at ``latch``."""
    dth = 2 * np.pi * TW_FREQ * (f_hz - 60.0)
    values = {"Ipv": 0.5, "Iqv": 0.3, "th": dth, "fw": 0.0, "mvl": latch, "mvh": latch,
              "mfl": latch, "mfh": latch}  # fmt: skip
    return tuple(jnp.asarray([values[s]]) for s in STATES)


def build(dyr: str):
    return build_psse_case((DATA / f"{CASE}.raw").read_text(), dyr, CASE,
                           raw_file=f"{CASE}.raw", dyr_file=f"{CASE}.dyr",
                           load_conversion=ANDES_LOAD_CONVERSION)  # fmt: skip


def test_pvd1_check_refuses_values_it_cannot_use() -> None:
    good = {k: np.asarray([v]) for k, v in record_values().items()}
    assert PVD1.check(good) == []
    assert MODELS["PVD1"] is PVD1
    for name, value in (("IGREG", 4.0), ("Pqflag", 2.0), ("Vt1", 0.85), ("Ft2", 59.6),
                        ("Vrflag", 1.5), ("Tg", 0.0), ("fdbd", 0.01), ("dqdv", 0.5)):  # fmt: skip
        bad = {**good, name: np.asarray([value])}
        assert name in {field for field, _, _ in PVD1.check(bad)}, name


def test_trip_fractions_latch_at_their_lowest_value_and_recover_by_the_flag_share() -> None:
    # a fraction that fell to 0.2 and has come back to 1: latched, half, self-resetting
    for r, expected in ((0.0, 0.2), (0.5, 0.6), (1.0, 1.0)):
        assert float(latched(jnp.asarray(1.0), jnp.asarray(0.2), r)) == pytest.approx(expected)
    # below its lowest value the fraction itself holds, whatever the flag
    assert float(latched(jnp.asarray(0.1), jnp.asarray(0.2), 0.0)) == pytest.approx(0.1)
    # at 0.89 pu (between Vt0 = 0.88 and Vt1 = 0.9) half the PV stays; its latch follows down
    p = params()
    c = _commands(states(), jnp.asarray([0.89]), p)
    assert float(c["share"][0]) == pytest.approx(0.5)
    d = _derivatives(states(), jnp.asarray([0.89]), None, None, p,
                     {"vr": jnp.asarray([0.89]), "vi": jnp.asarray([0.0])})  # fmt: skip
    assert float(d[STATES.index("mvl")][0]) < 0 and float(d[STATES.index("mvh")][0]) == 0
    # the voltage back at 1 pu with the latch at 0: off with Vrflag = 0, on with Vrflag = 1
    latched_off = (*states()[:4], jnp.asarray([0.0]), *states()[5:])
    assert float(_commands(latched_off, jnp.asarray([1.0]), p)["share"][0]) == 0.0
    p1 = params(Vrflag=1.0)
    assert float(_commands(latched_off, jnp.asarray([1.0]), p1)["share"][0]) == 1.0


def test_the_measured_angle_runs_on_where_the_bus_angle_passes_pi() -> None:
    """th just below pi, the bus voltage just past it (at -pi + 0.01): the lag's input is the
    small angle between them, not 2 pi (which would read as a frequency spike)."""
    p = params()
    xs = (*states()[:2], jnp.asarray([np.pi - 0.01]), jnp.asarray([np.pi - 0.01]), *states()[4:])
    theta = -np.pi + 0.01
    d = _derivatives(
        xs,
        jnp.asarray([1.0]),
        None,
        None,
        p,
        {"vr": jnp.asarray([np.cos(theta)]), "vi": jnp.asarray([np.sin(theta)])},
    )
    assert float(d[STATES.index("th")][0]) == pytest.approx(0.02 / p["Tf"][0])


def test_frequency_droop_and_trip_follow_the_measured_frequency() -> None:
    p = params()
    base = _commands(states(60.0), jnp.asarray([1.0]), p)
    assert float(base["f_hz"][0]) == pytest.approx(60.0)
    assert float(base["ipc"][0]) == pytest.approx(0.5)
    # 60.03 Hz: over-frequency droop Ddn ((1 - f/fn) - fdbd) = 300 (-0.03/60 + 0.017/60)
    high = _commands(states(60.03), jnp.asarray([1.0]), p)
    assert float(high["f_hz"][0]) == pytest.approx(60.03)
    assert float(high["ipc"][0]) == pytest.approx(0.5 + 300.0 * (-0.03 + 0.017) / 60.0)
    assert float(high["share"][0]) == pytest.approx(1.0)  # below Ft2 = 60.3 Hz
    # 60.2 Hz: the droop would take more than Pref, the command stops at 0; 60.4 Hz: half trips
    assert float(_commands(states(60.2), jnp.asarray([1.0]), p)["ipc"][0]) == 0.0
    assert float(_commands(states(60.4), jnp.asarray([1.0]), p)["share"][0]) == pytest.approx(0.5)
    # 59.6 Hz: no droop (under-frequency), half the PV trips (Ft0 59.5, Ft1 59.7)
    low = _commands(states(59.6), jnp.asarray([1.0]), p)
    assert float(low["ipc"][0]) == pytest.approx(0.5)
    assert float(low["share"][0]) == pytest.approx(0.5)


def test_case_starts_at_its_power_flow_and_refuses_a_trip_at_the_start() -> None:
    text = (DATA / f"{CASE}.dyr").read_text()
    sys_ = build(text)
    assert sys_.info["init_max_abs_f"] <= 1e-8 and sys_.info["init_max_abs_g"] <= 1e-8
    assert all(sys_.info["generator_models"][g] == "PVD1" for g in PV)
    assert any("latch at their lowest value" in w for w in sys_.info["warnings"])
    with pytest.raises(ValueError, match=r"ieee14_pvd1\.dyr, line \d+.*outside \[Vt1, Vt2\]"):
        build(with_values(text, "PVD1", Vt1=1.02, Vt2=1.1))  # the solved 1.01 pu below Vt1


def test_a_latched_voltage_trip_keeps_the_pv_off_after_the_fault() -> None:
    """The bus 9 fault takes bus 4 to 0.63 pu (below Vt0 = 0.88): every PV trips. With the
    data's Vrflag = 0 they stay off after the clearing; with Vrflag = Frflag = 1 (ANDES 2.0.0's
    self-resetting fractions) they come back to their 0.5 MW."""
    text = (DATA / f"{CASE}.dyr").read_text()
    runs = {}
    for name, dyr in (("latched", text), ("resetting", with_values(text, "PVD1", Vrflag=1.0,
                                                                    Frflag=1.0))):  # fmt: skip
        sys_ = build(dyr)
        scenario = make_scenario(sys_, disturbance(CASE, "fault"), t_end=3.0)
        scenario = dataclasses.replace(scenario, t_eval=np.array([0.0, 0.45, 3.0]))
        result = solve(sys_, scenario, "radau", **RADAU)
        assert result.succeeded
        runs[name] = np.array([result.output(f"Pe[{g}]") for g in PV])  # system base
    for pe in runs.values():
        assert np.allclose(pe[:, :2], 0.005, rtol=1e-6)  # 0.5 MW each before the fault
    assert np.all(np.abs(runs["latched"][:, 2]) < 1e-6)
    assert np.allclose(runs["resetting"][:, 2], 0.005, rtol=1e-3)


@pytest.mark.parametrize("event", ("fault", "line", "gen"))
def test_ieee14_pvd1_matches_andes_given_its_self_resetting_trips(event: str) -> None:
    """ANDES 2.0.0's PVD1 does not latch its trip fractions (whatever vrflag, frflag): given
    Vrflag = Frflag = 1 ours lies within ANDES's step-size spread in all three events; with
    the data's latching (0) it departs in the fault (8.5 times the spread: the PV stays off
    after the voltage trip) and not in the line trip (no trip) or the generator trip (the
    frequency falls below Ft1 = 59.7 Hz after 2 s and keeps falling, so the latched fraction
    is the present one)."""
    spec = metadata()["cases"][CASE]
    raw = (DATA / spec["raw"]).read_text()
    dyr = with_values((DATA / spec["dyr"]).read_text(), "PVD1", Vrflag=1.0, Frflag=1.0)
    allowed = spread()[f"{CASE}_{event}"]
    built = build_psse_case(raw, dyr, CASE, raw_file=spec["raw"], dyr_file=spec["dyr"],
                            load_conversion=ANDES_LOAD_CONVERSION)  # fmt: skip
    andes = deviations(CASE, event, "radau", built=built, **RADAU)
    assert andes["succeeded"] == 1.0
    for kind in KINDS:
        assert andes[kind] <= allowed[kind], (kind, andes[kind], allowed[kind])
    found = deviations(CASE, event, "radau", **RADAU)
    assert found["succeeded"] == 1.0
    ratio = max(found[k] / allowed[k] for k in KINDS)
    assert (ratio > 1.0) == LATCH_DEPARTS[event], (found, allowed)


LATCH_DEPARTS = {"fault": True, "line": False, "gen": False}
"""Whether the data's latching trips take ours outside ANDES's spread, per event."""
