"""GENSAL: salient-pole machine, sub-transient model with quadratic saturation on the d-axis.

Source: Siemens PTI, *PSS(R)E Model Library*, "GENSAL" (CONs T'do, T''do, T''qo, H, D, Xd, Xq,
X'd, X''d, Xl, S(1.0), S(1.2); X''q = X''d); the equations as in its block diagram. GENSAL is
GENROU (``genrou.py``, same d-q frame, signs and per-unit base; R_a from ZSORCE) without the
q-axis transient winding: one q-axis damper with T''qo, and the saturation a function of E'q
acting on the d-axis only (PSS/E: the saturation block's input is E'q, its output B (E'q - A)^2
= Se(E'q) E'q adds to the field current LadIfd; nothing on the q-axis). OpenIPSL's
``Electrical.Machines.PSSE.GENSAL`` (a Modelica transcription of the manual) states the same
LadIfd, E'q input of the saturation and q-axis equation.

    k1d = (X''d - Xl)/(X'd - Xl),  k2d = (X'd - X''d)/(X'd - Xl)
    E''q = k1d E'q + k2d psi_kd,   Se = B (E'q - A)^2 / E'q   (quadratic through S(1.0), S(1.2))
    T'do  dE'q/dt   = Efd - E'q - (Xd - X'd)[Id + k2d/(X'd - Xl) (E'q - psi_kd - (X'd - Xl) Id)]
                      - Se E'q
    T''do dpsi_kd/dt = E'q - psi_kd - (X'd - Xl) Id
    T''qo dE''d/dt   = -E''d + (Xq - X''q) Iq      (E''d = +psi''q as in GENROU's frame)
    d delta/dt = omega_s (omega - 1),   2 H d omega/dt = TM - Te - D (omega - 1)
    Te = E''d Id + E''q Iq,   LadIfd = Efd - T'do dE'q/dt
    0 = E''d - Vd - Ra Id + X''d Iq,   0 = E''q - Vq - Ra Iq - X''d Id

Speed effects in the stator voltage are neglected (omega = 1 there), as in GENROU.
Initialization (power-flow V, S): I = conj(S / V); the q-axis is unsaturated, so the rotor angle
is delta = arg(V + (Ra + j Xq) I); (Id, Iq), (E''d, E''q) rotate I and E'' = V + (Ra + j X''d) I
into the machine frame (then E''d = (Xq - X''d) Iq holds); E'q = E''q + (X'd - X''d) Id,
psi_kd = E'q - (X'd - Xl) Id, Efd = E'q + (Xd - X'd) Id + Se(E'q) E'q, TM = Te.

Limit in which GENSAL is exactly GENROU: S(1.0) = S(1.2) = 0 and GENROU's X'q = Xq. Then
GENROU's E'd stays at 0 (T'qo dE'd/dt = -E'd), and its E''d = k2q psi_kq obeys
T''qo dE''d/dt = -E''d + (Xq - X''q) Iq, GENSAL's q-axis (``tests/test_psse_exdc2_gensal.py``).
With saturation the two differ: GENROU saturates on |psi''| on both axes.
"""

from __future__ import annotations

import numpy as np

from models.devices.base import (
    DeviceModel,
    problems_where,
    quadratic_saturation,
    saturation,
)

PARAMS = ("Tdo_p", "Tdo_pp", "Tqo_pp", "H", "D", "Xd", "Xq", "Xd_p", "Xd_pp", "Xl", "S10",
          "S12")  # fmt: skip


def _check(p) -> list:
    out = []
    for k in ("Tdo_p", "Tdo_pp", "Tqo_pp", "H"):
        out += problems_where(p[k] <= 0, k, "must be > 0")
    out += problems_where(p["D"] < 0, "D", "must be >= 0")
    out += problems_where(p["Xl"] <= 0, "Xl", "must be > 0")
    out += problems_where(~(p["Xd_pp"] > p["Xl"]), "Xd_pp", "must be > Xl")
    out += problems_where(~(p["Xd_p"] > p["Xd_pp"]), "Xd_p", "must be > X''d")
    out += problems_where(~(p["Xd"] >= p["Xd_p"]), "Xd", "must be >= X'd")
    out += problems_where(~(p["Xq"] >= p["Xd_pp"]), "Xq", "must be >= X''q = X''d")
    out += problems_where(p["S10"] < 0, "S10", "must be >= 0")
    out += problems_where((p["S10"] > 0) & ~(p["S12"] > p["S10"]), "S12", "must be > S(1.0)")
    return out


