"""Converter-interfaced resources (REGCA1 + REECA1 + REPCA1) on PSS/E data: the converter slot of
the assembler, the models' blocks against their specification, and ieee14_solar (ANDES's
``ieee14_solar.xlsx`` written by ``tests/data/psse/ieee14_solar_from_xlsx.py``) at equilibrium.
Its trajectories against ANDES are in ``tests/test_psse_crosscheck.py``."""

from __future__ import annotations

from functools import lru_cache

import jax.numpy as jnp
import numpy as np
import pytest

from models.dae import DAESystem
from models.devices import REECA1, REGCA1, REPCA1
from models.devices.regca1 import lvg, lvpl
from models.devices.repca1 import TF_FREQ, TW_FREQ
from models.psse.case import build_psse_case, load_psse_case
from tests.psse_crosscheck import DATA

RAW, DYR = "ieee14_solar.raw", "ieee14_solar.dyr"
REGCA1_DATA = """
1 0.1 999 0.8 0.5 1 1.2 1 0.4 0 0.1 0.7 999 -999 0
"""
"""The ieee14_solar record's values in PSS/E order (test variations change some)."""
REECA1_DATA = """
0 0 0 0 0 0 0.8 1.1 0.02 -0.02 0.02 20 999 -999 1.03 0 -2 1 0.02 999 -999 999 -999 1 0.1 1
0.1 1.03 0.02 999 -999 999 -999 10 0.02 0.2 2 0.4 4 0.8 8 1 10 0.2 2 0.4 4 0.8 8 1 10
"""
"""The ieee14_solar record's values in PSS/E order (test variations change some)."""
REPCA1_DATA = """
0 8 7 1 1 1 0 0.02 1 0.1 1 1 0.8 0 0.17615 1 999 -999 -0.02 0.02 999 -999 1 0.1 0.02 -0.01
0.01 0.05 -0.05 999 -999 0.02 10 10
"""
"""The ieee14_solar record's values in PSS/E order (test variations change some)."""


@lru_cache(maxsize=1)
def solar() -> DAESystem:
    return build_psse_case((DATA / RAW).read_text(), (DATA / DYR).read_text(), "ieee14_solar",
                           raw_file=RAW, dyr_file=DYR)  # fmt: skip


def _params(model, values: dict) -> dict:
    return {k: np.atleast_1d(np.asarray(v, dtype=float)) for k, v in values.items()}


def test_solar_case_starts_at_equilibrium_with_the_power_flow_output() -> None:
    sys_ = solar()
    assert sys_.info["init_max_abs_f"] <= 1e-8 and sys_.info["init_max_abs_g"] <= 1e-8
    assert sys_.info["generator_models"]["gen8_1"] == "REGCA1+REECA1+REPCA1"
    case = load_psse_case((DATA / RAW).read_text(), (DATA / DYR).read_text(), "s")
    k = case.grid.gen_names.index("gen8_1")
    s = case.grid.gen_s[k]
    out = dict(zip(sys_.output_names, np.asarray(sys_.outputs(sys_.x0, sys_.z0, sys_.params)),
                   strict=True))  # fmt: skip
    assert out["Pe[gen8_1]"] == pytest.approx(s.real, abs=1e-9)
    v = abs(case.grid.voltage[case.grid.gen_bus[k]])
    z = dict(zip(sys_.alg_names, sys_.z0, strict=True))
    assert z["Iq[gen8_1]"] * v == pytest.approx(s.imag, abs=1e-9)  # Q = |V| Iq
    names = set(sys_.state_names)
    assert {"Ip_lag[gen8_1]", "Pord[gen8_1]", "Vcf[gen8_1]"} <= names
    assert "omega[gen8_1]" not in names
    text = " ".join(sys_.info["warnings"])
    assert "Thld = -2 < 0" in text and "0.1 s washout" in text


def test_converter_slot_takes_no_machine_controller() -> None:
    dyr = (DATA / DYR).read_text() + "8 'TGOV1' 1 0.05 0.05 1.05 0.3 1.0 2.1 0.0 /\n"
    with pytest.raises(ValueError, match="cannot control the REGCA1 converter"):
        build_psse_case((DATA / RAW).read_text(), dyr, "bad")


