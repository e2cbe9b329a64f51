"""IEEET1: IEEE type 1 excitation system (DC commutator exciter with rate feedback; the 1968 IEEE
committee report's type 1, the forerunner of IEEE Std 421.5 type DC1A).

Source: Siemens PTI, *PSS(R)E Model Library*, "IEEET1" (CONs TR, KA, TA, VRMAX, VRMIN, KE, TE,
KF, TF, Switch, E1, SE(E1), E2, SE(E2)); IEEE Committee Report, "Computer representation of
excitation systems", IEEE Trans. PAS-87 (1968), type 1. Per unit field voltage on the machine's
base; time in s. It is IEEEX1's block diagram (``ieeex1.py``) without the lead-lag:

    TR dVc/dt = Vt - Vc                                      (voltage transducer; TR = 0: Vc = Vt)
    u = Vref - Vc + Vs - VF,   VF = KF (Efd - xf) / TF        (rate feedback s KF / (1 + s TF))
    TA dVR/dt = KA u - VR,   VRMIN <= VR <= VRMAX             (non-windup, ``base.non_windup``)
    TE dEfd/dt = VR - (KE + SE(Efd)) Efd                     (exciter; SE quadratic through
                                                              (E1, SE(E1)), (E2, SE(E2)))
    TF dxf/dt = Efd - xf

Data rules (ESDC2A's, the PSS/E DC exciters' wording; both said per record as ``readings``):

* KE = 0: PSS/E "calculates an effective value of KE such that the initial condition value of
  VR is zero; the zero value of KE is not changed", i.e. KE_eff = -SE(Efd0) (0 below the
  saturation's start A); KE != 0 is used as given. KE_eff is a parameter of the run.
* VRMAX = 0: read as no upper limit (``esdc2a.NO_LIMIT`` = 999), the convention ANDES 2.0.0's
  IEEET1 documents ("Set VRMAX=999 when zero"); no PSS/E rule computing VRMAX was found.
* E1 = 0 or E2 = 0: no saturation (IEEEX1's convention; ANDES's quadratic fit gives B = 0 there
  too, e.g. for its default data E1 = 0, SE(E1) = 0, E2 = 1, SE(E2) = 1).

Switch != 0 is refused (IEEEX1's rule; PSS/E's data sheet gives it no function in the block
diagram). Initialization from Efd0 and VT0: VR = (KE_eff + SE(Efd0)) Efd0 (within VRMIN ..
VRMAX_eff, else refused), u = VR / KA, xf = Efd0, Vc = VT0, Vref = VT0 + u.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from models.devices.base import (
    DeviceModel,
    lag,
    non_windup,
    problems_where,
    quadratic_through,
    saturation,
)
from models.devices.esdc2a import NO_LIMIT, dc_rule_readings
from models.devices.ieeex1 import saturation_problems

PARAMS = ("TR", "KA", "TA", "VRMAX", "VRMIN", "KE", "TE", "KF", "TF", "Switch", "E1", "SE1",
          "E2", "SE2")  # fmt: skip


def _vrmax(p):
    return np.where(np.asarray(p["VRMAX"]) == 0, NO_LIMIT, p["VRMAX"])


def _check(p) -> list:
    out = problems_where(p["TR"] < 0, "TR", "must be >= 0 (s)")
    for k in ("KA", "TA", "TE", "TF"):
        out += problems_where(p[k] <= 0, k, "must be > 0")
    out += problems_where(p["KF"] < 0, "KF", "must be >= 0")
    out += problems_where(p["Switch"] != 0, "Switch", "must be 0")
    out += problems_where(~(_vrmax(p) > p["VRMIN"]), "VRMAX", "must be > VRMIN (0: no limit)")
    return out + saturation_problems(p)


def dc_saturation(p) -> tuple[np.ndarray, np.ndarray]:
    """(A, B) of SE through (E1, SE(E1)), (E2, SE(E2)); none where E1 = 0 or E2 = 0."""
    none = (np.asarray(p["E1"]) == 0) | (np.asarray(p["E2"]) == 0)
    return quadratic_through(p["E1"], np.where(none, 0.0, p["SE1"]), p["E2"],
                             np.where(none, 0.0, p["SE2"]))  # fmt: skip


def _init(efd, vt, p) -> dict:
    efd, vt = np.asarray(efd, float), np.asarray(vt, float)
    a, b = dc_saturation(p)
    se0 = saturation(efd, a, b)
    ke = np.asarray(np.where(np.asarray(p["KE"]) == 0, -se0, p["KE"]), float)
    vrmax = np.asarray(np.broadcast_to(_vrmax(p), efd.shape), float)
    vr = (ke + se0) * efd
    low = np.broadcast_to(p["VRMIN"], vr.shape)
    outside = (vr < low) | (vr > vrmax)
    if outside.any():
        raise ValueError(
            f"IEEET1: initial regulator output VR = {vr[outside]} outside its limits "
            f"[{low[outside]}, {vrmax[outside]}]"
        )
    u = vr / p["KA"]
    return {"Vc": vt, "VR": vr, "Efd": efd, "xf": efd, "vref": vt + u, "sat_a": a, "sat_b": b,
            "KE_eff": ke, "VRMAX_eff": vrmax}  # fmt: skip


def _derivatives(xs, vt, vref, vs, p):
    vc, vr, efd, xf = xs
    d_vc, vc_out = lag(vc, vt, p["TR"])
    u = vref - vc_out + vs - p["KF"] * (efd - xf) / p["TF"]
    low, high = p["VRMIN"], p["VRMAX_eff"]
    d_vr = non_windup((p["KA"] * u - vr) / p["TA"], vr, low, high)
    se = saturation(efd, p["sat_a"], p["sat_b"])
    d_efd = (jnp.clip(vr, low, high) - (p["KE_eff"] + se) * efd) / p["TE"]
    return d_vc, d_vr, d_efd, (efd - xf) / p["TF"]


def _output(xs, vt, p):
    return xs[2]


IEEET1 = DeviceModel(
    name="IEEET1",
    role="exciter",
    params=PARAMS,
    states=("Vc", "VR", "Efd", "xf"),
    source="PSS(R)E Model Library, IEEET1; IEEE Trans. PAS-87 (1968) type 1",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    output=_output,
    readings=dc_rule_readings,
)
