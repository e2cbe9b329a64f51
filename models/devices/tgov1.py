"""TGOV1: steam turbine-governor with valve limits (non-windup) and reheater lead-lag.

Source: Siemens PTI, *PSS(R)E Model Library*, "TGOV1" (CONs R, T1, VMAX, VMIN, T2, T3, Dt);
IEEE PES-TR1 (2013) §2. Per unit on MBASE; speed deviation dw = omega - 1.

    T1 dPv/dt = Pref - dw / R - Pv,    VMIN <= Pv <= VMAX   (non-windup: ``base.non_windup``)
    T3 dPt/dt = Pv - Pt
    TM = (T2 / T3) Pv + (1 - T2 / T3) Pt - Dt dw

The limiter gates the derivative at a limit (a discontinuous right-hand side, crossed by the
integrators' step control, not located as an event).
"""

from __future__ import annotations

import jax.numpy as jnp

from models.devices.base import DeviceModel, non_windup, problems_where


def _check(p) -> list:
    out = problems_where(p["R"] <= 0, "R", "must be > 0 (pu speed / pu power)")
    out += problems_where(p["T1"] <= 0, "T1", "must be > 0 (s)")
    out += problems_where(p["T3"] <= 0, "T3", "must be > 0 (s)")
    out += problems_where(~(p["VMAX"] > p["VMIN"]), "VMAX", "must be > VMIN")
    return out


def _init(tm, p) -> dict:
    return {"Pv": tm, "Pt": tm, "pref": tm}


def _derivatives(xs, omega, pref, p):
    pv, pt = xs
    d_pv = (pref - (omega - 1.0) / p["R"] - pv) / p["T1"]
    return non_windup(d_pv, pv, p["VMIN"], p["VMAX"]), (pv - pt) / p["T3"]


def _output(xs, omega, p):
    pv, pt = xs
    pv = jnp.clip(pv, p["VMIN"], p["VMAX"])
    ratio = p["T2"] / p["T3"]
    return ratio * pv + (1.0 - ratio) * pt - p["Dt"] * (omega - 1.0)


TGOV1 = DeviceModel(
    name="TGOV1",
    role="governor",
    params=("R", "T1", "VMAX", "VMIN", "T2", "T3", "Dt"),
    states=("Pv", "Pt"),
    source="PSS(R)E Model Library, TGOV1",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    output=_output,
)
