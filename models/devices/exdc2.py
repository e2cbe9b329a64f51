"""EXDC2: DC commutator exciter with rate feedback and limits proportional to terminal voltage
(IEEE type DC2).

Source: Siemens PTI, *PSS(R)E Model Library*, "EXDC2" (CONs TR, KA, TA, TB, TC, VRMAX, VRMIN,
KE, TE, KF, TF1, Switch, E1, SE(E1), E2, SE(E2): IEEEX1's CONs in IEEEX1's order); IEEE Std
421.5-1992 type DC2A, whose regulator limits are VRMAX VT and VRMIN VT. Per unit field
voltage on the machine's base; time in s. The block diagram is IEEEX1's (``ieeex1.py``) except
for the regulator limits, which PSS/E multiplies by the terminal voltage VT:

    TR dVc/dt = Vt - Vc                                      (voltage transducer; TR = 0: Vc = Vt)
    u = Vref - Vc + Vs - VF,   VF = KF (Efd - xf) / TF1       (rate feedback s KF / (1 + s TF1))
    TB dxl/dt = u - xl,  y = (TC/TB) u + (1 - TC/TB) xl         (lead-lag; TB = 0 removes it)
    TA dVR/dt = KA y - VR,   VRMIN VT <= VR <= VRMAX VT           (non-windup, moving limits)
    TE dEfd/dt = VR - (KE + SE(Efd)) Efd                     (exciter; SE quadratic through
                                                              (E1, SE(E1)), (E2, SE(E2)))
    TF1 dxf/dt = Efd - xf

How the moving limit is handled (the one departure from IEEEX1's limiter): IEEEX1 gates the
derivative at a fixed limit (``base.non_windup``). On a limit that moves with VT that gate makes
the right-hand side jump by (KA y - VR)/TA each time VT lets VR fall a hair inside the limit
(tried first: Kundur generator trip, Radau's step collapsed at 1.5 s). Here the regulator's
derivative is held between k (VRMIN VT - VR) and k (VRMAX VT - VR), k = ``TRACK`` / TA:

    dVR/dt = min(max((KA y - VR)/TA, k (VRMIN VT - VR)), k (VRMAX VT - VR))

which is continuous in the states: inside the limits (the distance to a limit times k larger
than the regulator's own rate) it is the lag itself; at a limit VR follows the moving limit with
time constant TA / TRACK (0.2 ms for Kundur's TA = 0.02 s) and stays there while the lag pushes
outward; it leaves as soon as the lag's derivative points back inside. The exciter reads the
limited value clip(VR, VRMIN VT, VRMAX VT), as IEEEX1. With a constant VT this is the
non-windup limiter of IEEE Std 421.5-2016 Annex E up to the TA / TRACK approach.

E1 = 0 or E2 = 0 means no saturation (as IEEEX1; Kundur's EXDC2 data E1 = 0, SE(E1) = 0, E2 = 1,
SE(E2) = 1 read literally would put each regulator's initial output above VRMAX VT).
Initialization from Efd0 and VT0: VR = (KE + SE(Efd0)) Efd0 (must lie within VRMIN VT0 ..
VRMAX VT0), y = VR / KA, xl = u = y, xf = Efd0, Vc = VT0, Vref = VT0 + u. KE = 0 (PSS/E then
computes KE at initialization) and Switch != 0 are refused (IEEEX1's checks).

Departures of ANDES 2.0.0's EXDC2 from this block diagram (the cross-check's reference): its
regulator limits are VRMAX, VRMIN (not multiplied by VT) and its output is the exciter voltage
multiplied by the machine speed.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from models.devices.base import (
    DeviceModel,
    lag,
    lead_lag,
    quadratic_through,
    saturation,
)
from models.devices.ieeex1 import PARAMS
from models.devices.ieeex1 import _check as _ieeex1_check

TRACK = 100.0
"""Rate (in units of 1 / TA) at which the regulator output follows a moving limit."""


def _check(p) -> list:
    """IEEEX1's rules (same CONs); VRMAX > VRMIN also keeps VRMAX VT > VRMIN VT."""
    return _ieeex1_check(p)


def _init(efd, vt, p) -> dict:
    none = (p["E1"] == 0) | (p["E2"] == 0)
    a, b = quadratic_through(p["E1"], np.where(none, 0.0, p["SE1"]), p["E2"],
                             np.where(none, 0.0, p["SE2"]))  # fmt: skip
    efd = np.asarray(efd, float)
    vt = np.asarray(vt, float)
    vr = (p["KE"] + saturation(efd, a, b)) * efd
    low, high = p["VRMIN"] * vt, p["VRMAX"] * vt
    outside = (vr < low) | (vr > high)
    if outside.any():
        raise ValueError(
            f"EXDC2: initial regulator output VR = {vr[outside]} outside its limits "
            f"[VRMIN VT, VRMAX VT] = [{np.broadcast_to(low, vr.shape)[outside]}, "
            f"{np.broadcast_to(high, vr.shape)[outside]}]"
        )
    y = vr / p["KA"]
    return {"Vc": vt, "xl": y, "VR": vr, "Efd": efd, "xf": efd, "vref": vt + y,
            "sat_a": a, "sat_b": b}  # fmt: skip


def _derivatives(xs, vt, vref, vs, p):
    vc, xl, vr, efd, xf = xs
    d_vc, vc_out = lag(vc, vt, p["TR"])
    u = vref - vc_out + vs - p["KF"] * (efd - xf) / p["TF1"]
    d_xl, y = lead_lag(xl, u, p["TC"], p["TB"])
    low, high = p["VRMIN"] * vt, p["VRMAX"] * vt
    k = TRACK / p["TA"]
    d_vr = jnp.minimum(jnp.maximum((p["KA"] * y - vr) / p["TA"], k * (low - vr)), k * (high - vr))
    se = saturation(efd, p["sat_a"], p["sat_b"])
    d_efd = (jnp.clip(vr, low, high) - (p["KE"] + se) * efd) / p["TE"]
    return d_vc, d_xl, d_vr, d_efd, (efd - xf) / p["TF1"]


def _output(xs, vt, p):
    return xs[3]


EXDC2 = DeviceModel(
    name="EXDC2",
    role="exciter",
    params=PARAMS,
    states=("Vc", "xl", "VR", "Efd", "xf"),
    source="PSS(R)E Model Library, EXDC2; IEEE Std 421.5-1992 DC2A",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    output=_output,
)
