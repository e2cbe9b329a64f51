"""SCRX: bus-fed or solid-fed static (SCR) exciter.

Source: Siemens PTI, *PSS(R)E Model Library*, "SCRX" (CONs TA/TB, TB, K, TE, EMIN, EMAX, CSWITCH,
rc/rfd). Per unit on the machine's base; time in s. SEXS's regulator (``sexs.py``) with the
rectifier's supply and its negative-field-current stage:

    u = Vref - Vt + Vs                                   (voltage error; no transducer)
    TB dxl/dt = u - xl,   y = (TA/TB) u + (1 - TA/TB) xl      (lead-lag (1 + s TA)/(1 + s TB))
    TE dE/dt = K y - E,   EMIN <= E <= EMAX               (non-windup, ``base.non_windup``)
    EX = E Vt (CSWITCH = 0, bus fed),   EX = E (CSWITCH = 1, solid fed)
    Efd = EX where LadIfd >= 0 or rc/rfd = 0 (negative field current passes);
    Efd = -(rc/rfd) LadIfd where LadIfd < 0 and rc/rfd > 0  (crowbar resistor rc on the field
                                                            resistance rfd)

Reading (the data sheet draws the limits on the K / (1 + s TE) block without saying how they
act): non-windup, as this project's SEXS and ANDES 2.0.0's SEXS read the same limits. ANDES has
no SCRX: its ``.dyr`` reader maps an SCRX record onto SEXS (TA/TB, TB, K, TE, EMIN, EMAX; CSWITCH
and rc/rfd dropped), so SCRX is tested here by its own equations (``tests/test_psse_exciters.py``),
not against ANDES. LadIfd is the machine's field current (``DeviceModel.field_current``).
Initialization from Efd0, Vt0 (LadIfd0 = Efd0 >= 0 at equilibrium): E = Efd0 / Vt0 (bus fed) or
Efd0 (within EMIN .. EMAX), y = u = E / K, xl = y, Vref = Vt0 + u.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from models.devices.base import DeviceModel, non_windup, problems_where

PARAMS = ("TA_TB", "TB", "K", "TE", "EMIN", "EMAX", "CSWITCH", "rc_rfd")


def _check(p) -> list:
    out = problems_where(p["TA_TB"] < 0, "TA_TB", "must be >= 0")
    for k in ("TB", "TE", "K"):
        out += problems_where(p[k] <= 0, k, "must be > 0")
    out += problems_where(~(p["EMAX"] > p["EMIN"]), "EMAX", "must be > EMIN")
    out += problems_where(~np.isin(p["CSWITCH"], (0, 1)), "CSWITCH",
                          "must be 0 (bus fed) or 1 (solid fed)")  # fmt: skip
    out += problems_where(p["rc_rfd"] < 0, "rc_rfd", "must be >= 0 (0: negative current passes)")
    return out


def _supply(vt, p):
    return jnp.where(p["CSWITCH"] == 0, vt, 1.0)


def _init(efd, vt, p, sig) -> dict:
    efd, vt = np.asarray(efd, float), np.asarray(vt, float)
    ifd = np.asarray(sig["ifd"], float)
    crowbar = (p["rc_rfd"] > 0) & (ifd < 0)
    if np.any(crowbar):
        raise ValueError(f"SCRX: initial field current {ifd[crowbar]} < 0 with rc/rfd > 0 "
                         "(the crowbar would carry the field at the initial point)")  # fmt: skip
    e = efd / np.where(np.asarray(p["CSWITCH"]) == 0, vt, 1.0)
    low, high = np.broadcast_to(p["EMIN"], e.shape), np.broadcast_to(p["EMAX"], e.shape)
    outside = (e < low) | (e > high)
    if np.any(outside):
        raise ValueError(f"SCRX: initial exciter output E = {e[outside]} outside [EMIN, EMAX] = "
                         f"[{low[outside]}, {high[outside]}]")  # fmt: skip
    y = e / p["K"]
    return {"xl": y, "E": e, "vref": vt + y}


def _output(xs, vt, p, sig):
    ex = jnp.clip(xs[1], p["EMIN"], p["EMAX"]) * _supply(vt, p)
    ifd = sig["ifd"]
    return jnp.where((p["rc_rfd"] > 0) & (ifd < 0), -p["rc_rfd"] * ifd, ex)


def _derivatives(xs, vt, vref, vs, p, sig):
    xl, e = xs
    u = vref - vt + vs
    y = p["TA_TB"] * u + (1.0 - p["TA_TB"]) * xl
    d_e = non_windup((p["K"] * y - e) / p["TE"], e, p["EMIN"], p["EMAX"])
    return (u - xl) / p["TB"], d_e


SCRX = DeviceModel(
    name="SCRX",
    role="exciter",
    params=PARAMS,
    states=("xl", "E"),
    source="PSS(R)E Model Library, SCRX",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    output=_output,
    inputs=("ifd",),
)
