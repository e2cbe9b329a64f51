"""IEEEX1: IEEE Type DC1 excitation system (DC commutator exciter with rate feedback).

Source: Siemens PTI, *PSS(R)E Model Library*, "IEEEX1" (CONs TR, KA, TA, TB, TC, VRMAX, VRMIN,
KE, TE, KF, TF1, Switch, E1, SE(E1), E2, SE(E2)); IEEE Std 421.5 type DC1A. Per unit field
voltage on the machine's base; time in s. A zero TR, or TB, removes its block (the input passes
through), as in PSS/E.

    TR dVc/dt = Vt - Vc                                     (voltage transducer)
    u = Vref - Vc + Vs - VF,   VF = KF (Efd - xf) / TF1      (rate feedback s KF / (1 + s TF1))
    TB dxl/dt = u - xl,  y = (TC/TB) u + (1 - TC/TB) xl        (lead-lag)
    TA dVR/dt = KA y - VR,   VRMIN <= VR <= VRMAX            (non-windup)
    TE dEfd/dt = VR - (KE + SE(Efd)) Efd                    (exciter; SE quadratic through
                                                             (E1, SE(E1)), (E2, SE(E2)))
    TF1 dxf/dt = Efd - xf

Initialization from Efd0: VR = (KE + SE(Efd0)) Efd0 (must lie within its limits), y = VR / KA,
xl = u = y, xf = Efd0, Vc = Vt, Vref = Vt + u. KE = 0 (PSS/E then computes KE at
initialization) and Switch != 0 are refused.
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
    quadratic_through,
    saturation,
)

PARAMS = ("TR", "KA", "TA", "TB", "TC", "VRMAX", "VRMIN", "KE", "TE", "KF", "TF1", "Switch",
          "E1", "SE1", "E2", "SE2")  # fmt: skip


def _check(p) -> list:
    out = problems_where(p["TR"] < 0, "TR", "must be >= 0 (s)")
    out += problems_where(p["TB"] < 0, "TB", "must be >= 0 (s)")
    out += problems_where((p["TB"] == 0) & (p["TC"] != 0), "TC", "must be 0 when TB = 0")
    for k in ("KA", "TA", "TE", "TF1"):
        out += problems_where(p[k] <= 0, k, "must be > 0")
    out += problems_where(p["KF"] < 0, "KF", "must be >= 0")
    out += problems_where(p["KE"] == 0, "KE", "= 0 (computed at initialization) is not supported")
    out += problems_where(p["Switch"] != 0, "Switch", "must be 0")
    out += problems_where(~(p["VRMAX"] > p["VRMIN"]), "VRMAX", "must be > VRMIN")
    sat = (p["SE1"] > 0) | (p["SE2"] > 0)
    out += problems_where(sat & ~((p["E1"] > 0) & (p["E2"] > p["E1"])), "E2",
                          "saturation needs 0 < E1 < E2")  # fmt: skip
    out += problems_where(sat & ~(p["SE2"] * p["E2"] > p["SE1"] * p["E1"]), "SE2",
                          "needs SE(E2) E2 > SE(E1) E1")  # fmt: skip
    return out


def _init(efd, vt, p) -> dict:
    a, b = quadratic_through(p["E1"], p["SE1"], p["E2"], p["SE2"])
    vr = (p["KE"] + saturation(np.asarray(efd, float), a, b)) * efd
    outside = (vr < p["VRMIN"]) | (vr > p["VRMAX"])
    if outside.any():
        raise ValueError(
            f"IEEEX1: initial regulator output VR = {vr[outside]} outside [VRMIN, VRMAX] = "
            f"[{p['VRMIN'][outside]}, {p['VRMAX'][outside]}]"
        )
    y = vr / p["KA"]
    return {"Vc": vt, "xl": y, "VR": vr, "Efd": efd, "xf": efd, "vref": vt + y,
            "sat_a": a, "sat_b": b}  # fmt: skip


def _derivatives(xs, vt, vref, vs, p):
    vc, xl, vr, efd, xf = xs
    d_vc, vc_out = lag(vc, vt, p["TR"])
    u = vref - vc_out + vs - p["KF"] * (efd - xf) / p["TF1"]
    d_xl, y = lead_lag(xl, u, p["TC"], p["TB"])
    d_vr = non_windup((p["KA"] * y - vr) / p["TA"], vr, p["VRMIN"], p["VRMAX"])
    se = saturation(efd, p["sat_a"], p["sat_b"])
    d_efd = (jnp.clip(vr, p["VRMIN"], p["VRMAX"]) - (p["KE"] + se) * efd) / p["TE"]
    return d_vc, d_xl, d_vr, d_efd, (efd - xf) / p["TF1"]


def _output(xs, p):
    return xs[3]


IEEEX1 = DeviceModel(
    name="IEEEX1",
    role="exciter",
    params=PARAMS,
    states=("Vc", "xl", "VR", "Efd", "xf"),
    source="PSS(R)E Model Library, IEEEX1",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    output=_output,
)
