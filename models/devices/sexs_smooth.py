"""SEXS simplified excitation system (lead-lag and a first-order exciter), without limits: the
MATPOWER cases' ``CaseConfig(exciter="sexs")`` (``models.devices.sexs`` is PSS/E's, with limits).

Source: Siemens PTI PSS(R)E Model Library, ``SEXS``; IEEE Std 421.5-2016 uses the same structure for
its simplified models. Per unit on the machine's field-voltage base (Efd = 1 gives rated
open-circuit voltage); time in s.

    u        = Vref - Vt
    TB dxl/dt = u - xl                         (lead-lag (1 + s TA) / (1 + s TB))
    y         = xl + (TA / TB) (u - xl)
    TE dEfd/dt = K y - Efd

The output limits EMIN <= Efd <= EMAX are omitted so f stays smooth.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from models.components.validation import check_fields, non_negative, positive
from models.devices.base import DeviceModel, check_rules

STATES = ("Efd", "xl")
PARAMS = ("K", "TA_TB", "TB", "TE")
_RULES = (
    ("K", positive, "> 0 (gain, pu)"),
    ("TA_TB", non_negative, ">= 0 (ratio TA / TB of the lead-lag)"),
    ("TB", positive, "> 0 (lag time constant, s)"),
    ("TE", positive, "> 0 (exciter time constant, s)"),
)


def validate_sexs(device: str, data: Mapping) -> dict[str, float]:
    """Check the fields of ``PARAMS`` (positive K, TB, TE; non-negative TA/TB ratio)."""
    return check_fields(device, data, _RULES)


def sexs_derivatives(Efd, xl, Vt, vref, p: Mapping):
    """(dEfd/dt, dxl/dt) in pu/s."""
    u = vref - Vt
    y = xl + p["TA_TB"] * (u - xl)
    return (p["K"] * y - Efd) / p["TE"], (u - xl) / p["TB"]


def init_sexs(Efd: np.ndarray, Vt: np.ndarray, p: Mapping) -> dict[str, np.ndarray]:
    """Steady state: y = u = xl = Efd / K, Vref = Vt + Efd / K."""
    efd = np.asarray(Efd, dtype=float)
    u = efd / np.asarray(p["K"], dtype=float)
    return {"Efd": efd, "xl": u, "vref": np.asarray(Vt, dtype=float) + u}


def _derivatives(xs, vt, vref, vs, p):
    """The stabilizing signal ``vs`` adds to the voltage error (Vref - Vt + Vs)."""
    return sexs_derivatives(*xs, vt - vs, vref, p)


def _output(xs, vt, p):
    return xs[0]


SEXS_SMOOTH = DeviceModel(
    name="sexs",
    role="exciter",
    params=PARAMS,
    states=STATES,
    source="PSS(R)E Model Library, SEXS, without EMIN/EMAX",
    check=check_rules(_RULES),
    init=init_sexs,
    derivatives=_derivatives,
    output=_output,
    prefix="exc_",
)
