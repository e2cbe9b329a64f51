"""Device models of the MATPOWER cases and wscc9 (``models.devices``): every initialization twin
gives a steady state of its model's equations, and validators name the device and field of a bad
value."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from models.components.loads import zip_current, zip_parameters
from models.devices import gfl_inverter as inv
from models.devices import induction_motor as mot
from models.devices import sexs_smooth as sexs
from models.devices import sixth_order as six
from models.devices import tgov1_smooth as gov
from models.devices import two_axis as sm

OMEGA_S = 2 * np.pi * 60.0
V = np.array([1.02 * np.exp(0.1j), 0.98 * np.exp(-0.3j)])
S = np.array([0.8 + 0.3j, 1.5 - 0.1j])
MACHINE = {
    "H": np.array([4.0, 6.0]), "D": np.array([1.0, 2.0]), "Rs": np.array([0.003, 0.0]),
    "xd": np.array([1.8, 1.6]), "xd_p": np.array([0.3, 0.25]), "xd_pp": np.array([0.23, 0.2]),
    "xq": np.array([1.7, 1.5]), "xq_p": np.array([0.55, 0.5]), "xq_pp": np.array([0.23, 0.2]),
    "Td0_p": np.array([6.0, 5.0]), "Tq0_p": np.array([0.7, 0.6]),
    "Td0_pp": np.array([0.035, 0.03]), "Tq0_pp": np.array([0.05, 0.04]),
}  # fmt: skip


def test_sixth_order_twin_is_a_steady_state():
    x = six.init_sixth_order(V, S, MACHINE)
    rot = np.exp(-1j * (x["delta"] - np.pi / 2))
    vdq = V * rot
    res = six.sixth_order_stator(
        x["Eq_pp"], x["Ed_pp"], vdq.real, vdq.imag, x["Id"], x["Iq"], MACHINE
    )
    np.testing.assert_allclose(res, 0.0, atol=1e-13)
    d = six.sixth_order_derivatives(
        *(x[s] for s in six.STATES), x["Id"], x["Iq"], x["Efd"], x["tm"], MACHINE, OMEGA_S
    )
    np.testing.assert_allclose(np.array(d), 0.0, atol=1e-12)
    # the injected current gives the dispatched power
    i = (x["Id"] + 1j * x["Iq"]) / rot
    np.testing.assert_allclose(V * np.conj(i), S, atol=1e-13)
    # the rotor angle and the field voltage do not depend on the damper circuits in steady state
    two = sm.init_two_axis(V, S, MACHINE)
    np.testing.assert_allclose(x["delta"], two["delta"], atol=1e-14)
    np.testing.assert_allclose(x["Efd"], two["Efd"], atol=1e-13)


def test_sixth_order_validation():
    bad = {k: float(v[0]) for k, v in MACHINE.items()}
    six.validate_sixth_order("gen1", bad)
    bad["xd_pp"] = 0.5
    with pytest.raises(ValueError, match="gen1: field 'xd_pp'"):
        six.validate_sixth_order("gen1", bad)


def test_tgov1_steady_state_and_droop():
    p = {"R": np.array([0.05]), "T1": np.array([0.5]), "T2": np.array([3.0]),
         "T3": np.array([10.0]), "Dt": np.array([0.0])}  # fmt: skip
    x = gov.init_tgov1(np.array([0.7]))
    d = gov.tgov1_derivatives(x["Pv"], x["Pt"], 1.0, x["pref"], p)
    np.testing.assert_allclose(np.array(d), 0.0)
    assert float(gov.tgov1_output(x["Pv"], x["Pt"], 1.0, p)[0]) == pytest.approx(0.7)
    # at a steady 1 % under-speed the valve opens by 0.01 / R = 0.2 pu
    omega = 0.99
    pv = x["pref"] - (omega - 1) / p["R"]
    d = gov.tgov1_derivatives(pv, pv, omega, x["pref"], p)
    np.testing.assert_allclose(np.array(d), 0.0, atol=1e-15)
    assert float(gov.tgov1_output(pv, pv, omega, p)[0]) == pytest.approx(0.9)
    with pytest.raises(ValueError, match="gen3, governor: field 'R' must be > 0"):
        gov.validate_tgov1("gen3, governor", {"R": 0.0, "T1": 1, "T2": 1, "T3": 1, "Dt": 0})


def test_sexs_steady_state():
    p = {"K": np.array([50.0]), "TA_TB": np.array([0.1]), "TB": np.array([10.0]),
         "TE": np.array([0.05])}  # fmt: skip
    x = sexs.init_sexs(np.array([1.8]), np.array([1.01]), p)
    d = sexs.sexs_derivatives(x["Efd"], x["xl"], 1.01, x["vref"], p)
    np.testing.assert_allclose(np.array(d), 0.0, atol=1e-14)
    with pytest.raises(ValueError, match="'TE' is missing"):
        sexs.validate_sexs("gen1, exciter", {"K": 1.0, "TA_TB": 0.1, "TB": 1.0})


MOTOR = {"H": 1.5, "rs": 0.013, "xs": 0.067, "xm": 3.8, "rr": 0.009, "xr": 0.17}


def test_induction_motor_twin_is_a_steady_state():
    v = 0.97 * np.exp(-0.2j)
    x = mot.init_motor(v, 0.8, MOTOR, OMEGA_S)
    assert 0.0 < x["s"] < 0.05 and x["p"] == pytest.approx(0.8, abs=1e-12) and x["q"] > 0
    ir, ii = mot.motor_current(x["er_p"], x["em_p"], v.real, v.imag, MOTOR, OMEGA_S)
    assert complex(ir, ii) == pytest.approx(complex(x["Ir"], x["Ii"]), abs=1e-12)
    d = mot.motor_derivatives(x["s"], x["er_p"], x["em_p"], ir, ii, x["tm"], MOTOR, OMEGA_S)
    np.testing.assert_allclose(np.array(d, dtype=float), 0.0, atol=1e-10)
    # more load torque slows the motor down (slip grows)
    d = mot.motor_derivatives(x["s"], x["er_p"], x["em_p"], ir, ii, 1.2 * x["tm"], MOTOR, OMEGA_S)
    assert d[0] > 0
    with pytest.raises(ValueError, match="pull-out"):
        mot.init_motor(v, 10.0, MOTOR, OMEGA_S)
    with pytest.raises(ValueError, match="mot4: field 'rr' must be > 0"):
        mot.validate_motor("mot4", MOTOR | {"rr": 0.0})


INVERTER = {
    "kp_pll": np.array([0.25]), "ki_pll": np.array([10.0]), "Tf": np.array([0.02]),
    "kp_pq": np.array([0.5]), "ki_pq": np.array([20.0]), "kp_c": np.array([0.5]),
    "ki_c": np.array([12.57]), "Lf": np.array([0.15]), "Rf": np.array([0.01]),
}  # fmt: skip


def test_inverter_twin_is_a_steady_state():
    v = np.array([1.01 * np.exp(-0.25j)])
    x = inv.init_inverter(v, np.array([0.4 + 0.1j]), INVERTER)
    states = tuple(jnp.asarray(x[s]) for s in inv.STATES)
    d = inv.inverter_derivatives(states, v.real, v.imag, x["pref"], x["qref"], INVERTER, OMEGA_S)
    np.testing.assert_allclose(np.array(d, dtype=float), 0.0, atol=1e-12)
    ir, ii = inv.injected_current(x["i_d"], x["i_q"], x["theta"])
    s = v * np.conj(np.asarray(ir) + 1j * np.asarray(ii))
    np.testing.assert_allclose(s, [0.4 + 0.1j], atol=1e-14)
    with pytest.raises(ValueError, match="inv9: field 'Lf'"):
        inv.validate_inverter("inv9", {k: float(v[0]) for k, v in INVERTER.items()} | {"Lf": -1})


def test_zip_load_draws_its_power_at_nominal_voltage_and_scales():
    p, q, vm = np.array([0.5, 1.0]), np.array([0.2, -0.1]), np.array([1.02, 0.97])
    v0 = vm * np.exp(1j * np.array([0.1, -0.4]))
    prm = zip_parameters(p, q, vm, 0.5, 0.3, 0.2)
    keys = ("load_g", "load_b", "load_ip", "load_iq", "load_pp", "load_pq")
    s = v0 * np.conj(np.asarray(zip_current(v0, *(prm[k] for k in keys))))
    np.testing.assert_allclose(s, p + 1j * q, atol=1e-14)
    s_half = 0.5 * v0 * np.conj(np.asarray(zip_current(0.5 * v0, *(prm[k] for k in keys))))
    np.testing.assert_allclose(s_half, (p + 1j * q) * (0.5 * 0.25 + 0.3 * 0.5 + 0.2), atol=1e-14)
    with pytest.raises(ValueError, match="ZIP fractions"):
        zip_parameters(p, q, vm, 0.5, 0.5, 0.5)