def test_regca1_lvpl_and_low_voltage_gain_follow_their_characteristics() -> None:
    p = _params(REGCA1, {"LVPLSW": 1, "Zerox": 0.5, "Brkpt": 0.8, "Lvpl1": 1.0,
                         "Lvpnt0": 0.4, "Lvpnt1": 1.0})  # fmt: skip
    assert float(lvpl(jnp.array([0.4]), p)[0]) == 0.0
    assert float(lvpl(jnp.array([0.65]), p)[0]) == pytest.approx(0.5)
    assert float(lvpl(jnp.array([0.9]), p)[0]) > 100  # no limit above Brkpt
    assert float(lvpl(jnp.array([0.4]), {**p, "LVPLSW": np.array([0.0])})[0]) > 100
    assert float(lvg(jnp.array([0.7]), p)[0]) == pytest.approx(0.5)
    assert float(lvg(jnp.array([0.3]), p)[0]) == 0.0 and float(lvg(jnp.array([1.1]), p)[0]) == 1


def test_regca1_high_voltage_management_and_lvpl_clamp() -> None:
    values = dict(zip(REGCA1.params, map(float, REGCA1_DATA.split()), strict=True))
    p = _params(REGCA1, values)
    xs = (jnp.array([0.3]), jnp.array([0.4]), jnp.array([0.6]))
    _, iq = REGCA1.current(xs, jnp.array([1.4]), p)
    assert float(iq[0]) == pytest.approx(0.3 - 0.7 * 0.2)  # Iq - Khv (V - Volim)
    _, iq = REGCA1.current(xs, jnp.array([1.8]), p)
    assert float(iq[0]) == 0.0  # clamped at Iolim = 0
    # Vf = 0.6: LVPL = 1/3 < Ip = 0.4, so Ip is carried down towards the limit
    d_iq, d_ip, _ = REGCA1.derivatives(xs, jnp.array([0.6]), jnp.array([0.5]),
                                       jnp.array([0.3]), p)  # fmt: skip
    assert float(d_ip[0]) < -10 and float(d_iq[0]) == 0.0
    with pytest.raises(ValueError, match="Iolim"):
        REGCA1.init(np.array([1.0 + 0j]), np.array([0.3 - 0.1j]), p)


def _reeca1(**changes) -> dict:
    values = dict(zip(REECA1.params, map(float, REECA1_DATA.split()), strict=True))
    values.update(changes)
    return _params(REECA1, values)


def _reeca1_start(p: dict, vt: float = 1.03) -> tuple[tuple, dict]:
    sig = {"vt": np.array([vt]), "pe": np.array([1.0]), "qe": np.array([0.1]),
           "ipcmd": np.array([1.0 / vt]), "iqcmd": np.array([0.1 / vt])}  # fmt: skip
    init = REECA1.init(sig, p)
    full = {**p, **{k: np.atleast_1d(init[k]) for k in ("Vref0_eff", "pfaref")}}
    xs = tuple(jnp.atleast_1d(jnp.asarray(init[s])) for s in REECA1.states)
    return xs, {**full, "pref": init["pref"], "qref": init["qref"]}


@pytest.mark.parametrize("pqflag", [0, 1])
def test_reeca1_dip_freezes_and_current_priority(pqflag: int) -> None:
    """In a dip (Vt = 0.5 < Vdip) Iqinj = Kqv (Vref0 - Vf - dbd) reaches the VDL1 limit; Q
    priority leaves Ip sqrt(Imax^2 - Iq^2), P priority limits Ip by VDL2 and Iq by what is left."""
    p = _reeca1(PQFLAG=pqflag, Imax=1.2)
    xs, full = _reeca1_start(p)
    xs = (jnp.array([0.5]), *xs[1:])  # filtered voltage already at the dip's level
    sig = {"vt": jnp.array([0.5]), "pe": jnp.array([0.5]), "qe": jnp.array([0.4])}
    ipcmd, iqcmd = REECA1.output(xs, sig, full["pref"], full["qref"], full)
    d = REECA1.derivatives(xs, sig, full["pref"], full["qref"], full)
    frozen = [REECA1.states.index(s) for s in ("Iqf", "Pord")]
    assert all(float(d[k][0]) == 0.0 for k in frozen)
    assert float(d[REECA1.states.index("tpost")][0]) < 0  # the dip timer resets
    want_ip = 1.0 / 0.5  # Pord / Vt
    if pqflag == 0:
        iqmax = min(4.0 + (0.5 - 0.4) * 10.0, 1.2)  # VDL1(0.5) = 5, Imax 1.2
        assert float(iqcmd[0]) == pytest.approx(iqmax)
        assert float(ipcmd[0]) == pytest.approx(min(want_ip, np.sqrt(1.2**2 - iqmax**2)), abs=1e-7)
    else:
        ipmax = min(4.0 + (0.5 - 0.4) * 10.0, 1.2)
        assert float(ipcmd[0]) == pytest.approx(min(want_ip, ipmax))
        assert float(iqcmd[0]) == pytest.approx(np.sqrt(max(1.2**2 - float(ipcmd[0]) ** 2, 0)),
                                                abs=1e-7)  # fmt: skip


