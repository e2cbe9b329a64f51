"""IEESGO: IEEE standard steam turbine-governor (1973 committee report's model).

Source: Siemens PTI, *PSS(R)E Model Library*, "IEESGO" (CONs T1, T2, T3, T4, T5, T6, K1, K2, K3,
PMAX, PMIN); IEEE Committee Report, "Dynamic models for steam and hydro turbines in power system
studies", IEEE Trans. PAS-92 (1973). Per unit on MBASE; dw = omega - 1; P0 the load reference
(the model's set-point ``pref``).

    y  = K1 (1 + s T2) / ((1 + s T1)(1 + s T3)) dw        (droop, lag, lead-lag)
    u  = clip(P0 - y, PMIN, PMAX)                        (static limit on the valve demand)
    T4 dx3/dt = u - x3                                   (steam inlet)
    T5 dx4/dt = K2 x3 - x4                               (reheater)
    T6 dx5/dt = K3 x4 - x5                               (crossover)
    TM = (1 - K2) x3 + (1 - K3) x4 + x5

A zero T1, T3, T5 or T6 removes its block (``base.lag``, ``base.lead_lag``); T4 must be > 0 (the
output reads x3). Initialization: y = 0, x3 = P0 = TM0, x4 = K2 TM0, x5 = K2 K3 TM0; a TM0
outside [PMIN, PMAX] is refused naming the record and the value.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from models.devices.base import (
    DeviceModel,
    lag,
    lead_lag,
    problems_where,
    refuse_outside,
)

PARAMS = ("T1", "T2", "T3", "T4", "T5", "T6", "K1", "K2", "K3", "PMAX", "PMIN")


def _check(p) -> list:
    out = problems_where(~(p["T4"] > 0), "T4", "must be > 0 (s)")
    for k in ("T1", "T3", "T5", "T6"):
        out += problems_where(~(p[k] >= 0), k, "must be >= 0 (s)")
    out += problems_where((p["T3"] == 0) & (p["T2"] != 0), "T2", "must be 0 when T3 = 0")
    out += problems_where(~(p["PMAX"] > p["PMIN"]), "PMAX", "must be > PMIN")
    return out


def _init(tm, p) -> dict:
    tm = np.asarray(tm, float)
    refuse_outside("IEESGO", "mechanical power TM0", tm, p["PMIN"], p["PMAX"],
                   " (power limits [PMIN, PMAX])")  # fmt: skip
    zero = np.zeros_like(tm)
    x4 = p["K2"] * tm
    return {"x1": zero, "x2": zero, "x3": tm, "x4": x4, "x5": p["K3"] * x4, "pref": tm}


def _stages(xs, p):
    """(derivatives, outputs) of the reheater and crossover lags."""
    _, _, x3, x4, x5 = xs
    d4, y4 = lag(x4, p["K2"] * x3, p["T5"])
    d5, y5 = lag(x5, p["K3"] * y4, p["T6"])
    return (d4, d5), (y4, y5)


def _derivatives(xs, omega, pref, p):
    x1, x2, x3 = xs[0], xs[1], xs[2]
    d1, y1 = lag(x1, p["K1"] * (omega - 1.0), p["T1"])
    d2, y = lead_lag(x2, y1, p["T2"], p["T3"])
    u = jnp.clip(pref - y, p["PMIN"], p["PMAX"])
    (d4, d5), _ = _stages(xs, p)
    return d1, d2, (u - x3) / p["T4"], d4, d5


def _output(xs, omega, p):
    _, (y4, y5) = _stages(xs, p)
    return (1.0 - p["K2"]) * xs[2] + (1.0 - p["K3"]) * y4 + y5


IEESGO = DeviceModel(
    name="IEESGO",
    role="governor",
    params=PARAMS,
    states=("x1", "x2", "x3", "x4", "x5"),
    source="PSS(R)E Model Library, IEESGO",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    output=_output,
)
