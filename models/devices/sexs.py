"""SEXS: simplified excitation system (lead-lag and a limited exciter lag).

Source: Siemens PTI, *PSS(R)E Model Library*, "SEXS" (CONs TA/TB, TB, K, TE, EMIN, EMAX). Per
unit field voltage on the machine's base; time in s.

    u = Vref - Vt + Vs                               (voltage error, pu)
    TB dxl/dt = u - xl,   y = (TA/TB) u + (1 - TA/TB) xl   (lead-lag (1 + s TA)/(1 + s TB))
    TE dEfd/dt = K y - Efd,   EMIN <= Efd <= EMAX    (non-windup: ``base.non_windup``)

Initialization from the machine's field voltage Efd0: y = Efd0 / K, xl = u = y, Vref = Vt + u.
"""

from __future__ import annotations

import jax.numpy as jnp

from models.devices.base import DeviceModel, non_windup, problems_where


def _check(p) -> list:
    out = problems_where(p["TB"] <= 0, "TB", "must be > 0 (s)")
    out += problems_where(p["TE"] <= 0, "TE", "must be > 0 (s)")
    out += problems_where(p["K"] <= 0, "K", "must be > 0")
    out += problems_where(p["TA_TB"] < 0, "TA_TB", "must be >= 0")
    out += problems_where(~(p["EMAX"] > p["EMIN"]), "EMAX", "must be > EMIN")
    return out


def _init(efd, vt, p) -> dict:
    y = efd / p["K"]
    outside = (efd < p["EMIN"]) | (efd > p["EMAX"])
    if outside.any():
        raise ValueError(
            f"SEXS: initial field voltage {efd[outside]} outside [EMIN, EMAX] = "
            f"[{p['EMIN'][outside]}, {p['EMAX'][outside]}]"
        )
    return {"xl": y, "Efd": efd, "vref": vt + y}


def _derivatives(xs, vt, vref, vs, p):
    xl, efd = xs
    u = vref - vt + vs
    y = p["TA_TB"] * u + (1.0 - p["TA_TB"]) * xl
    d_efd = (p["K"] * y - efd) / p["TE"]
    return (u - xl) / p["TB"], non_windup(d_efd, efd, p["EMIN"], p["EMAX"])


def _output(xs, vt, p):
    return jnp.clip(xs[1], p["EMIN"], p["EMAX"])


SEXS = DeviceModel(
    name="SEXS",
    role="exciter",
    params=("TA_TB", "TB", "K", "TE", "EMIN", "EMAX"),
    states=("xl", "Efd"),
    source="PSS(R)E Model Library, SEXS",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    output=_output,
)