def _coefficients(p):
    k1d = (p["Xd_pp"] - p["Xl"]) / (p["Xd_p"] - p["Xl"])
    return k1d, 1.0 - k1d


def _eq_pp(eq_p, psi_kd, p):
    k1d, k2d = _coefficients(p)
    return k1d * eq_p + k2d * psi_kd


def _init(v, s, p) -> dict:
    a, b = quadratic_saturation(p["S10"], p["S12"])
    i = np.conj(s / v)
    delta = np.angle(v + (p["ra"] + 1j * p["Xq"]) * i)
    rot = np.exp(-1j * (delta - np.pi / 2))
    epp = v + (p["ra"] + 1j * p["Xd_pp"]) * i
    idq, edq = i * rot, epp * rot
    id_, iq = idq.real, idq.imag
    ed_pp, eq_pp = edq.real, edq.imag
    eq_p = eq_pp + (p["Xd_p"] - p["Xd_pp"]) * id_
    psi_kd = eq_p - (p["Xd_p"] - p["Xl"]) * id_
    efd = eq_p + (p["Xd"] - p["Xd_p"]) * id_ + saturation(eq_p, a, b) * eq_p
    return {
        "delta": delta,
        "omega": np.ones_like(delta),
        "Eq_p": eq_p,
        "psi_kd": psi_kd,
        "Ed_pp": ed_pp,
        "Id": id_,
        "Iq": iq,
        "efd": efd,
        "tm": ed_pp * id_ + eq_pp * iq,
        "sat_a": a,
        "sat_b": b,
    }


def _field_current(xs, Id, Iq, p):
    """LadIfd: T'do dE'q/dt = Efd - LadIfd."""
    del Iq
    _, _, eq_p, psi_kd, _ = xs
    xl = p["Xl"]
    _, k2d = _coefficients(p)
    return (
        eq_p
        + (p["Xd"] - p["Xd_p"])
        * (Id + k2d / (p["Xd_p"] - xl) * (eq_p - psi_kd - (p["Xd_p"] - xl) * Id))
        + saturation(eq_p, p["sat_a"], p["sat_b"]) * eq_p
    )


def _derivatives(xs, Id, Iq, efd, tm, p, omega_s):
    _, omega, eq_p, psi_kd, ed_pp = xs
    eq_pp = _eq_pp(eq_p, psi_kd, p)
    d_eq = (efd - _field_current(xs, Id, Iq, p)) / p["Tdo_p"]
    d_kd = (eq_p - psi_kd - (p["Xd_p"] - p["Xl"]) * Id) / p["Tdo_pp"]
    d_edpp = (-ed_pp + (p["Xq"] - p["Xd_pp"]) * Iq) / p["Tqo_pp"]
    te = ed_pp * Id + eq_pp * Iq
    d_omega = (tm - te - p["D"] * (omega - 1.0)) / (2.0 * p["H"])
    return omega_s * (omega - 1.0), d_omega, d_eq, d_kd, d_edpp


def _stator(xs, vd, vq, Id, Iq, p):
    _, _, eq_p, psi_kd, ed_pp = xs
    eq_pp = _eq_pp(eq_p, psi_kd, p)
    x = p["Xd_pp"]
    return ed_pp - vd - p["ra"] * Id + x * Iq, eq_pp - vq - p["ra"] * Iq - x * Id


def _torque(xs, Id, Iq, p):
    _, _, eq_p, psi_kd, ed_pp = xs
    return ed_pp * Id + _eq_pp(eq_p, psi_kd, p) * Iq


GENSAL = DeviceModel(
    name="GENSAL",
    role="machine",
    params=PARAMS,
    states=("delta", "omega", "Eq_p", "psi_kd", "Ed_pp"),
    source="PSS(R)E Model Library, GENSAL",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    stator=_stator,
    torque=_torque,
    field_current=_field_current,
)
