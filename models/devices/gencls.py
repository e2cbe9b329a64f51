"""GENCLS: classical machine, constant voltage behind transient reactance.

Source: Siemens PTI, *PSS(R)E Model Library*, "GENCLS" (CONs H, D); the source impedance
ZSORCE = ZR + jZX of the raw generator record is the machine's R_a + jX'_d. Per unit on MBASE.

    d delta/dt = omega_s (omega - 1)
    2 H d omega/dt = TM - Te - D (omega - 1),        Te = E Iq
    0 = 0 - Vd - Ra Id + X'd Iq,   0 = E - Vq - Ra Iq - X'd Id   (stator, d-q frame of
                                                                  ``base.to_machine_frame``)

TM is the mechanical torque (held at its initial value without a governor); E = |V + (Ra +
jX'd) I| at the power flow, delta its angle.
"""

from __future__ import annotations

import numpy as np

from models.devices.base import DeviceModel, problems_where


def _check(p) -> list:
    return (
        problems_where(p["H"] <= 0, "H", "must be > 0 (s)")
        + problems_where(p["D"] < 0, "D", "must be >= 0 (pu)")
        + problems_where(p["xd_p"] <= 0, "ZX", "source reactance must be > 0 (pu on MBASE)")
    )


def _init(v, s, p) -> dict:
    i = np.conj(s / v)
    e = v + (p["ra"] + 1j * p["xd_p"]) * i
    delta = np.angle(e)
    rot = np.exp(-1j * (delta - np.pi / 2))
    idq = i * rot
    return {
        "delta": delta,
        "omega": np.ones_like(delta),
        "E": np.abs(e),
        "Id": idq.real,
        "Iq": idq.imag,
        "efd": np.abs(e),
        "tm": np.abs(e) * idq.imag,
    }


def _derivatives(xs, Id, Iq, efd, tm, p, omega_s):
    delta, omega = xs
    del delta, efd, Id
    return omega_s * (omega - 1.0), (tm - p["E"] * Iq - p["D"] * (omega - 1.0)) / (2.0 * p["H"])


def _stator(xs, vd, vq, Id, Iq, p):
    return -vd - p["ra"] * Id + p["xd_p"] * Iq, p["E"] - vq - p["ra"] * Iq - p["xd_p"] * Id


def _torque(xs, Id, Iq, p):
    return p["E"] * Iq


GENCLS = DeviceModel(
    name="GENCLS",
    role="machine",
    params=("H", "D"),
    states=("delta", "omega"),
    source="PSS(R)E Model Library, GENCLS",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    stator=_stator,
    torque=_torque,
)
