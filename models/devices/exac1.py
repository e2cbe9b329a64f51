"""EXAC1: IEEE type AC1 excitation system (alternator-rectifier exciter with non-controlled
rectifiers; IEEE Std 421.5-1992 type AC1A). ``esac1a.py`` (ESAC1A, 421.5-2005) shares its
exciter, saturation, rectifier and rate feedback (``ac_output``, ``ac_init``).

Source: Siemens PTI, *PSS(R)E Model Library*, "EXAC1" (CONs TR, TB, TC, KA, TA, VRMAX, VRMIN,
TE, KF, TF, KC, KD, KE, E1, SE(E1), E2, SE(E2)); IEEE Std 421.5-1992 §6.1 (type AC1A) and Annex
D of 421.5-2005 (rectifier regulation FEX). Per unit on the machine's base; time in s. A zero TR
or TB removes its block, as in PSS/E.

    TR dVc/dt = Vt - Vc                                      (transducer)
    u = Vref - Vc + Vs - VF
    TB dxl/dt = u - xl,  y = (TC/TB) u + (1 - TC/TB) xl         (lead-lag)
    TA dVR/dt = KA y - VR,   VRMIN <= VR <= VRMAX             (non-windup, ``base.non_windup``)
    VFE = KD LadIfd + (KE + SE(VE)) VE                        (exciter field current; SE
                                                              quadratic through (E1, SE(E1)),
                                                              (E2, SE(E2)); E1 = 0 or E2 = 0:
                                                              none, as IEEEX1)
    TE dVE/dt = VR - VFE,   VE >= 0                           (exciter; non-windup at 0)
    IN = KC LadIfd / VE,   Efd = VE FEX(IN)                   (FEX of Annex D, ``esst3a._fex``)
    VF = KF (VFE - xf) / TF,   TF dxf/dt = VFE - xf            (rate feedback from VFE)

VE's lower limit 0 is the alternator's (its output cannot reverse through the diode rectifier;
421.5's AC1A figure). LadIfd is the machine's field current (``DeviceModel.field_current``; a
GENCLS machine is refused). Initialization from Efd0 and LadIfd0: VE solves VE FEX(KC LadIfd0 /
VE) = Efd0 (closed form on each branch of FEX), VFE = VR = KD LadIfd0 + (KE + SE(VE)) VE (within
VRMIN .. VRMAX), y = u = VR / KA, xl = y, xf = VFE, Vc = Vt, Vref = Vt + u.

Departure of ANDES 2.0.0's EXAC1 (the cross-check's reference): its voltage error reads the bus
voltage directly, its transducer lag (TR) unused, and VE has no lower limit.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from models.devices.base import (
    DeviceModel,
    lag,
    lead_lag,
    non_windup,
    problems_where,
    saturation,
)
from models.devices.esst3a import _fex
from models.devices.ieeet1 import dc_saturation
from models.devices.ieeex1 import saturation_problems

PARAMS = ("TR", "TB", "TC", "KA", "TA", "VRMAX", "VRMIN", "TE", "KF", "TF", "KC", "KD", "KE",
          "E1", "SE1", "E2", "SE2")  # fmt: skip


def ac_problems(p) -> list:
    """The rules EXAC1 and ESAC1A share (exciter, rectifier, feedback, lead-lag)."""
    out = []
    for k in ("TR", "TB"):
        out += problems_where(p[k] < 0, k, "must be >= 0 (s)")
    out += problems_where((p["TB"] == 0) & (p["TC"] != 0), "TC", "must be 0 when TB = 0")
    for k in ("KA", "TA", "TE", "TF"):
        out += problems_where(p[k] <= 0, k, "must be > 0")
    for k in ("KF", "KC", "KD"):
        out += problems_where(p[k] < 0, k, "must be >= 0")
    out += problems_where(~(p["VRMAX"] > p["VRMIN"]), "VRMAX", "must be > VRMIN")
    return out + saturation_problems(p)


def exciter_voltage(efd, ifd, kc) -> np.ndarray:
    """VE with VE FEX(KC ifd / VE) = Efd (Efd > 0, ifd >= 0): on FEX's branches
    IN <= 0.433: VE = Efd + 0.577 KC ifd; IN <= 0.75: VE = sqrt((Efd^2 + (KC ifd)^2) / 0.75);
    IN <= 1: VE = Efd / 1.732 + KC ifd; the branch whose IN agrees is taken."""
    efd, load = np.asarray(efd, float), np.asarray(kc * np.maximum(ifd, 0.0), float)
    low = efd + 0.577 * load
    mid = np.sqrt((efd * efd + load * load) / 0.75)
    high = efd / 1.732 + load
    return np.where(load <= 0.433 * low, low, np.where(load <= 0.75 * mid, mid, high))


def ac_init(name: str, efd, ifd, p) -> dict:
    """VE, VFE and the saturation of the initial point (``exciter_voltage``), refused where Efd0
    <= 0 (the rectifier cannot give it)."""
    efd, ifd = np.asarray(efd, float), np.asarray(ifd, float)
    if np.any(efd <= 0):
        raise ValueError(f"{name}: initial field voltage {efd[efd <= 0]} <= 0 (the rectifier "
                         "gives Efd >= 0)")  # fmt: skip
    ve = exciter_voltage(efd, ifd, p["KC"])
    a, b = dc_saturation(p)
    vfe = p["KD"] * ifd + (p["KE"] + saturation(ve, a, b)) * ve
    return {"VE": ve, "VFE": vfe, "sat_a": a, "sat_b": b}


def refuse_outside(name: str, what: str, value, low, high) -> None:
    low, high = np.broadcast_to(low, value.shape), np.broadcast_to(high, value.shape)
    bad = (value < low) | (value > high)
    if np.any(bad):
        raise ValueError(f"{name}: initial {what} = {value[bad]} outside its limits "
                         f"[{low[bad]}, {high[bad]}]")  # fmt: skip


def ac_vfe(ve, ifd, p):
    return p["KD"] * ifd + (p["KE"] + saturation(ve, p["sat_a"], p["sat_b"])) * ve


def ac_output(ve, ifd, p):
    """Efd = VE FEX(KC LadIfd / VE)."""
    safe = jnp.maximum(ve, 1e-6)
    return ve * _fex(p["KC"] * ifd / safe)


def ac_exciter_derivative(vr, ve, ifd, p):
    """(TE dVE/dt with VE >= 0 non-windup, VFE)."""
    vfe = ac_vfe(ve, ifd, p)
    return non_windup((vr - vfe) / p["TE"], ve, 0.0, jnp.inf), vfe


def _check(p) -> list:
    return ac_problems(p)


def _init(efd, vt, p, sig) -> dict:
    vt = np.asarray(vt, float)
    ac = ac_init("EXAC1", efd, sig["ifd"], p)
    vr = ac["VFE"]
    refuse_outside("EXAC1", "VR", vr, p["VRMIN"], p["VRMAX"])
    y = vr / p["KA"]
    return {"Vc": vt, "xl": y, "VR": vr, "VE": ac["VE"], "xf": ac["VFE"], "vref": vt + y,
            "sat_a": ac["sat_a"], "sat_b": ac["sat_b"]}  # fmt: skip


def _output(xs, vt, p, sig):
    return ac_output(xs[3], sig["ifd"], p)


def _derivatives(xs, vt, vref, vs, p, sig):
    vc, xl, vr, ve, xf = xs
    d_vc, vc_out = lag(vc, vt, p["TR"])
    d_ve, vfe = ac_exciter_derivative(jnp.clip(vr, p["VRMIN"], p["VRMAX"]), ve, sig["ifd"], p)
    u = vref - vc_out + vs - p["KF"] * (vfe - xf) / p["TF"]
    d_xl, y = lead_lag(xl, u, p["TC"], p["TB"])
    d_vr = non_windup((p["KA"] * y - vr) / p["TA"], vr, p["VRMIN"], p["VRMAX"])
    return d_vc, d_xl, d_vr, d_ve, (vfe - xf) / p["TF"]


EXAC1 = DeviceModel(
    name="EXAC1",
    role="exciter",
    params=PARAMS,
    states=("Vc", "xl", "VR", "VE", "xf"),
    source="PSS(R)E Model Library, EXAC1; IEEE Std 421.5-1992 AC1A",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    output=_output,
    inputs=("ifd",),
)
