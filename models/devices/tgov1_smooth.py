"""TGOV1 steam-turbine governor (droop, valve lag, reheater lead-lag), without valve limits, on
the system base: the MATPOWER cases' governor (``models.devices.tgov1`` is PSS/E's, on MBASE with
limits).

Source: IEEE PES Task Force on Turbine-Governor Modeling, *Dynamic Models for Turbine-Governors
in Power System Studies*, IEEE PES-TR1, 2013, §2 (the TGOV1 block diagram); the same model as
Siemens PTI PSS(R)E ``TGOV1``. Per unit: speed ``omega`` in pu of synchronous speed, powers on
the *system* base (the builder converts R from the machine base: R_sys = R_mach S_base / S_mach);
time in s.

    T1 dPv/dt = Pref - (omega - 1) / R - Pv                      (governor and valve)
    T3 dPt/dt = Pv - Pt                                          (reheater lag)
    TM        = (T2 / T3) Pv + (1 - T2 / T3) Pt - Dt (omega - 1)  (lead-lag output)

``Pv`` is the valve position and ``Pt`` the state of the lead-lag (1 + s T2) / (1 + s T3). The valve
limits VMIN <= Pv <= VMAX are omitted so f stays smooth. In steady state TM = Pref - (omega-1)/R
- Dt (omega - 1): the droop characteristic.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from models.components.validation import check_fields, non_negative, positive
from models.devices.base import DeviceModel, check_rules

STATES = ("Pv", "Pt")
PARAMS = ("R", "T1", "T2", "T3", "Dt")
_RULES = (
    ("R", positive, "> 0 (droop, pu speed / pu power on the machine base)"),
    ("T1", positive, "> 0 (valve time constant, s)"),
    ("T2", non_negative, ">= 0 (lead time constant, s)"),
    ("T3", positive, "> 0 (reheater time constant, s)"),
    ("Dt", non_negative, ">= 0 (turbine damping, pu)"),
)


def validate_tgov1(device: str, data: Mapping) -> dict[str, float]:
    """Check the fields of ``PARAMS``: positive R, T1, T3 and non-negative T2, Dt."""
    return check_fields(device, data, _RULES)


def tgov1_output(Pv, Pt, omega, p: Mapping):
    """Mechanical torque TM (pu, system base)."""
    ratio = p["T2"] / p["T3"]
    return ratio * Pv + (1.0 - ratio) * Pt - p["Dt"] * (omega - 1.0)


def tgov1_derivatives(Pv, Pt, omega, pref, p: Mapping):
    """(dPv/dt, dPt/dt) in pu/s."""
    d_pv = (pref - (omega - 1.0) / p["R"] - Pv) / p["T1"]
    d_pt = (Pv - Pt) / p["T3"]
    return d_pv, d_pt


def init_tgov1(tm: np.ndarray) -> dict[str, np.ndarray]:
    """Steady state at omega = 1 for a mechanical torque ``tm``: Pv = Pt = Pref = TM."""
    tm = np.asarray(tm, dtype=float)
    return {"Pv": tm.copy(), "Pt": tm.copy(), "pref": tm.copy()}


def _init(tm, p) -> dict:
    return init_tgov1(tm)


def _derivatives(xs, omega, pref, p):
    return tgov1_derivatives(*xs, omega, pref, p)


def _output(xs, omega, p):
    return tgov1_output(*xs, omega, p)


TGOV1_SMOOTH = DeviceModel(
    name="tgov1",
    role="governor",
    params=PARAMS,
    states=STATES,
    source="IEEE PES-TR1 (2013) §2, TGOV1 without valve limits, system base",
    check=check_rules(_RULES),
    init=_init,
    derivatives=_derivatives,
    output=_output,
    prefix="gov_",
)
