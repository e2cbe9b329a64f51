"""GENROU: round-rotor machine, sub-transient model with quadratic saturation.

Source: Siemens PTI, *PSS(R)E Model Library*, "GENROU" (CONs T'do, T''do, T'qo, T''qo, H, D,
Xd, Xq, X'd, X'q, X''d, Xl, S(1.0), S(1.2); X''q = X''d); the equations as in the block diagram
(see also Sauer & Pai, *Power System Dynamics and Stability*, 1998, §6.4, for the flux-linkage
form). Per unit on MBASE, R_a from ZSORCE (ZR). d-q frame of ``base.to_machine_frame``
(Vd + jVq = V e^{-j(delta - pi/2)}); the q-axis quantities are written so that E''d = +psi''q
of the d-axis analogy (E'q -> E'd, Id -> -Iq).

    k1d = (X''d - Xl)/(X'd - Xl),  k2d = (X'd - X''d)/(X'd - Xl),  likewise k1q, k2q with X'q
    E''q = k1d E'q + k2d psi_kd,   E''d = k1q E'd + k2q psi_kq,   psi'' = |E''d + j E''q|
    Se = B (psi'' - A)^2 / psi''   (quadratic through S(1.0), S(1.2))
    T'do  dE'q/dt   = Efd - E'q - (Xd - X'd)[Id + k2d/(X'd - Xl) (E'q - psi_kd - (X'd - Xl) Id)]
                      - Se E''q
    T''do dpsi_kd/dt = E'q - psi_kd - (X'd - Xl) Id
    T'qo  dE'd/dt   = -E'd + (Xq - X'q)[Iq - k2q/(X'q - Xl) (E'd - psi_kq + (X'q - Xl) Iq)]
                      - Se E''d (Xq - Xl)/(Xd - Xl)
    T''qo dpsi_kq/dt = E'd - psi_kq + (X'q - Xl) Iq
    d delta/dt = omega_s (omega - 1),   2 H d omega/dt = TM - Te - D (omega - 1)
    Te = E''d Id + E''q Iq    (air-gap torque; torque = power at the speed used in the stator)
    LadIfd = Efd - T'do dE'q/dt   (field current in PSS/E's units, read by ESST3A)
    0 = E''d - Vd - Ra Id + X''d Iq,   0 = E''q - Vq - Ra Iq - X''d Id

Speed effects in the stator voltage are neglected (omega = 1 there), as in PSS/E's GENROU.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from models.devices.base import (
    DeviceModel,
    problems_where,
    quadratic_saturation,
    saturation,
)

PARAMS = ("Tdo_p", "Tdo_pp", "Tqo_p", "Tqo_pp", "H", "D", "Xd", "Xq", "Xd_p", "Xq_p", "Xd_pp",
          "Xl", "S10", "S12")  # fmt: skip


def _check(p) -> list:
    out = []
    for k in ("Tdo_p", "Tdo_pp", "Tqo_p", "Tqo_pp", "H"):
        out += problems_where(p[k] <= 0, k, "must be > 0")
    out += problems_where(p["D"] < 0, "D", "must be >= 0")
    out += problems_where(p["Xl"] <= 0, "Xl", "must be > 0")
    for k in ("Xd", "Xd_p", "Xq_p"):  # the flux weights and saturation divide by X - Xl
        out += problems_where(p[k] == p["Xl"], k, "must differ from Xl (the equations divide by "
                              "their difference)")  # fmt: skip
    out += problems_where(p["S10"] < 0, "S10", "must be >= 0")
    out += problems_where((p["S10"] > 0) & ~(p["S12"] > p["S10"]), "S12", "must be > S(1.0)")
    return out


def _plausible(p) -> list:
    """The reactance ordering of PSS/E's data sheet, Xl < X''d <= X'q <= X'd <= Xd (X'q <= Xq):
    what real machines satisfy, but GENROU's equations do not need (a warning by default)."""
    out = problems_where(~(p["Xd_pp"] > p["Xl"]), "Xd_pp", "must be > Xl")
    out += problems_where(~(p["Xd_p"] > p["Xd_pp"]), "Xd_p", "must be > X''d")
    out += problems_where(~(p["Xq_p"] > p["Xd_pp"]), "Xq_p", "must be > X''q = X''d")
    out += problems_where(~(p["Xd"] >= p["Xd_p"]), "Xd", "must be >= X'd")
    out += problems_where(~(p["Xq"] >= p["Xq_p"]), "Xq", "must be >= X'q")
    return out


def _coefficients(p):
    xl, xpp = p["Xl"], p["Xd_pp"]
    k1d = (xpp - xl) / (p["Xd_p"] - xl)
    k1q = (xpp - xl) / (p["Xq_p"] - xl)
    return k1d, 1.0 - k1d, k1q, 1.0 - k1q


def _subtransient(xs, p):
    """(E''d, E''q) from the transient and damper states."""
    _, _, eq_p, psi_kd, ed_p, psi_kq = xs
    k1d, k2d, k1q, k2q = _coefficients(p)
    return k1q * ed_p + k2q * psi_kq, k1d * eq_p + k2d * psi_kd