def test_reeca1_thld_keeps_iqinj_after_the_dip() -> None:
    """Thld = -2: after the dip (timer below 2 s) Iqinj keeps Kqv db(Vref0 - Vf); once the timer
    passes |Thld| it is 0; Thld = +2 gives Iqfrz instead."""
    p = _reeca1(Imax=10.0)
    xs, full = _reeca1_start(p)
    sig = {"vt": jnp.array([0.95]), "pe": jnp.array([1.0]), "qe": jnp.array([0.1])}
    k = REECA1.states.index("tpost")
    low_vf = (jnp.array([0.95]), *xs[1:])
    out = {}
    for tpost in (0.5, 2.5):
        x = tuple(jnp.array([tpost]) if i == k else v for i, v in enumerate(low_vf))
        out[tpost] = float(REECA1.output(x, sig, full["pref"], full["qref"], full)[1][0])
    base = float(xs[REECA1.states.index("Iqf")][0])
    assert out[0.5] == pytest.approx(base + 20 * (1.03 - 0.95 - 0.02))
    assert out[2.5] == pytest.approx(base)
    frz = {**full, "Thld": np.array([2.0]), "Iqfrz": np.array([0.3])}
    x = tuple(jnp.array([0.5]) if i == k else v for i, v in enumerate(low_vf))
    assert float(REECA1.output(x, sig, full["pref"], full["qref"], frz)[1][0]) == pytest.approx(
        base + 0.3
    )


def test_repca1_frequency_reading_is_the_filtered_angle_derivative() -> None:
    """The plant's frequency (ANDES's BusFreq reading): with the bus angle turning at a constant
    rate r rad/s, the lag and washout settle at f = 1 + r / omega_n."""
    fn, r = 60.0, 5.0
    omega_n = 2 * np.pi * fn
    # steady state of th' = (theta - th)/TF, fw' = (th - fw)/TW under theta = r t:
    # th = theta - r TF, fw = th - r TW
    theta = 0.3
    th, fw = theta - r * TF_FREQ, theta - r * TF_FREQ - r * TW_FREQ
    values = dict(zip(REPCA1.params, map(float, REPCA1_DATA.split()), strict=True))
    p = _params(REPCA1, {**values, "fn": fn, "Vref": 1.0, "Qref_plant": 0.0, "Plant_pref": 0.3,
                         "Pref0": 0.3})  # fmt: skip
    sig = {"vreg_r": jnp.array([np.cos(theta)]), "vreg_i": jnp.array([np.sin(theta)]),
           "ibr_r": jnp.array([0.0]), "ibr_i": jnp.array([0.0]), "pbr": jnp.array([0.3]),
           "qbr": jnp.array([0.0])}  # fmt: skip
    xs = tuple(jnp.array([v]) for v in (1.0, 0.0, 0.0, 0.0, 0.3, 0.3, 0.3, th, fw))
    d = REPCA1.derivatives(xs, sig, p)
    assert float(d[7][0]) == pytest.approx(r) and float(d[8][0]) == pytest.approx(r)
    # Fflag = 1: the droop acts on f - 1 = r / omega_n beyond the deadband (Ddn, over-frequency)
    fflag = {**p, "Fflag": np.array([1.0])}
    d = REPCA1.derivatives(xs, sig, fflag)
    ferr = -r / omega_n  # -0.0133: beyond the deadband fdbd1 = -0.01, within femin
    assert float(d[5][0]) == pytest.approx(0.1 * 10 * (ferr + 0.01))  # Kig Ddn db(1 - f)
    assert float(REPCA1.derivatives(xs, sig, p)[5][0]) == 0.0  # Fflag = 0: same input, unused
    # the same steady turning where the bus angle passes pi: no wrap, the same rate
    theta = np.pi + 0.02  # atan2 reads -pi + 0.02
    th, fw = theta - r * TF_FREQ, theta - r * TF_FREQ - r * TW_FREQ
    wrapped = {**sig, "vreg_r": jnp.array([np.cos(theta)]),
               "vreg_i": jnp.array([np.sin(theta)])}  # fmt: skip
    xs = tuple(jnp.array([v]) for v in (1.0, 0.0, 0.0, 0.0, 0.3, 0.3, 0.3, th, fw))
    d = REPCA1.derivatives(xs, wrapped, p)
    assert float(d[7][0]) == pytest.approx(r) and float(d[8][0]) == pytest.approx(r)
