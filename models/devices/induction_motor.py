"""Induction motor, third-order (single-cage, stator transients neglected) model.

Source: F. Milano, *Power System Modelling and Scripting*, Springer, 2010, §15.2.1 "Order III"
induction machine (the PSAT model), with the motor convention (current into the motor). Per unit
on the *system* base (the builder converts from the motor rating: impedances x S_base / S_motor,
H x S_motor / S_base); time in s; omega_b = 2 pi f rad/s; complex phasors in the network frame
(rotating at synchronous speed): E' = er_p + j em_p, V = Vr + j Vi, I = Ir + j Ii.

    x0 = xs + xm,    x' = xs + xr xm / (xr + xm),    T'0 = (xr + xm) / (omega_b rr)

    0 = V - E' - (rs + j x') I                                  (stator, solved explicitly for I)
    d er_p/dt =  omega_b s em_p - (er_p + (x0 - x') Ii) / T'0
    d em_p/dt = -omega_b s er_p - (em_p - (x0 - x') Ir) / T'0
    2 H ds/dt = TL - Te,    Te = er_p Ir + em_p Ii

with s the slip (pu), TL the mechanical load torque (the parameter ``tm``, the motor-torque input,
pu on the system base) and Te the electrical torque (air-gap power at synchronous speed).

As a bus device (``INDUCTION_MOTOR``): parameters ``mot_<name>`` plus the load torque ``mot_tm``
from the initialization; it draws the requested active power at the power flow and its reactive
power follows from the equivalent circuit (the static load of its bus takes the difference).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from scipy.optimize import brentq

from models.components.validation import check_fields, non_negative, positive
from models.devices.base import DeviceModel, check_rules

STATES = ("s", "er_p", "em_p")
PARAMS = ("H", "rs", "xs", "xm", "rr", "xr")
_RULES = (
    ("H", positive, "> 0 (inertia constant, s)"),
    ("rs", non_negative, ">= 0 (stator resistance, pu)"),
    ("xs", positive, "> 0 (stator leakage reactance, pu)"),
    ("xm", positive, "> 0 (magnetizing reactance, pu)"),
    ("rr", positive, "> 0 (rotor resistance, pu)"),
    ("xr", positive, "> 0 (rotor leakage reactance, pu)"),
)


def validate_motor(device: str, data: Mapping) -> dict[str, float]:
    """Check the fields of ``PARAMS``."""
    return check_fields(device, data, _RULES)


def derived(p: Mapping, omega_b: float):
    """(x0, x', T'0) from the equivalent-circuit parameters (works on NumPy and JAX arrays)."""
    x0 = p["xs"] + p["xm"]
    x_p = p["xs"] + p["xr"] * p["xm"] / (p["xr"] + p["xm"])
    t0_p = (p["xr"] + p["xm"]) / (omega_b * p["rr"])
    return x0, x_p, t0_p


def motor_current(er_p, em_p, vr, vi, p: Mapping, omega_b: float):
    """(Ir, Ii): the current into the motor from the stator equation, I = (V - E')/(rs + j x')."""
    _, x_p, _ = derived(p, omega_b)
    den = p["rs"] ** 2 + x_p**2
    dr, di = vr - er_p, vi - em_p
    return (p["rs"] * dr + x_p * di) / den, (p["rs"] * di - x_p * dr) / den


def motor_derivatives(s, er_p, em_p, ir, ii, tl, p: Mapping, omega_b: float):
    """(ds/dt, d er_p/dt, d em_p/dt) in 1/s, pu/s, pu/s."""
    x0, x_p, t0_p = derived(p, omega_b)
    te = er_p * ir + em_p * ii
    d_s = (tl - te) / (2.0 * p["H"])
    d_er = omega_b * s * em_p - (er_p + (x0 - x_p) * ii) / t0_p
    d_em = -omega_b * s * er_p - (em_p - (x0 - x_p) * ir) / t0_p
    return d_s, d_er, d_em


def _steady_current(v: complex, s: float, p: Mapping, omega_b: float) -> complex:
    x0, x_p, t0_p = derived(p, omega_b)
    z = p["rs"] + 1j * x_p + 1j * (x0 - x_p) / (1.0 + 1j * omega_b * s * t0_p)
    return v / z


def init_motor(v: complex, p_motor: float, p: Mapping, omega_b: float) -> dict[str, float]:
    """Steady state drawing active power ``p_motor`` (pu) at the terminal voltage ``v`` (complex):
    the slip on the stable branch (below the pull-out slip) solving Re(V conj(I(s))) = p_motor,
    with E' = j (x0 - x') I / (1 + j omega_b s T'0) from d E'/dt = 0. Returns the states, ``q``
    (reactive power drawn), ``tm`` (= Te) and the currents. Raises ``ValueError`` when
    ``p_motor`` exceeds the pull-out power at this voltage."""
    p = {k: float(np.asarray(p[k])) for k in PARAMS}

    def power(s: float) -> float:
        return float((v * np.conj(_steady_current(v, s, p, omega_b))).real)

    slips = np.geomspace(1e-6, 1.0, 400)
    powers = np.array([power(s) for s in slips])
    k_max = int(np.argmax(powers))
    if not 0.0 < p_motor < powers[k_max]:
        raise ValueError(
            f"motor power {p_motor:.4g} pu is outside (0, pull-out {powers[k_max]:.4g} pu) at "
            f"|V| = {abs(v):.4g} pu"
        )
    s0 = brentq(lambda s: power(s) - p_motor, 0.0, slips[k_max], xtol=1e-15, rtol=1e-15)
    x0, x_p, t0_p = derived(p, omega_b)
    i = _steady_current(v, s0, p, omega_b)
    e = 1j * (x0 - x_p) * i / (1.0 + 1j * omega_b * s0 * t0_p)
    s_in = v * np.conj(i)
    return {
        "s": s0,
        "er_p": e.real,
        "em_p": e.imag,
        "Ir": i.real,
        "Ii": i.imag,
        "tm": float((e * np.conj(i)).real),
        "p": float(s_in.real),
        "q": float(s_in.imag),
    }


def _init(v, s, p, omega_s) -> dict:
    """Per motor: ``init_motor`` drawing -Re(s) (the requested injection is a consumption)."""
    rows = [
        init_motor(v[k], -s[k].real, {q: np.asarray(p[q])[k] for q in PARAMS}, omega_s)
        for k in range(len(v))
    ]
    out = {key: np.array([r[key] for r in rows], dtype=float) for key in (*STATES, "tm")}
    out["power"] = -np.array([complex(r["p"], r["q"]) for r in rows], dtype=complex)
    return out


def _current(xs, vr, vi, p, omega_s):
    ir, ii = motor_current(xs[1], xs[2], vr, vi, p, omega_s)
    return -ir, -ii


def _derivatives(xs, vr, vi, p, omega_s):
    ir, ii = motor_current(xs[1], xs[2], vr, vi, p, omega_s)
    return motor_derivatives(*xs, ir, ii, p["tm"], p, omega_s)


def _measure(xs, vr, vi, p, omega_s):
    return (xs[0],)


INDUCTION_MOTOR = DeviceModel(
    name="induction_motor",
    role="bus",
    params=PARAMS,
    states=STATES,
    source="Milano 2010, §15.2.1 (Order III induction machine)",
    check=check_rules(_RULES),
    init=_init,
    derivatives=_derivatives,
    current=_current,
    measures=("slip",),
    measure=_measure,
    prefix="mot_",
    kind="motor",
)
