"""ESAC1A: IEEE type AC1A excitation system (alternator-rectifier exciter with non-controlled
rectifiers; IEEE Std 421.5-2005).

Source: Siemens PTI, *PSS(R)E Model Library*, "ESAC1A" (CONs TR, TB, TC, KA, TA, VAMAX, VAMIN,
TE, KF, TF, KC, KD, KE, E1, SE(E1), E2, SE(E2), VRMAX, VRMIN); IEEE Std 421.5-2005 §6.1 (type
AC1A, Figure 6-1) and Annex D (FEX). Per unit on the machine's base; time in s. EXAC1's exciter,
rectifier and rate feedback (``exac1.py``) behind a regulator with its own limits VAMIN .. VAMAX
and the output limits VRMIN .. VRMAX after the (absent) UEL / OEL gates:

    TR dVc/dt = Vt - Vc                                      (transducer; TR = 0: Vc = Vt)
    u = Vref - Vc + Vs - VF
    TB dxl/dt = u - xl,  y = (TC/TB) u + (1 - TC/TB) xl         (lead-lag; TB = 0 removes it)
    TA dVA/dt = KA y - VA,   VAMIN <= VA <= VAMAX             (non-windup)
    VR = clip(VA, VRMIN, VRMAX)                              (no state: a clip)
    TE dVE/dt = VR - VFE,   VE >= 0,   VFE = KD LadIfd + (KE + SE(VE)) VE
    Efd = VE FEX(KC LadIfd / VE),   VF = KF (VFE - xf) / TF,   TF dxf/dt = VFE - xf

Initialization as EXAC1's with VA = VR = VFE0 (within VAMIN .. VAMAX and VRMIN .. VRMAX).

Departures of ANDES 2.0.0's ESAC1A (the cross-check's reference) from this block diagram: it has
no rate feedback (its VF is computed and not subtracted from the voltage error), no VRMAX /
VRMIN (its VR is VA as the gates leave it), and VE has no lower limit (its FEX is 1 for IN <= 0,
so a negative VE passes to Efd); given all three, ours lies within ANDES's step-size spread in
the IEEE 14 events (``tests/test_psse_crosscheck.py``, ``docs/models.md``).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from models.devices.base import DeviceModel, lag, lead_lag, non_windup, problems_where
from models.devices.exac1 import (
    ac_exciter_derivative,
    ac_init,
    ac_output,
    ac_problems,
    refuse_outside,
)

PARAMS = ("TR", "TB", "TC", "KA", "TA", "VAMAX", "VAMIN", "TE", "KF", "TF", "KC", "KD", "KE",
          "E1", "SE1", "E2", "SE2", "VRMAX", "VRMIN")  # fmt: skip


def _check(p) -> list:
    return ac_problems(p) + problems_where(~(p["VAMAX"] > p["VAMIN"]), "VAMAX", "must be > VAMIN")


def _init(efd, vt, p, sig) -> dict:
    vt = np.asarray(vt, float)
    ac = ac_init("ESAC1A", efd, sig["ifd"], p)
    va = ac["VFE"]
    refuse_outside("ESAC1A", "VR", va, p["VRMIN"], p["VRMAX"])
    refuse_outside("ESAC1A", "VA", va, p["VAMIN"], p["VAMAX"])
    y = va / p["KA"]
    return {"Vc": vt, "xl": y, "VA": va, "VE": ac["VE"], "xf": ac["VFE"], "vref": vt + y,
            "sat_a": ac["sat_a"], "sat_b": ac["sat_b"]}  # fmt: skip


def _output(xs, vt, p, sig):
    return ac_output(xs[3], sig["ifd"], p)


def _derivatives(xs, vt, vref, vs, p, sig):
    vc, xl, va, ve, xf = xs
    d_vc, vc_out = lag(vc, vt, p["TR"])
    vr = jnp.clip(jnp.clip(va, p["VAMIN"], p["VAMAX"]), p["VRMIN"], p["VRMAX"])
    d_ve, vfe = ac_exciter_derivative(vr, ve, sig["ifd"], p)
    u = vref - vc_out + vs - p["KF"] * (vfe - xf) / p["TF"]
    d_xl, y = lead_lag(xl, u, p["TC"], p["TB"])
    d_va = non_windup((p["KA"] * y - va) / p["TA"], va, p["VAMIN"], p["VAMAX"])
    return d_vc, d_xl, d_va, d_ve, (vfe - xf) / p["TF"]


ESAC1A = DeviceModel(
    name="ESAC1A",
    role="exciter",
    params=PARAMS,
    states=("Vc", "xl", "VA", "VE", "xf"),
    source="PSS(R)E Model Library, ESAC1A; IEEE Std 421.5-2005 §6.1",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    output=_output,
    inputs=("ifd",),
)
