"""IEEEX1: DC commutator exciter with rate feedback (IEEE type DC1).

Source: Siemens PTI, *PSS(R)E Model Library*, "IEEEX1" (CONs TR, KA, TA, TB, TC, VRMAX, VRMIN,
KE, TE, KF, TF1, Switch, E1, SE(E1), E2, SE(E2)); IEEE Std 421.5 type DC1A. Per unit field
voltage on the machine's base; time in s. A zero TR, or TB, removes its block (the input passes
through), as in PSS/E. (EXDC2, the same CONs with limits VRMAX VT and VRMIN VT, is ``exdc2.py``:
on limits that move with VT this derivative-gating limiter chatters, so it tracks them instead.)

    TR dVc/dt = Vt - Vc                                     (voltage transducer)
    u = Vref - Vc + Vs - VF,   VF = KF (Efd - xf) / TF1      (rate feedback s KF / (1 + s TF1))
    TB dxl/dt = u - xl,  y = (TC/TB) u + (1 - TC/TB) xl        (lead-lag)
    TA dVR/dt = KA y - VR,   VRMIN <= VR <= VRMAX              (non-windup)
    TE dEfd/dt = VR - (KE + SE(Efd)) Efd                    (exciter; SE quadratic through
                                                             (E1, SE(E1)), (E2, SE(E2)))
    TF1 dxf/dt = Efd - xf

E1 = 0 or E2 = 0 means no saturation (the data convention ANDES documents; read literally,
Kundur's EXDC2 data E1 = 0, SE(E1) = 0, E2 = 1, SE(E2) = 1 would put every regulator's initial
output above VRMAX). Initialization
from Efd0: VR = (KE + SE(Efd0)) Efd0 (must lie within its limits), y = VR / KA,
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
    """Values the model cannot use (PSS/E's rules, see the module docstring)."""
    out = dc_exciter_problems(p, p["VRMAX"], "must be > VRMIN")
    return out + problems_where(p["KE"] == 0, "KE",
                                "= 0 (computed at initialization) is not supported")  # fmt: skip


def saturation_problems(p) -> list:
    """The two-point exciter saturation (E1, SE(E1)), (E2, SE(E2)) must rise (none where E1 = 0
    or E2 = 0, or both SE are 0): the rule every exciter with this data shares."""
    sat = ((p["SE1"] > 0) | (p["SE2"] > 0)) & (p["E1"] != 0) & (p["E2"] != 0)
    out = problems_where(sat & ~((p["E1"] > 0) & (p["E2"] > p["E1"])), "E2",
                         "saturation needs 0 < E1 < E2")  # fmt: skip
    out += problems_where(sat & ~(p["SE2"] * p["E2"] > p["SE1"] * p["E1"]), "SE2",
                          "needs SE(E2) E2 > SE(E1) E1")  # fmt: skip
    return out


def dc_exciter_problems(p, vrmax, vrmax_rule: str) -> list:
    """The rules the DC commutator exciters (IEEEX1, EXDC2, ESDC2A: one parameter list) share;
    ``vrmax``: the upper regulator limit as the model reads it."""
    out = problems_where(p["TR"] < 0, "TR", "must be >= 0 (s)")
    out += problems_where(p["TB"] < 0, "TB", "must be >= 0 (s)")
    out += problems_where((p["TB"] == 0) & (p["TC"] != 0), "TC", "must be 0 when TB = 0")
    for k in ("KA", "TA", "TE", "TF1"):
        out += problems_where(p[k] <= 0, k, "must be > 0")
    out += problems_where(p["KF"] < 0, "KF", "must be >= 0")
    out += problems_where(p["Switch"] != 0, "Switch", "must be 0")
    out += problems_where(~(vrmax > p["VRMIN"]), "VRMAX", vrmax_rule)
    return out + saturation_problems(p)


def _make_init(name: str):
    def init(efd, vt, p) -> dict:
        none = (p["E1"] == 0) | (p["E2"] == 0)
        a, b = quadratic_through(p["E1"], np.where(none, 0.0, p["SE1"]), p["E2"],
                                 np.where(none, 0.0, p["SE2"]))  # fmt: skip
        vr = (p["KE"] + saturation(np.asarray(efd, float), a, b)) * efd
        low, high = p["VRMIN"], p["VRMAX"]
        outside = (vr < low) | (vr > high)
        if outside.any():
            raise ValueError(
                f"{name}: initial regulator output VR = {vr[outside]} outside its limits "
                f"[{np.broadcast_to(low, vr.shape)[outside]}, "
                f"{np.broadcast_to(high, vr.shape)[outside]}]"
            )
        y = vr / p["KA"]
        return {"Vc": vt, "xl": y, "VR": vr, "Efd": efd, "xf": efd, "vref": vt + y,
                "sat_a": a, "sat_b": b}  # fmt: skip

    return init


def _make_derivatives():
    def derivatives(xs, vt, vref, vs, p):
        vc, xl, vr, efd, xf = xs
        d_vc, vc_out = lag(vc, vt, p["TR"])
        u = vref - vc_out + vs - p["KF"] * (efd - xf) / p["TF1"]
        d_xl, y = lead_lag(xl, u, p["TC"], p["TB"])
        low, high = p["VRMIN"], p["VRMAX"]
        d_vr = non_windup((p["KA"] * y - vr) / p["TA"], vr, low, high)
        se = saturation(efd, p["sat_a"], p["sat_b"])
        d_efd = (jnp.clip(vr, low, high) - (p["KE"] + se) * efd) / p["TE"]
        return d_vc, d_xl, d_vr, d_efd, (efd - xf) / p["TF1"]

    return derivatives


def _output(xs, vt, p):
    return xs[3]


def _model(name: str) -> DeviceModel:
    return DeviceModel(
        name=name,
        role="exciter",
        params=PARAMS,
        states=("Vc", "xl", "VR", "Efd", "xf"),
        source=f"PSS(R)E Model Library, {name}",
        check=_check,
        init=_make_init(name),
        derivatives=_make_derivatives(),
        output=_output,
    )


IEEEX1 = _model("IEEEX1")