def _init(v, s, p) -> dict:
    a, b = quadratic_saturation(p["S10"], p["S12"])
    i = np.conj(s / v)
    epp = v + (p["ra"] + 1j * p["Xd_pp"]) * i
    se = saturation(np.abs(epp), a, b)
    c = (p["Xq"] - p["Xl"]) / (p["Xd"] - p["Xl"])
    x_e = (p["Xq"] - p["Xd_pp"]) / (1.0 + c * se)
    delta = np.angle(epp + 1j * x_e * i)
    rot = np.exp(-1j * (delta - np.pi / 2))
    idq, edq = i * rot, epp * rot
    id_, iq = idq.real, idq.imag
    ed_pp, eq_pp = edq.real, edq.imag
    ed_p = ed_pp - (p["Xq_p"] - p["Xd_pp"]) * iq
    psi_kq = ed_p + (p["Xq_p"] - p["Xl"]) * iq
    eq_p = eq_pp + (p["Xd_p"] - p["Xd_pp"]) * id_
    psi_kd = eq_p - (p["Xd_p"] - p["Xl"]) * id_
    efd = eq_p + (p["Xd"] - p["Xd_p"]) * id_ + se * eq_pp
    return {
        "delta": delta,
        "omega": np.ones_like(delta),
        "Eq_p": eq_p,
        "psi_kd": psi_kd,
        "Ed_p": ed_p,
        "psi_kq": psi_kq,
        "Id": id_,
        "Iq": iq,
        "efd": efd,
        "tm": ed_pp * id_ + eq_pp * iq,
        "sat_a": a,
        "sat_b": b,
    }


def _derivatives(xs, Id, Iq, efd, tm, p, omega_s):
    delta, omega, eq_p, psi_kd, ed_p, psi_kq = xs
    del delta
    ed_pp, eq_pp = _subtransient(xs, p)
    se = saturation(jnp.sqrt(ed_pp**2 + eq_pp**2), p["sat_a"], p["sat_b"])
    xl = p["Xl"]
    _, k2d, _, k2q = _coefficients(p)
    d_eq = (
        efd
        - eq_p
        - (p["Xd"] - p["Xd_p"])
        * (Id + k2d / (p["Xd_p"] - xl) * (eq_p - psi_kd - (p["Xd_p"] - xl) * Id))
        - se * eq_pp
    ) / p["Tdo_p"]
    d_kd = (eq_p - psi_kd - (p["Xd_p"] - xl) * Id) / p["Tdo_pp"]
    d_ed = (
        -ed_p
        + (p["Xq"] - p["Xq_p"])
        * (Iq - k2q / (p["Xq_p"] - xl) * (ed_p - psi_kq + (p["Xq_p"] - xl) * Iq))
        - se * ed_pp * (p["Xq"] - xl) / (p["Xd"] - xl)
    ) / p["Tqo_p"]
    d_kq = (ed_p - psi_kq + (p["Xq_p"] - xl) * Iq) / p["Tqo_pp"]
    te = ed_pp * Id + eq_pp * Iq
    d_omega = (tm - te - p["D"] * (omega - 1.0)) / (2.0 * p["H"])
    return omega_s * (omega - 1.0), d_omega, d_eq, d_kd, d_ed, d_kq


def _field_current(xs, Id, Iq, p):
    """LadIfd: T'do dE'q/dt = Efd - LadIfd (the d-axis terms of the E'q equation)."""
    del Iq
    _, _, eq_p, psi_kd, ed_p, psi_kq = xs
    del ed_p, psi_kq
    ed_pp, eq_pp = _subtransient(xs, p)
    se = saturation(jnp.sqrt(ed_pp**2 + eq_pp**2), p["sat_a"], p["sat_b"])
    xl = p["Xl"]
    _, k2d, _, _ = _coefficients(p)
    return (
        eq_p
        + (p["Xd"] - p["Xd_p"])
        * (Id + k2d / (p["Xd_p"] - xl) * (eq_p - psi_kd - (p["Xd_p"] - xl) * Id))
        + se * eq_pp
    )


def _stator(xs, vd, vq, Id, Iq, p):
    ed_pp, eq_pp = _subtransient(xs, p)
    x = p["Xd_pp"]
    return ed_pp - vd - p["ra"] * Id + x * Iq, eq_pp - vq - p["ra"] * Iq - x * Id


def _torque(xs, Id, Iq, p):
    ed_pp, eq_pp = _subtransient(xs, p)
    return ed_pp * Id + eq_pp * Iq


GENROU = DeviceModel(
    name="GENROU",
    role="machine",
    params=PARAMS,
    states=("delta", "omega", "Eq_p", "psi_kd", "Ed_p", "psi_kq"),
    source="PSS(R)E Model Library, GENROU",
    check=_check,
    plausible=_plausible,
    init=_init,
    derivatives=_derivatives,
    stator=_stator,
    torque=_torque,
    field_current=_field_current,
)
