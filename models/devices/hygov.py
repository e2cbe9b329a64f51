"""HYGOV: hydro turbine-governor (PI governor with permanent and temporary droop, gate servo,
nonlinear penstock and turbine without surge tank).

Source: Siemens PTI, *PSS(R)E Model Library*, "HYGOV" (CONs R, r, Tr, Tf, Tg, VELM, GMAX, GMIN,
TW, At, Dturb, qNL; states: filter output e, desired gate c, gate opening g, turbine flow q);
IEEE Working Group, "Hydraulic turbine and turbine control models for system dynamic studies",
IEEE Trans. Power Syst. 7(1) 1992 (the turbine). Per unit on MBASE; dw = omega - 1; nref the
speed reference (the model's set-point ``pref``, pu speed).

    Tf de/dt = nref - dw - R c - e                              (filter)
    dc/dt = clip((e + Tr de/dt) / (r Tr), -VELM, VELM),  GMIN <= c <= GMAX   (non-windup)
    Tg dg/dt = c - g                                             (gate servo)
    h = (q / g)^2,   TW dq/dt = 1 - h                            (penstock, head 1 pu)
    TM = At h (q - qNL) - Dturb dw g

Reading (the block diagram draws the governor as (1 + s Tr) / (r Tr s) with the gate velocity
limit VELM and the gate limits GMAX, GMIN on it): the whole PI output c is one integrator whose
rate (the PI's input (1 + s Tr) e / (r Tr)) is limited to +-VELM and whose value is limited to
[GMIN, GMAX] without windup; the servo lag is unlimited. ANDES 2.0.0 departs (documented in
``docs/models.md`` and tested by ``tests/test_psse_crosscheck.py``): it limits only the integral
part of c, and its integrator runs at rate e rather than e / (r Tr) (equal when r Tr = 1).
``readings`` states this for each record. h divides by max(g, 1e-6) (a closed gate).

Initialization (steady state, h = 1): q = TM0 / At + qNL, g = c = q, e = 0, nref = R c; a
desired gate outside [GMIN, GMAX] is refused naming the record and the value.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from models.devices.base import DeviceModel, non_windup, problems_where, refuse_outside

PARAMS = ("R", "r", "Tr", "Tf", "Tg", "VELM", "GMAX", "GMIN", "TW", "At", "Dturb", "qNL")
CLOSED_GATE = 1e-6
"""Smallest gate opening the head divides by (pu)."""


def _check(p) -> list:
    out = problems_where(~(p["R"] >= 0), "R", "must be >= 0 (permanent droop, pu)")
    out += problems_where(~(p["r"] > 0), "r", "must be > 0 (temporary droop, pu)")
    for k in ("Tr", "Tf", "Tg", "TW"):
        out += problems_where(~(p[k] > 0), k, "must be > 0 (s)")
    out += problems_where(~(p["VELM"] > 0), "VELM", "must be > 0 (pu/s)")
    out += problems_where(~(p["GMAX"] > p["GMIN"]), "GMAX", "must be > GMIN")
    out += problems_where(~(p["At"] > 0), "At", "must be > 0")
    out += problems_where(~(p["qNL"] >= 0), "qNL", "must be >= 0 (pu flow)")
    return out


def _init(tm, p) -> dict:
    q = np.asarray(tm, float) / p["At"] + p["qNL"]
    refuse_outside("HYGOV", "desired gate c = TM0 / At + qNL", q, p["GMIN"], p["GMAX"],
                   " (gate limits [GMIN, GMAX])")  # fmt: skip
    return {"e": np.zeros_like(q), "c": q, "g": q, "q": q, "pref": p["R"] * q}


def _head(g, q):
    return (q / jnp.maximum(g, CLOSED_GATE)) ** 2


def _derivatives(xs, omega, pref, p):
    e, c, g, q = xs
    d_e = (pref - (omega - 1.0) - p["R"] * c - e) / p["Tf"]
    rate = jnp.clip((e + p["Tr"] * d_e) / (p["r"] * p["Tr"]), -p["VELM"], p["VELM"])
    d_c = non_windup(rate, c, p["GMIN"], p["GMAX"])
    d_g = (jnp.clip(c, p["GMIN"], p["GMAX"]) - g) / p["Tg"]
    return d_e, d_c, d_g, (1.0 - _head(g, q)) / p["TW"]


def _output(xs, omega, p):
    _, _, g, q = xs
    return p["At"] * _head(g, q) * (q - p["qNL"]) - p["Dturb"] * (omega - 1.0) * g


def _readings(values) -> list[str]:
    return [
        "HYGOV reads VELM as the rate limit and GMAX, GMIN as the non-windup limits of the whole "
        "governor output c ((1 + s Tr) / (r Tr s) as one limited integrator; ANDES 2.0.0 limits "
        "its integral part only)"
    ]


HYGOV = DeviceModel(
    name="HYGOV",
    role="governor",
    params=PARAMS,
    states=("e", "c", "g", "q"),
    source="PSS(R)E Model Library, HYGOV",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    output=_output,
    readings=_readings,
)
