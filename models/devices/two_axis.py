"""Synchronous machine, two-axis (flux-decay in d and q) model of Sauer & Pai.

Source: P. W. Sauer and M. A. Pai, *Power System Dynamics and Stability*, Prentice Hall, 1998,
Ch. 7 (multimachine simulation, two-axis model; initial conditions in §7.6; data of Example 7.1).
Per unit on the system base (the case builders convert the data from the machine rating) with
the stator voltage base; time in s; angles in rad;
speed ``omega`` in pu of synchronous speed (1 = synchronous), omega_s = 2 pi f rad/s.

Differential equations (generator convention, currents leaving the machine):

    d delta/dt     = omega_s (omega - 1)
    2 H d omega/dt = TM - Te - D (omega - 1),    Te = Ed_p Id + Eq_p Iq + (xq_p - xd_p) Id Iq
    Td0_p dEq_p/dt = -Eq_p - (xd - xd_p) Id + Efd
    Tq0_p dEd_p/dt = -Ed_p + (xq - xq_p) Iq

Stator algebraic equations (kept as algebraic variables Id, Iq):

    0 = Ed_p - Vd - Rs Id + xq_p Iq
    0 = Eq_p - Vq - Rs Iq - xd_p Id

Reference frames (``base.to_machine_frame``, ``base.to_network_frame``): Vd + jVq = (Vr + jVi)
e^{-j(delta - pi/2)} and the current injected into the network Ir + jIi = (Id + jIq)
e^{j(delta - pi/2)}; at xd_p = xq_p = x' the stator equations read
E' = V + (Rs + jx') I, the usual voltage-behind-reactance form. Symbols: delta rotor angle,
Eq_p = E'q, Ed_p = E'd transient EMFs, xd_p = X'd, xq_p = X'q, Td0_p = T'd0, Tq0_p = T'q0.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from models.components.validation import check_fields, non_negative, positive
from models.devices.base import DeviceModel, check_rules, problems_where

STATES = ("delta", "omega", "Eq_p", "Ed_p")
PARAMS = ("H", "D", "Rs", "xd", "xd_p", "xq", "xq_p", "Td0_p", "Tq0_p")
RULES = (
    ("H", positive, "> 0 (inertia constant, s)"),
    ("D", non_negative, ">= 0 (damping, pu torque / pu speed)"),
    ("Rs", non_negative, ">= 0 (stator resistance, pu)"),
    ("xd", positive, "> 0 (pu)"),
    ("xd_p", positive, "> 0 (pu)"),
    ("xq", positive, "> 0 (pu)"),
    ("xq_p", positive, "> 0 (pu)"),
    ("Td0_p", positive, "> 0 (time constant, s)"),
    ("Tq0_p", positive, "> 0 (time constant, s)"),
)


def validate_two_axis(device: str, data: Mapping) -> dict[str, float]:
    """Check the fields of ``PARAMS``: positive H, reactances and time constants, and
    xd_p < xd, xq_p <= xq (transient reactances below synchronous ones)."""
    out = check_fields(device, data, RULES)
    if not out["xd_p"] < out["xd"]:
        raise ValueError(f"{device}: field 'xd_p' (X'd = {out['xd_p']}) must be < xd ({out['xd']})")
    if not out["xq_p"] <= out["xq"]:
        raise ValueError(
            f"{device}: field 'xq_p' (X'q = {out['xq_p']}) must be <= xq ({out['xq']})"
        )
    return out


def electrical_torque(Eq_p, Ed_p, Id, Iq, p: Mapping):
    """Te = Ed_p Id + Eq_p Iq + (xq_p - xd_p) Id Iq (pu; equals the air-gap power at omega = 1)."""
    return Ed_p * Id + Eq_p * Iq + (p["xq_p"] - p["xd_p"]) * Id * Iq


def two_axis_derivatives(delta, omega, Eq_p, Ed_p, Id, Iq, Efd, tm, p: Mapping, omega_s: float):
    """(d delta/dt, d omega/dt, dEq_p/dt, dEd_p/dt) in rad/s, pu/s, pu/s, pu/s."""
    del delta  # the dynamics depend on delta only through Id, Iq
    te = electrical_torque(Eq_p, Ed_p, Id, Iq, p)
    d_delta = omega_s * (omega - 1.0)
    d_omega = (tm - te - p["D"] * (omega - 1.0)) / (2.0 * p["H"])
    d_eq = (-Eq_p - (p["xd"] - p["xd_p"]) * Id + Efd) / p["Td0_p"]
    d_ed = (-Ed_p + (p["xq"] - p["xq_p"]) * Iq) / p["Tq0_p"]
    return d_delta, d_omega, d_eq, d_ed


def two_axis_stator(Eq_p, Ed_p, Vd, Vq, Id, Iq, p: Mapping):
    """Stator residuals (pu voltage): Ed_p - Vd - Rs Id + xq_p Iq, Eq_p - Vq - Rs Iq - xd_p Id."""
    res_d = Ed_p - Vd - p["Rs"] * Id + p["xq_p"] * Iq
    res_q = Eq_p - Vq - p["Rs"] * Iq - p["xd_p"] * Id
    return res_d, res_q


def init_two_axis(v: np.ndarray, s: np.ndarray, p: Mapping) -> dict[str, np.ndarray]:
    """Steady state from the terminal voltage ``v`` and the generated power ``s`` = P + jQ
    (complex pu arrays, one entry per machine), as in Sauer & Pai §7.6:

        I = conj(s / v),  delta = angle(v + (Rs + j xq) I),  omega = 1,
        Id + jIq = I e^{-j(delta - pi/2)},  Vd + jVq = v e^{-j(delta - pi/2)},
        Ed_p = Vd + Rs Id - xq_p Iq  (= (xq - xq_p) Iq),  Eq_p = Vq + Rs Iq + xd_p Id,
        Efd = Eq_p + (xd - xd_p) Id,  TM = Te.

    Returns the states of ``STATES`` plus ``Id``, ``Iq``, ``Efd`` and ``tm``.
    """
    v = np.asarray(v, dtype=complex)
    i = np.conj(np.asarray(s, dtype=complex) / v)
    rs, xd, xd_p = (np.asarray(p[k], dtype=float) for k in ("Rs", "xd", "xd_p"))
    xq, xq_p = np.asarray(p["xq"], dtype=float), np.asarray(p["xq_p"], dtype=float)
    delta = np.angle(v + (rs + 1j * xq) * i)
    rot = np.exp(-1j * (delta - np.pi / 2))
    idq, vdq = i * rot, v * rot
    id_, iq = idq.real, idq.imag
    ed_p = vdq.real + rs * id_ - xq_p * iq
    eq_p = vdq.imag + rs * iq + xd_p * id_
    efd = eq_p + (xd - xd_p) * id_
    tm = ed_p * id_ + eq_p * iq + (xq_p - xd_p) * id_ * iq
    return {
        "delta": delta,
        "omega": np.ones_like(delta),
        "Eq_p": eq_p,
        "Ed_p": ed_p,
        "Id": id_,
        "Iq": iq,
        "Efd": efd,
        "tm": tm,
    }


def _check(p) -> list:
    """``validate_two_axis`` on arrays: the field rules, X'd < Xd and X'q <= Xq."""
    return (
        check_rules(RULES)(p)
        + problems_where(~(p["xd_p"] < p["xd"]), "xd_p", "must be < xd")
        + problems_where(~(p["xq_p"] <= p["xq"]), "xq_p", "must be <= xq")
    )


def _init(v, s, p) -> dict:
    out = init_two_axis(v, s, p)
    out["efd"] = out.pop("Efd")
    return out


def _derivatives(xs, Id, Iq, efd, tm, p, omega_s):
    return two_axis_derivatives(*xs, Id, Iq, efd, tm, p, omega_s)


def _stator(xs, vd, vq, Id, Iq, p):
    return two_axis_stator(xs[2], xs[3], vd, vq, Id, Iq, p)


def _torque(xs, Id, Iq, p):
    return electrical_torque(xs[2], xs[3], Id, Iq, p)


TWO_AXIS = DeviceModel(
    name="two_axis",
    role="machine",
    params=PARAMS,
    states=STATES,
    source="Sauer & Pai 1998, Ch. 7 (two-axis model)",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    stator=_stator,
    torque=_torque,
    prefix="",
)
"""The machine of the MATPOWER cases and wscc9; parameters unprefixed (``H``, ``xd_p``, ...)."""
