"""ESDC2A: DC commutator exciter with rate feedback and regulator limits proportional to the
terminal voltage (IEEE Std 421.5-2005 type DC2A).

Source: Siemens PTI, *PSS(R)E Model Library*, "ESDC2A" (CONs TR, KA, TA, TB, TC, VRMAX, VRMIN,
KE, TE, KF, TF1, Switch, E1, SE(E1), E2, SE(E2): EXDC2's CONs in EXDC2's order, checked against
the eight ESDC2A records of ``tests/data/psse/wecc_full.dyr``); IEEE Std 421.5-2005 §5.2 type
DC2A, which "differs from the type DC1A model only in the voltage regulator output limits, which
are now proportional to terminal voltage VT". Per unit field voltage on the machine's base; time
in s. The block diagram is EXDC2's (``exdc2.py``; the under-excitation limiter's high-value gate
VUEL is not an input here, as for every exciter of this project):

    TR dVc/dt = Vt - Vc                                      (voltage transducer; TR = 0: Vc = Vt)
    u = Vref - Vc + Vs - VF,   VF = KF (Efd - xf) / TF1       (rate feedback s KF / (1 + s TF1))
    TB dxl/dt = u - xl,  y = (TC/TB) u + (1 - TC/TB) xl         (lead-lag; TB = 0 removes it)
    TA dVR/dt = KA y - VR,   VRMIN VT <= VR <= VRMAX VT           (non-windup, moving limits)
    TE dEfd/dt = VR - (KE + SE(Efd)) Efd                     (exciter; SE quadratic through
                                                              (E1, SE(E1)), (E2, SE(E2)))
    TF1 dxf/dt = Efd - xf

The moving limit is EXDC2's: the regulator's derivative is held between k (VRMIN VT - VR) and
k (VRMAX VT - VR), k = ``exdc2.TRACK`` / TA (continuous in the states; at a limit VR follows it
with time constant TA / 100), and the exciter reads clip(VR, VRMIN VT, VRMAX VT).

Two data rules beyond EXDC2's, both met in ``wecc_full.dyr`` (KE = 0 and VRMAX = 0 in all eight
records):

* KE = 0 (self-excited exciter): PSS/E "calculates an effective value of KE such that the initial
  condition value of VR is zero; the zero value of KE is not changed" (the PSS/E model library's
  wording for its DC exciters, carried into the IEC 61970-302 (CIM) ExcDC2A description of the
  PSS/E model). So KE_eff = -SE(Efd0) (0 where Efd0 is below the saturation's start A) and
  VR0 = 0; KE != 0 is used as given. KE_eff is a parameter of the run (``KE_eff``), computed once
  from the power flow's Efd0.
* VRMAX = 0: read as "no upper limit" (VRMAX_eff = ``NO_LIMIT`` = 999, i.e. 999 VT). No PSS/E
  rule that computes VRMAX at initialization was found for ESDC2A (the model library's data
  sheet lists none; the KE rule above is the only initialization rule it states); 0 as "unlimited"
  is the convention ANDES documents for its ESDC2A ("Max. exc. limit (0-unlimited)"), and the only
  reading under which WECC's records (VRMAX 0, VRMIN -2 .. -3) admit a regulator. A finite 999
  rather than infinity keeps the derivatives of the moving limit finite.

E1 = 0 or E2 = 0 means no saturation (as IEEEX1, EXDC2). Initialization from Efd0 and VT0:
VR = (KE_eff + SE(Efd0)) Efd0 (within VRMIN VT0 .. VRMAX_eff VT0, else refused), y = VR / KA,
xl = u = y, xf = Efd0, Vc = VT0, Vref = VT0 + u. Switch != 0 is refused (IEEEX1's check).

Departure of ANDES 2.0.0's ESDC2A (the cross-check's reference) from this: KE = 0 is used as
zero (no effective KE), so VR0 = SE(Efd0) Efd0; the two agree where Efd0 is below the saturation's
start A, which holds for all eight WECC machines (``tests/test_psse_esdc2a.py``).
"""

from __future__ import annotations

import numpy as np

from models.devices.base import DeviceModel, quadratic_through, saturation
from models.devices.exdc2 import _derivatives as _exdc2_derivatives
from models.devices.exdc2 import _init as _exdc2_init
from models.devices.ieeex1 import PARAMS, dc_exciter_problems

NO_LIMIT = 999.0
"""Effective VRMAX (times VT) where the record gives VRMAX = 0 (no upper limit)."""


def _vrmax(p):
    return np.where(np.asarray(p["VRMAX"]) == 0, NO_LIMIT, p["VRMAX"])


def _check(p) -> list:
    """IEEEX1's rules without its refusal of KE = 0, VRMAX read as its effective value."""
    return dc_exciter_problems(p, _vrmax(p), "must be > VRMIN (0: no limit)")


def _effective(p, efd) -> dict:
    """KE_eff and VRMAX_eff of the module docstring, from the record and Efd0."""
    none = (p["E1"] == 0) | (p["E2"] == 0)
    a, b = quadratic_through(p["E1"], np.where(none, 0.0, p["SE1"]), p["E2"],
                             np.where(none, 0.0, p["SE2"]))  # fmt: skip
    se0 = saturation(np.asarray(efd, float), a, b)
    ke = np.where(np.asarray(p["KE"]) == 0, -se0, p["KE"])
    return {"KE_eff": np.asarray(ke, float), "VRMAX_eff": np.asarray(_vrmax(p), float)}


def _init(efd, vt, p) -> dict:
    eff = _effective(p, efd)
    try:
        init = _exdc2_init(efd, vt, {**p, "KE": eff["KE_eff"], "VRMAX": eff["VRMAX_eff"]})
    except ValueError as exc:
        raise ValueError(str(exc).replace("EXDC2:", "ESDC2A:", 1)) from None
    return {**init, **eff}


def _derivatives(xs, vt, vref, vs, p):
    return _exdc2_derivatives(xs, vt, vref, vs, {**p, "KE": p["KE_eff"], "VRMAX": p["VRMAX_eff"]})


def _output(xs, vt, p):
    return xs[3]


def dc_rule_readings(values: dict, unit: str = "") -> list[str]:
    """The KE = 0 and VRMAX = 0 rules of the module docstring (shared by IEEET1), where this
    record meets them; ``unit`` follows the no-limit value (ESDC2A's VRMAX scales with VT)."""
    out = []
    if values["KE"] == 0:
        out.append("KE = 0 read as PSS/E's self-excited exciter: an effective KE = -SE(Efd0) "
                   "is computed so that VR starts at 0")  # fmt: skip
    if values["VRMAX"] == 0:
        out.append(f"VRMAX = 0 read as no upper limit ({NO_LIMIT:g}{unit})")
    return out


def _readings(values: dict) -> list[str]:
    return dc_rule_readings(values, " VT")


ESDC2A = DeviceModel(
    name="ESDC2A",
    role="exciter",
    params=PARAMS,
    states=("Vc", "xl", "VR", "Efd", "xf"),
    source="PSS(R)E Model Library, ESDC2A; IEEE Std 421.5-2005 DC2A",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    output=_output,
    readings=_readings,
)
