"""EXST1: IEEE type ST1 static excitation system (potential source, controlled rectifier).

Source: Siemens PTI, *PSS(R)E Model Library*, "EXST1" (CONs TR, VIMAX, VIMIN, TC, TB, KA, TA,
VRMAX, VRMIN, KC, KF, TF); IEEE Std 421.5 type ST1A. Per unit field voltage on the machine's
base; time in s. A zero TR or TB removes its block, as in PSS/E.

    TR dVc/dt = Vt - Vc                                           (voltage transducer)
    u = clip(Vref - Vc + Vs - VF, VIMIN, VIMAX),  VF = KF (Efd - xf) / TF
    TB dxl/dt = u - xl,  y = (TC/TB) u + (1 - TC/TB) xl              (lead-lag)
    TA dVA/dt = KA y - VA
    Efd = clip(VA, Vt VRMIN, Vt VRMAX - KC IFD)                    (output limits)
    TF dxf/dt = Efd - xf                                          (rate feedback)

The field current IFD is not among a machine's outputs yet, so KC must be 0.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from models.devices.base import DeviceModel, lag, lead_lag, problems_where

PARAMS = ("TR", "VIMAX", "VIMIN", "TC", "TB", "KA", "TA", "VRMAX", "VRMIN", "KC", "KF", "TF")


def _check(p) -> list:
    out = problems_where(p["TR"] < 0, "TR", "must be >= 0 (s)")
    out += problems_where(p["TB"] < 0, "TB", "must be >= 0 (s)")
    out += problems_where((p["TB"] == 0) & (p["TC"] != 0), "TC", "must be 0 when TB = 0")
    for k in ("KA", "TA", "TF"):
        out += problems_where(p[k] <= 0, k, "must be > 0")
    out += problems_where(p["KF"] < 0, "KF", "must be >= 0")
    out += problems_where(p["KC"] != 0, "KC", "must be 0 (the field current is not available)")
    out += problems_where(~(p["VIMAX"] > p["VIMIN"]), "VIMAX", "must be > VIMIN")
    out += problems_where(~(p["VRMAX"] > p["VRMIN"]), "VRMAX", "must be > VRMIN")
    return out


def _init(efd, vt, p) -> dict:
    y = efd / p["KA"]
    bad = (efd < vt * p["VRMIN"]) | (efd > vt * p["VRMAX"]) | (y < p["VIMIN"]) | (y > p["VIMAX"])
    if np.any(bad):
        raise ValueError(f"EXST1: initial field voltage {efd[bad]} outside its limits")
    return {"Vc": vt, "xl": y, "VA": efd, "xf": efd, "vref": vt + y}


def _efd(va, vt, p):
    return jnp.clip(va, vt * p["VRMIN"], vt * p["VRMAX"])


def _output(xs, vt, p):
    return _efd(xs[2], vt, p)


def _derivatives(xs, vt, vref, vs, p):
    vc, xl, va, xf = xs
    d_vc, vc_out = lag(vc, vt, p["TR"])
    efd = _efd(va, vt, p)
    u = jnp.clip(vref - vc_out + vs - p["KF"] * (efd - xf) / p["TF"], p["VIMIN"], p["VIMAX"])
    d_xl, y = lead_lag(xl, u, p["TC"], p["TB"])
    return d_vc, d_xl, (p["KA"] * y - va) / p["TA"], (efd - xf) / p["TF"]


EXST1 = DeviceModel(
    name="EXST1",
    role="exciter",
    params=PARAMS,
    states=("Vc", "xl", "VA", "xf"),
    source="PSS(R)E Model Library, EXST1",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    output=_output,
)
