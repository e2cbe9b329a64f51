"""ESST3A: IEEE type ST3A static excitation system (potential- or compound-source controlled
rectifier with an inner field-voltage regulator).

Source: Siemens PTI, *PSS(R)E Model Library*, "ESST3A" (CONs TR, VIMAX, VIMIN, KM, TC, TB, KA,
TA, VRMAX, VRMIN, KG, KP, KI, VBMAX, KC, XL, VGMAX, THETAP (degrees), TM, VMMAX, VMMIN); IEEE
Std 421.5-2016 §7.3 (type ST3A, Figure 7-3) and Annex D (rectifier regulation FEX). Per unit on
the machine's base; time in s. A zero TR, TB or TA removes its block, as in PSS/E. No UEL / OEL
inputs (PSS/E's VUEL, VOEL are absent without limiter models); the voltage is the terminal
voltage (no load compensation).

    TR dVc/dt = Vt - Vc                                       (transducer; 421.5 §7.3)
    u = clip(Vref - Vc + Vs, VIMIN, VIMAX)                    (input limiter)
    TB dxl/dt = u - xl,  y = (TC/TB) u + (1 - TC/TB) xl          (lead-lag)
    TA dVR/dt = KA y - VR,   VRMIN <= VR <= VRMAX             (non-windup, ``base.non_windup``;
                                                               TA = 0: VR = clip(KA y), the
                                                               VR state held at its start)
    VG = min(KG Efd, VGMAX)                                   (inner-loop feedback)
    TM dVM/dt = KM (VR - VG) - VM,   VMMIN <= VM <= VMMAX     (non-windup)
    VE = |KP e^{j THETAP} Vt + j (KI + KP e^{j THETAP} XL) It|  (power source, phasors on MBASE)
    IN = KC LadIfd / VE,  FEX = 1 - 0.577 IN (IN <= 0.433), sqrt(0.75 - IN^2) (<= 0.75),
         1.732 (1 - IN) (<= 1), 0 above                        (Annex D)
    VB = min(VE FEX, VBMAX),   Efd = VB VM

VT and IT are the terminal voltage and current phasors in the machine frame (Vd + jVq, Id +
jIq), LadIfd the machine's field current (``DeviceModel.field_current``). The limits gate the
derivative of their state at the limit, as EXST1's and IEEEX1's: a discontinuous right-hand side
that the step control crosses, not an event. Initialization from Efd0 (at equilibrium LadIfd =
Efd0): VM = Efd0 / VB (within its limits), VR = VM / KM + VG, y = VR / KA (within the input
limits), xl = y, Vc = Vt, Vref = Vt + y.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from models.devices.base import DeviceModel, lag, lead_lag, non_windup, problems_where

PARAMS = ("TR", "VIMAX", "VIMIN", "KM", "TC", "TB", "KA", "TA", "VRMAX", "VRMIN", "KG", "KP",
          "KI", "VBMAX", "KC", "XL", "VGMAX", "THETAP", "TM", "VMMAX", "VMMIN")  # fmt: skip


def _check(p) -> list:
    out = []
    for k in ("TR", "TB", "TA"):
        out += problems_where(p[k] < 0, k, "must be >= 0 (s)")
    out += problems_where((p["TB"] == 0) & (p["TC"] != 0), "TC", "must be 0 when TB = 0")
    for k in ("KM", "KA", "TM", "KP", "VBMAX"):
        out += problems_where(p[k] <= 0, k, "must be > 0")
    for k in ("KG", "KI", "KC", "XL"):
        out += problems_where(p[k] < 0, k, "must be >= 0")
    out += problems_where(~(p["VIMAX"] > p["VIMIN"]), "VIMAX", "must be > VIMIN")
    out += problems_where(~(p["VRMAX"] > p["VRMIN"]), "VRMAX", "must be > VRMIN")
    out += problems_where(~(p["VMMAX"] > p["VMMIN"]), "VMMAX", "must be > VMMIN")
    return out


def _fex(i_n):
    """Rectifier regulation FEX(IN) (IEEE Std 421.5-2016 Annex D, Figure D.3)."""
    xp = jnp if not isinstance(i_n, np.ndarray) else np
    i_n = xp.maximum(i_n, 0.0)
    mid = xp.sqrt(xp.maximum(0.75 - i_n * i_n, 0.0))
    return xp.where(
        i_n <= 0.433,
        1.0 - 0.577 * i_n,
        xp.where(i_n <= 0.75, mid, xp.where(i_n <= 1.0, 1.732 * (1.0 - i_n), 0.0)),
    )


def _vb(sig, p):
    """VB = min(VE FEX(KC LadIfd / VE), VBMAX) from the machine signals."""
    xp = jnp if not isinstance(sig["vd"], np.ndarray) else np
    theta = p["THETAP"] * (np.pi / 180.0)
    kr, ki = p["KP"] * xp.cos(theta), p["KP"] * xp.sin(theta)
    vd, vq, i_d, i_q = sig["vd"], sig["vq"], sig["Id"], sig["Iq"]
    # KP (Vd + jVq) + j (KI + KP XL) (Id + jIq) with KP complex
    b_re, b_im = -ki * p["XL"], p["KI"] + kr * p["XL"]  # j (KI + KP XL) = b_re + j b_im
    re = kr * vd - ki * vq + b_re * i_d - b_im * i_q
    im = kr * vq + ki * vd + b_re * i_q + b_im * i_d
    ve = xp.sqrt(re * re + im * im)
    i_n = p["KC"] * sig["ifd"] / xp.maximum(ve, 1e-6)
    return xp.minimum(ve * _fex(i_n), p["VBMAX"])


def _init(efd, vt, p, sig) -> dict:
    vb = _vb({k: np.asarray(v, float) for k, v in sig.items()}, p)
    if np.any(vb <= 0):
        raise ValueError(f"ESST3A: power source VB = {vb[vb <= 0]} at the initial point")
    vm = efd / vb
    vg = np.minimum(p["KG"] * efd, p["VGMAX"])
    vr = vm / p["KM"] + vg
    y = vr / p["KA"]
    for name, value, low, high in (("VM", vm, p["VMMIN"], p["VMMAX"]),
                                   ("VR", vr, p["VRMIN"], p["VRMAX"]),
                                   ("input", y, p["VIMIN"], p["VIMAX"])):  # fmt: skip
        bad = (value < low) | (value > high)
        if np.any(bad):
            raise ValueError(
                f"ESST3A: initial {name} = {value[bad]} outside its limits "
                f"[{np.broadcast_to(low, value.shape)[bad]}, "
                f"{np.broadcast_to(high, value.shape)[bad]}]"
            )
    return {"Vc": vt, "xl": y, "VR": vr, "VM": vm, "vref": vt + y}


def _vr(vr, y, p):
    return jnp.clip(jnp.where(p["TA"] > 0, vr, p["KA"] * y), p["VRMIN"], p["VRMAX"])


def _efd(vm, sig, p):
    return _vb(sig, p) * jnp.clip(vm, p["VMMIN"], p["VMMAX"])


def _output(xs, vt, p, sig):
    return _efd(xs[3], sig, p)


def _derivatives(xs, vt, vref, vs, p, sig):
    vc, xl, vr, vm = xs
    d_vc, vc_out = lag(vc, vt, p["TR"])
    u = jnp.clip(vref - vc_out + vs, p["VIMIN"], p["VIMAX"])
    d_xl, y = lead_lag(xl, u, p["TC"], p["TB"])
    on = p["TA"] > 0
    d_vr = jnp.where(on, (p["KA"] * y - vr) / jnp.where(on, p["TA"], 1.0), 0.0)
    d_vr = non_windup(d_vr, vr, p["VRMIN"], p["VRMAX"])
    efd = _efd(vm, sig, p)
    vg = jnp.minimum(p["KG"] * efd, p["VGMAX"])
    d_vm = (p["KM"] * (_vr(vr, y, p) - vg) - vm) / p["TM"]
    return d_vc, d_xl, d_vr, non_windup(d_vm, vm, p["VMMIN"], p["VMMAX"])


ESST3A = DeviceModel(
    name="ESST3A",
    role="exciter",
    params=PARAMS,
    states=("Vc", "xl", "VR", "VM"),
    source="PSS(R)E Model Library, ESST3A; IEEE Std 421.5-2016 §7.3",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    output=_output,
    inputs=("vd", "vq", "Id", "Iq", "ifd"),
)
