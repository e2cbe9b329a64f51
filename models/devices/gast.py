"""GAST: gas turbine-governor with a valve lag, a turbine lag and an exhaust-temperature load limit.

Source: Siemens PTI, *PSS(R)E Model Library*, "GAST" (CONs R, T1, T2, T3, AT, KT, VMAX, VMIN,
DTURB; states: fuel valve, fuel flow, exhaust temperature); Rowen, "Simplified mathematical
representations of heavy-duty gas turbines", ASME J. Eng. Power 105 (1983) for the structure.
Per unit on MBASE; speed deviation dw = omega - 1.

    u_speed = Pref - dw / R
    u_temp  = AT + KT (AT - x3)                               (load limit)
    T1 dx1/dt = min(u_speed, u_temp) - x1,  VMIN <= x1 <= VMAX    (low-value gate; non-windup)
    T2 dx2/dt = x1 - x2                                       (fuel flow, turbine)
    T3 dx3/dt = x2 - x3                                       (exhaust temperature)
    TM = x2 - DTURB dw

A zero T2 or T3 removes its block (``base.lag``). Initialization: x1 = x2 = x3 = TM0, Pref = TM0;
a machine loaded above AT (the load limit would hold the valve below TM0: no equilibrium) or
outside [VMIN, VMAX] is refused naming its record and TM0. The low-value gate and the limiter
make the right-hand side piecewise smooth (crossed by the integrators' step control).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from models.devices.base import DeviceModel, lag, non_windup, problems_where, refuse_outside

PARAMS = ("R", "T1", "T2", "T3", "AT", "KT", "VMAX", "VMIN", "DTURB")


def _check(p) -> list:
    out = problems_where(~(p["R"] > 0), "R", "must be > 0 (pu speed / pu power)")
    out += problems_where(~(p["T1"] > 0), "T1", "must be > 0 (s)")
    for k in ("T2", "T3"):
        out += problems_where(~(p[k] >= 0), k, "must be >= 0 (s)")
    out += problems_where(~(p["KT"] >= 0), "KT", "must be >= 0")
    out += problems_where(~(p["VMAX"] > p["VMIN"]), "VMAX", "must be > VMIN")
    return out


def _init(tm, p) -> dict:
    tm = np.asarray(tm, float)
    refuse_outside(
        "GAST",
        "mechanical power TM0",
        tm,
        -np.inf,
        p["AT"],
        " (above the load limit AT: the temperature limit would hold the valve)",
    )
    refuse_outside("GAST", "valve position (= TM0)", tm, p["VMIN"], p["VMAX"],
                   " (valve limits [VMIN, VMAX])")  # fmt: skip
    return {"x1": tm, "x2": tm, "x3": tm, "pref": tm}


def _flow(xs, p):
    """(derivatives, outputs) of the fuel-flow and exhaust-temperature lags."""
    x1, x2, x3 = xs
    d2, y2 = lag(x2, jnp.clip(x1, p["VMIN"], p["VMAX"]), p["T2"])
    d3, y3 = lag(x3, y2, p["T3"])
    return (d2, d3), (y2, y3)


def _derivatives(xs, omega, pref, p):
    x1 = xs[0]
    (d2, d3), (_, y3) = _flow(xs, p)
    u = jnp.minimum(pref - (omega - 1.0) / p["R"], p["AT"] + p["KT"] * (p["AT"] - y3))
    d1 = non_windup((u - x1) / p["T1"], x1, p["VMIN"], p["VMAX"])
    return d1, d2, d3


def _output(xs, omega, p):
    _, (y2, _) = _flow(xs, p)
    return y2 - p["DTURB"] * (omega - 1.0)


GAST = DeviceModel(
    name="GAST",
    role="governor",
    params=PARAMS,
    states=("x1", "x2", "x3"),
    source="PSS(R)E Model Library, GAST",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    output=_output,
)
