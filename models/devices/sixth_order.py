"""Synchronous machine, sub-transient sixth-order model (two-axis plus d and q damper circuits).

Source: F. Milano, *Power System Modelling and Scripting*, Springer, 2010, §15.1 "Model VI"
(Marconato's model, the PSAT order-VI machine) with T_AA = 0 and no saturation; the same
equations as Sauer & Pai 1998, §6.4 (sub-transient model) with the stator transients neglected.
Per unit on the system base; time in s; omega in pu; omega_s = 2 pi f rad/s; generator
convention; the d-q frame and the network-frame rotation are those of ``two_axis``
(Vd + jVq = (Vr + jVi) e^{-j(delta - pi/2)}).

    d delta/dt        = omega_s (omega - 1)
    2 H d omega/dt    = TM - Te - D (omega - 1),
                        Te = Ed_pp Id + Eq_pp Iq + (xq_pp - xd_pp) Id Iq
    Td0_p  dEq_p/dt   = -Eq_p - (xd - xd_p) Id + Efd
    Tq0_p  dEd_p/dt   = -Ed_p + (xq - xq_p) Iq
    Td0_pp dEq_pp/dt  = -Eq_pp + Eq_p - (xd_p - xd_pp) Id
    Tq0_pp dEd_pp/dt  = -Ed_pp + Ed_p + (xq_p - xq_pp) Iq

Stator (algebraic, Id and Iq):

    0 = Ed_pp - Vd - Rs Id + xq_pp Iq
    0 = Eq_pp - Vq - Rs Iq - xd_pp Id
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from models.components.validation import check_fields, positive
from models.devices.base import DeviceModel, check_rules, problems_where
from models.devices.two_axis import _check as two_axis_check
from models.devices.two_axis import validate_two_axis

STATES = ("delta", "omega", "Eq_p", "Ed_p", "Eq_pp", "Ed_pp")
PARAMS = (
    "H", "D", "Rs", "xd", "xd_p", "xd_pp", "xq", "xq_p", "xq_pp",
    "Td0_p", "Tq0_p", "Td0_pp", "Tq0_pp",
)  # fmt: skip
_RULES = (
    ("xd_pp", positive, "> 0 (sub-transient reactance, pu)"),
    ("xq_pp", positive, "> 0 (sub-transient reactance, pu)"),
    ("Td0_pp", positive, "> 0 (time constant, s)"),
    ("Tq0_pp", positive, "> 0 (time constant, s)"),
)


def validate_sixth_order(device: str, data: Mapping) -> dict[str, float]:
    """The two-axis checks plus positive sub-transient data with xd_pp < xd_p, xq_pp < xq_p."""
    out = validate_two_axis(device, data) | check_fields(device, data, _RULES)
    for sub, trans in (("xd_pp", "xd_p"), ("xq_pp", "xq_p")):
        if not out[sub] < out[trans]:
            raise ValueError(
                f"{device}: field {sub!r} ({out[sub]}) must be < {trans} ({out[trans]})"
            )
    return out


def electrical_torque(Eq_pp, Ed_pp, Id, Iq, p: Mapping):
    return Ed_pp * Id + Eq_pp * Iq + (p["xq_pp"] - p["xd_pp"]) * Id * Iq


def sixth_order_derivatives(
    delta, omega, Eq_p, Ed_p, Eq_pp, Ed_pp, Id, Iq, Efd, tm, p: Mapping, omega_s: float
):
    """Derivatives of ``STATES`` in that order (rad/s, then pu/s)."""
    del delta
    te = electrical_torque(Eq_pp, Ed_pp, Id, Iq, p)
    return (
        omega_s * (omega - 1.0),
        (tm - te - p["D"] * (omega - 1.0)) / (2.0 * p["H"]),
        (-Eq_p - (p["xd"] - p["xd_p"]) * Id + Efd) / p["Td0_p"],
        (-Ed_p + (p["xq"] - p["xq_p"]) * Iq) / p["Tq0_p"],
        (-Eq_pp + Eq_p - (p["xd_p"] - p["xd_pp"]) * Id) / p["Td0_pp"],
        (-Ed_pp + Ed_p + (p["xq_p"] - p["xq_pp"]) * Iq) / p["Tq0_pp"],
    )


def sixth_order_stator(Eq_pp, Ed_pp, Vd, Vq, Id, Iq, p: Mapping):
    """Stator residuals (pu voltage)."""
    return (
        Ed_pp - Vd - p["Rs"] * Id + p["xq_pp"] * Iq,
        Eq_pp - Vq - p["Rs"] * Iq - p["xd_pp"] * Id,
    )


def init_sixth_order(v: np.ndarray, s: np.ndarray, p: Mapping) -> dict[str, np.ndarray]:
    """Steady state from terminal voltage ``v`` and generation ``s`` (complex pu arrays):
    delta = angle(v + (Rs + j xq) I), then Ed_pp = Vd + Rs Id - xq_pp Iq, Eq_pp = Vq + Rs Iq +
    xd_pp Id, Ed_p = (xq - xq_p) Iq, Eq_p = Eq_pp + (xd_p - xd_pp) Id, Efd = Eq_p + (xd - xd_p) Id,
    TM = Te. Returns the states plus ``Id``, ``Iq``, ``Efd``, ``tm``."""
    v = np.asarray(v, dtype=complex)
    i = np.conj(np.asarray(s, dtype=complex) / v)
    q = {k: np.asarray(p[k], dtype=float) for k in PARAMS}
    delta = np.angle(v + (q["Rs"] + 1j * q["xq"]) * i)
    rot = np.exp(-1j * (delta - np.pi / 2))
    idq, vdq = i * rot, v * rot
    id_, iq = idq.real, idq.imag
    ed_pp = vdq.real + q["Rs"] * id_ - q["xq_pp"] * iq
    eq_pp = vdq.imag + q["Rs"] * iq + q["xd_pp"] * id_
    ed_p = (q["xq"] - q["xq_p"]) * iq
    eq_p = eq_pp + (q["xd_p"] - q["xd_pp"]) * id_
    efd = eq_p + (q["xd"] - q["xd_p"]) * id_
    tm = ed_pp * id_ + eq_pp * iq + (q["xq_pp"] - q["xd_pp"]) * id_ * iq
    return {
        "delta": delta, "omega": np.ones_like(delta), "Eq_p": eq_p, "Ed_p": ed_p,
        "Eq_pp": eq_pp, "Ed_pp": ed_pp, "Id": id_, "Iq": iq, "Efd": efd, "tm": tm,
    }  # fmt: skip


def _check(p) -> list:
    """``validate_sixth_order`` on arrays."""
    return (
        two_axis_check(p)
        + check_rules(_RULES)(p)
        + problems_where(~(p["xd_pp"] < p["xd_p"]), "xd_pp", "must be < xd_p")
        + problems_where(~(p["xq_pp"] < p["xq_p"]), "xq_pp", "must be < xq_p")
    )


def _init(v, s, p) -> dict:
    out = init_sixth_order(v, s, p)
    out["efd"] = out.pop("Efd")
    return out


def _derivatives(xs, Id, Iq, efd, tm, p, omega_s):
    return sixth_order_derivatives(*xs, Id, Iq, efd, tm, p, omega_s)


def _stator(xs, vd, vq, Id, Iq, p):
    return sixth_order_stator(xs[4], xs[5], vd, vq, Id, Iq, p)


def _torque(xs, Id, Iq, p):
    return electrical_torque(xs[4], xs[5], Id, Iq, p)


SIXTH_ORDER = DeviceModel(
    name="sixth_order",
    role="machine",
    params=PARAMS,
    states=STATES,
    source="Milano 2010, §15.1 (Model VI)",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    stator=_stator,
    torque=_torque,
    prefix="",
)
