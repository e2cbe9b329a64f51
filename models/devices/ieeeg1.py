"""IEEEG1: IEEE type 1 steam turbine-governor (single shaft: the HP fractions only).

Source: Siemens PTI, *PSS(R)E Model Library*, "IEEEG1" (ICONs M1, M2; CONs K, T1, T2, T3, Uo, Uc,
PMAX, PMIN, T4, K1, K2, T5, K3, K4, T6, K5, K6, T7, K7, K8); IEEE PES-TR1 (2013) §2. Per unit on
MBASE; speed deviation dw = omega - 1. A zero T1, T4, T5, T6 or T7 removes its block.

    y   = K (1 + s T2)/(1 + s T1) dw                            (droop with lead-lag)
    dGV/dt = clip((Pref - y - GV) / T3, Uc, Uo),  PMIN <= GV <= PMAX  (rate and position
                                                                   limits, non-windup)
    T4 dx1/dt = GV - x1,  T5 dx2/dt = x1 - x2,  T6 dx3/dt = x2 - x3,  T7 dx4/dt = x3 - x4
    TM = K1 x1 + K3 x2 + K5 x3 + K7 x4

A cross-compound second machine (M1, M2 != 0, or K2, K4, K6, K8 != 0) is refused.
Initialization: GV = x1..x4 = TM0 / (K1 + K3 + K5 + K7), Pref = GV.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from models.devices.base import DeviceModel, lag, lead_lag, non_windup, problems_where

PARAMS = ("M1", "M2", "K", "T1", "T2", "T3", "Uo", "Uc", "PMAX", "PMIN", "T4", "K1", "K2", "T5",
          "K3", "K4", "T6", "K5", "K6", "T7", "K7", "K8")  # fmt: skip


def _check(p) -> list:
    out = problems_where((p["M1"] != 0) | (p["M2"] != 0), "M1",
                         "a second (low-pressure) machine is not supported")  # fmt: skip
    lp = (p["K2"] != 0) | (p["K4"] != 0) | (p["K6"] != 0) | (p["K8"] != 0)
    out += problems_where(lp, "K2", "K2, K4, K6, K8 feed a second machine: must be 0")
    out += problems_where(p["K"] <= 0, "K", "must be > 0 (1 / droop)")
    out += problems_where(p["T3"] <= 0, "T3", "must be > 0 (s)")
    for k in ("T1", "T4", "T5", "T6", "T7"):
        out += problems_where(p[k] < 0, k, "must be >= 0 (s)")
    out += problems_where((p["T1"] == 0) & (p["T2"] != 0), "T2", "must be 0 when T1 = 0")
    out += problems_where(~(p["Uo"] > p["Uc"]), "Uo", "must be > Uc")
    out += problems_where(~(p["PMAX"] > p["PMIN"]), "PMAX", "must be > PMIN")
    total = p["K1"] + p["K3"] + p["K5"] + p["K7"]
    out += problems_where(total <= 0, "K1", "K1 + K3 + K5 + K7 must be > 0")
    return out


def _init(tm, p) -> dict:
    gv = tm / (p["K1"] + p["K3"] + p["K5"] + p["K7"])
    bad = (gv < p["PMIN"]) | (gv > p["PMAX"])
    if np.any(bad):
        raise ValueError(f"IEEEG1: initial gate position {gv[bad]} outside [PMIN, PMAX]")
    zero = np.zeros_like(gv)
    return {"xll": zero, "GV": gv, "x1": gv, "x2": gv, "x3": gv, "x4": gv, "pref": gv}


def _stages(xs, p):
    """(derivatives, outputs) of the four steam stages."""
    _, gv, x1, x2, x3, x4 = xs
    d1, y1 = lag(x1, gv, p["T4"])
    d2, y2 = lag(x2, y1, p["T5"])
    d3, y3 = lag(x3, y2, p["T6"])
    d4, y4 = lag(x4, y3, p["T7"])
    return (d1, d2, d3, d4), (y1, y2, y3, y4)


def _derivatives(xs, omega, pref, p):
    xll, gv = xs[0], xs[1]
    d_ll, y = lead_lag(xll, omega - 1.0, p["T2"], p["T1"])
    rate = jnp.clip((pref - p["K"] * y - gv) / p["T3"], p["Uc"], p["Uo"])
    d_gv = non_windup(rate, gv, p["PMIN"], p["PMAX"])
    d_stages, _ = _stages(xs, p)
    return (d_ll, d_gv, *d_stages)


def _output(xs, omega, p):
    _, (y1, y2, y3, y4) = _stages(xs, p)
    return p["K1"] * y1 + p["K3"] * y2 + p["K5"] * y3 + p["K7"] * y4


IEEEG1 = DeviceModel(
    name="IEEEG1",
    role="governor",
    params=PARAMS,
    states=("xll", "GV", "x1", "x2", "x3", "x4"),
    source="PSS(R)E Model Library, IEEEG1",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    output=_output,
)
