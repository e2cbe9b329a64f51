"""ESST1A: IEEE type ST1A static excitation system (potential-source controlled rectifier).

Source: Siemens PTI, *PSS(R)E Model Library*, "ESST1A" (ICONs UEL, VOS; CONs TR, VIMAX, VIMIN,
TC, TB, TC1, TB1, KA, TA, VAMAX, VAMIN, VRMAX, VRMIN, KC, KF, TF, KLR, ILR); IEEE Std
421.5-2005 §7.1 (type ST1A, Figure 7-1). Per unit on the machine's base; time in s. A zero TR,
TB or TB1 removes its block, as in PSS/E. No UEL / OEL models: the gates' VUEL, VOEL inputs are
absent (UEL's location, 1 to 3, is read and has no signal to place).

    TR dVc/dt = Vt - Vc                                     (transducer)
    VI = clip(Vref - Vc + Vs - VF, VIMIN, VIMAX)            (VOS = 1: stabilizer at the input)
    TB dx1/dt = VI - x1,   y1 = (TC/TB) VI + (1 - TC/TB) x1     (lead-lag)
    TB1 dx2/dt = y1 - x2,  y = (TC1/TB1) y1 + (1 - TC1/TB1) x2   (second lead-lag)
    TA dVA/dt = KA y - VA,   VAMIN <= VA <= VAMAX            (non-windup, ``base.non_windup``)
    V1 = VA - KLR max(LadIfd - ILR, 0)                      (field current limiter, >= 0)
    Efd = clip(V1, VT VRMIN, VT VRMAX - KC LadIfd)           (output limits)
    VF = KF (V1 - xf) / TF,   TF dxf/dt = V1 - xf             (rate feedback)

The rate feedback's input is the signal before the gates and the output limiter (V1), as in the
PSS/E block diagram (OpenIPSL's ESST1A, written from the PSS/E manual, takes it at the same
point; ANDES 2.0.0 after its UEL / OEL gates, the same signal without those limiters). LadIfd is
the machine's field current (``DeviceModel.field_current``; a GENCLS machine is refused).
Refused: VOS = 2 (the stabilizer signal after VA would enter the output stage, which reads no
stabilizer here) and TA = 0 (VA would be algebraic in the voltage error, which the output stage
does not read). Initialization from Efd0 and LadIfd0: V1 = Efd0 (within the output limits),
VA = Efd0 + KLR max(LadIfd0 - ILR, 0) (within VAMIN .. VAMAX), y = VA / KA = VI (within VIMIN ..
VIMAX), x1 = x2 = y, xf = Efd0, Vc = Vt, Vref = Vt + VI.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from models.devices.base import DeviceModel, lag, lead_lag, non_windup, problems_where

PARAMS = ("UEL", "VOS", "TR", "VIMAX", "VIMIN", "TC", "TB", "TC1", "TB1", "KA", "TA", "VAMAX",
          "VAMIN", "VRMAX", "VRMIN", "KC", "KF", "TF", "KLR", "ILR")  # fmt: skip


def _check(p) -> list:
    out = problems_where(~np.isin(p["UEL"], (1, 2, 3)), "UEL", "must be 1, 2 or 3")
    out += problems_where(p["VOS"] != 1, "VOS",
                          "must be 1 (2, the stabilizer after VA, is not implemented)")  # fmt: skip
    for k in ("TR", "TB", "TB1"):
        out += problems_where(p[k] < 0, k, "must be >= 0 (s)")
    out += problems_where((p["TB"] == 0) & (p["TC"] != 0), "TC", "must be 0 when TB = 0")
    out += problems_where((p["TB1"] == 0) & (p["TC1"] != 0), "TC1", "must be 0 when TB1 = 0")
    for k in ("KA", "TF"):
        out += problems_where(p[k] <= 0, k, "must be > 0")
    out += problems_where(p["TA"] <= 0, "TA", "must be > 0 (TA = 0 is not implemented)")
    for k in ("KC", "KF", "KLR"):
        out += problems_where(p[k] < 0, k, "must be >= 0")
    out += problems_where(~(p["VIMAX"] > p["VIMIN"]), "VIMAX", "must be > VIMIN")
    out += problems_where(~(p["VAMAX"] > p["VAMIN"]), "VAMAX", "must be > VAMIN")
    out += problems_where(~(p["VRMAX"] > p["VRMIN"]), "VRMAX", "must be > VRMIN")
    return out


def _v1(va, ifd, p):
    """VA after the field current limiter (before the gates and the output limits)."""
    xp = jnp if not isinstance(va, np.ndarray) else np
    return xp.clip(va, p["VAMIN"], p["VAMAX"]) - p["KLR"] * xp.maximum(ifd - p["ILR"], 0.0)


def _efd(v1, vt, ifd, p):
    xp = jnp if not isinstance(v1, np.ndarray) else np
    return xp.minimum(xp.maximum(v1, vt * p["VRMIN"]), vt * p["VRMAX"] - p["KC"] * ifd)


def _refuse_outside(name: str, value, low, high) -> None:
    low, high = np.broadcast_to(low, value.shape), np.broadcast_to(high, value.shape)
    bad = (value < low) | (value > high)
    if np.any(bad):
        raise ValueError(f"ESST1A: initial {name} = {value[bad]} outside its limits "
                         f"[{low[bad]}, {high[bad]}]")  # fmt: skip


def _init(efd, vt, p, sig) -> dict:
    efd, vt = np.asarray(efd, float), np.asarray(vt, float)
    ifd = np.asarray(sig["ifd"], float)
    _refuse_outside("field voltage", efd, vt * p["VRMIN"], vt * p["VRMAX"] - p["KC"] * ifd)
    va = efd + p["KLR"] * np.maximum(ifd - p["ILR"], 0.0)
    _refuse_outside("VA", va, p["VAMIN"], p["VAMAX"])
    vi = va / p["KA"]
    _refuse_outside("input VI", vi, p["VIMIN"], p["VIMAX"])
    return {"Vc": vt, "x1": vi, "x2": vi, "VA": va, "xf": efd, "vref": vt + vi}


def _output(xs, vt, p, sig):
    return _efd(_v1(xs[3], sig["ifd"], p), vt, sig["ifd"], p)


def _derivatives(xs, vt, vref, vs, p, sig):
    vc, x1, x2, va, xf = xs
    d_vc, vc_out = lag(vc, vt, p["TR"])
    v1 = _v1(va, sig["ifd"], p)
    vi = jnp.clip(vref - vc_out + vs - p["KF"] * (v1 - xf) / p["TF"], p["VIMIN"], p["VIMAX"])
    d_x1, y1 = lead_lag(x1, vi, p["TC"], p["TB"])
    d_x2, y = lead_lag(x2, y1, p["TC1"], p["TB1"])
    d_va = non_windup((p["KA"] * y - va) / p["TA"], va, p["VAMIN"], p["VAMAX"])
    return d_vc, d_x1, d_x2, d_va, (v1 - xf) / p["TF"]


ESST1A = DeviceModel(
    name="ESST1A",
    role="exciter",
    params=PARAMS,
    states=("Vc", "x1", "x2", "VA", "xf"),
    source="PSS(R)E Model Library, ESST1A; IEEE Std 421.5-2005 §7.1",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    output=_output,
    inputs=("ifd",),
)
