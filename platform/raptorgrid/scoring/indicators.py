"""Stability indicators of one trajectory (a run's Zarr dataset), read by variable name.

* rotor-angle spread: max over time of (max - min) of the ``delta[...]`` outputs (or states), deg;
* frequency nadir and zenith: the minimum and the maximum of the centre-of-inertia speed, here
  the plain mean of the ``omega[...]`` speeds (pu; inertia is not stored with the trajectory),
  times the nominal frequency, each with its time (a fault accelerates the machines: its
  zenith, not its nadir, is the frequency excursion);
* lowest bus voltage (``V[...]`` outputs), its time, and the time after it from which every bus
  stays at or above 0.9 pu (None when it never recovers; the dip time when it never dipped);
* verdict: stable when the angle spread stays below 180 deg (``STABILITY_CRITERION``) and the
  trajectory is finite;
* severity: spread / 180 deg + max(0, 1 - lowest voltage): >= 1 is unstable by the criterion; it
  ranks contingencies (larger = worse).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import xarray as xr

ANGLE_LIMIT_DEG = 180.0
VOLTAGE_RECOVERY_PU = 0.9
STABILITY_CRITERION = f"max rotor-angle spread < {ANGLE_LIMIT_DEG:g} deg over the horizon"


@dataclass(frozen=True)
class Indicators:
    max_angle_spread_deg: float | None
    frequency_nadir_hz: float | None
    frequency_nadir_t: float | None
    frequency_zenith_hz: float | None
    frequency_zenith_t: float | None
    min_voltage_pu: float | None
    min_voltage_t: float | None
    voltage_recovery_t: float | None
    stable: bool
    criterion: str
    severity: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def named(ds: xr.Dataset, prefix: str) -> np.ndarray | None:
    """Columns whose name starts with ``prefix`` (outputs first, then states), (time, k)."""
    for var, dim in (("y", "output"), ("x", "state")):
        names = [str(n) for n in ds[dim].values]
        cols = [i for i, n in enumerate(names) if n.startswith(prefix)]
        if cols:
            return np.asarray(ds[var].isel({dim: cols}).values, dtype=float)
    return None


def stability_indicators(ds: xr.Dataset, *, f_hz: float = 60.0) -> Indicators:
    """The indicators of one stored trajectory (see the module docstring)."""
    t = np.asarray(ds["time"].values, dtype=float)
    finite = bool(np.all(np.isfinite(ds["x"].values)))
    spread = None
    delta = named(ds, "delta[")
    if delta is not None and delta.shape[1] > 0:
        spread = float(np.degrees(np.nanmax(delta.max(axis=1) - delta.min(axis=1))))
    nadir = nadir_t = zenith = zenith_t = None
    omega = named(ds, "omega[")
    if omega is not None and omega.shape[1] > 0:
        coi = omega.mean(axis=1)
        k = int(np.nanargmin(coi))
        nadir, nadir_t = float(coi[k] * f_hz), float(t[k])
        k = int(np.nanargmax(coi))
        zenith, zenith_t = float(coi[k] * f_hz), float(t[k])
    vmin = vmin_t = recovery = None
    volts = named(ds, "V[")
    if volts is not None and volts.shape[1] > 0:
        low = volts.min(axis=1)
        k = int(np.nanargmin(low))
        vmin, vmin_t = float(low[k]), float(t[k])
        below = np.nonzero(~(low[k:] >= VOLTAGE_RECOVERY_PU))[0]
        if below.size == 0:
            recovery = vmin_t
        elif k + below[-1] + 1 < len(t):
            recovery = float(t[k + below[-1] + 1])
    stable = finite and spread is not None and spread < ANGLE_LIMIT_DEG
    severity = (spread or 0.0) / ANGLE_LIMIT_DEG + max(
        0.0, 1.0 - (vmin if vmin is not None else 1.0)
    )
    if not finite:
        severity = max(severity, 1.0)
    return Indicators(
        max_angle_spread_deg=spread,
        frequency_nadir_hz=nadir,
        frequency_nadir_t=nadir_t,
        frequency_zenith_hz=zenith,
        frequency_zenith_t=zenith_t,
        min_voltage_pu=vmin,
        min_voltage_t=vmin_t,
        voltage_recovery_t=recovery,
        stable=stable,
        criterion=STABILITY_CRITERION,
        severity=float(severity),
    )
