"""Stability indicators of one trajectory (a run's result, or its stored Zarr dataset read
back with ``scoring.score.result_from_dataset``), read by variable name.

* rotor-angle spread: max over time of (max - min) of the ``delta[...]`` outputs (or states), deg;
* frequency nadir and zenith: the minimum and the maximum of the centre-of-inertia speed, here
  the plain mean of the ``omega[...]`` speeds (pu; inertia is not stored with the trajectory),
  times the nominal frequency, each with its time (a fault accelerates the machines: its
  zenith, not its nadir, is the frequency excursion);
* lowest bus voltage (``V[...]`` outputs), its time, and the time after it from which every bus
  stays at or above 0.9 pu (None when it never recovers; the dip time when it never dipped);
* transient stability index (TSI, the index of DSATools' TSAT): with delta_max the largest
  rotor-angle separation between any two machines over the horizon (deg),
  TSI = 100 (360 - delta_max) / (360 + delta_max), in (-100, 100]; TSI > 0 is stable;
* machines a generator trip disconnected (``tripped_machines``) are left out of the angle
  separation and the centre of inertia: out of service, they run away unloaded;
* verdict: stable when TSI > 0 (delta_max < 360 deg) and the trajectory is finite; a network
  without machine angles is judged on finiteness alone;
* severity: delta_max / 360 deg, the ranking key (larger = worse), so severity >= 1 exactly when
  TSI <= 0 (unstable); a non-finite trajectory has severity >= 1. Voltage and frequency
  excursions are reported beside it, not mixed into it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from solvers.result import SolveResult

ANGLE_LIMIT_DEG = 360.0
VOLTAGE_RECOVERY_PU = 0.9
STABILITY_CRITERION = (
    f"TSI > 0: largest rotor-angle separation < {ANGLE_LIMIT_DEG:g} deg over the horizon"
)
SEVERITY_DEFINITION = (
    "severity = largest rotor-angle separation between two machines over the horizon / 360 deg "
    "(>= 1 is unstable); TSI = 100 (1 - severity) / (1 + severity), > 0 stable (DSATools TSAT); "
    "a non-finite trajectory is unstable with severity >= 1"
)


def angle_limit_rule(state_names: tuple[str, ...]) -> Any:
    """A stop rule for a CCT probe (``solvers.stepping.StopRule``): once two machines' rotor
    angles (the ``delta[...]`` states, rad) are more than ANGLE_LIMIT_DEG apart at an accepted
    advance, the verdict is unstable whatever follows (TSI takes the largest separation over
    the horizon), so the rest of the horizon need not be integrated. None without two angles."""
    idx = np.array([i for i, n in enumerate(state_names) if n.startswith("delta[")], dtype=int)
    if idx.size < 2:
        return None
    limit = np.radians(ANGLE_LIMIT_DEG)

    def rule(advance: Any) -> str | None:
        angles = np.asarray(advance.x)[idx]
        spread = float(np.max(angles) - np.min(angles))
        if not spread > limit:
            return None
        return (
            f"rotor-angle separation {np.degrees(spread):.1f} deg > {ANGLE_LIMIT_DEG:g} deg: "
            "unstable whatever follows (a CCT probe stops here)"
        )

    return rule


def tsi(severity: float) -> float:
    """The transient stability index from the severity (delta_max / 360 deg)."""
    return 100.0 * (1.0 - severity) / (1.0 + severity)


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


def named(
    result: SolveResult, prefix: str, skip: frozenset[str] = frozenset()
) -> np.ndarray | None:
    """Columns of the evaluation grid whose name starts with ``prefix`` (outputs first, then
    states), (time, k), without the elements named in ``skip`` (``prefix`` + name + "]")."""
    for values, names in (
        (result.y_eval, result.output_names),
        (result.x_eval, result.state_names),
    ):
        cols = [
            i
            for i, n in enumerate(names)
            if n.startswith(prefix) and n[len(prefix) : -1] not in skip
        ]
        if cols:
            return np.asarray(values, dtype=float)[:, cols]
    return None


def tripped_machines(result: SolveResult) -> frozenset[str]:
    """Machines a generator trip disconnected during the run (its events' ``trip <name>``
    labels, ``models.disturbances.GeneratorTrip``, naming a machine with a rotor angle). A
    tripped machine keeps turning unloaded and runs away; it is out of service, so it leaves
    the angle separation and the centre of inertia (planning tools monitor in-service units
    only): otherwise every trip of a generator would read as a loss of synchronism."""
    labels = [str(e.get("label", "")) for e in result.events]
    names = {*result.output_names, *result.state_names}
    return frozenset(
        label[len("trip ") :]
        for label in labels
        if label.startswith("trip ") and f"delta[{label[len('trip ') :]}]" in names
    )


def stability_indicators(result: SolveResult, *, f_hz: float = 60.0) -> Indicators:
    """The indicators of one trajectory (see the module docstring)."""
    t = np.asarray(result.t_eval, dtype=float)
    finite = bool(np.all(np.isfinite(result.x_eval)))
    spread = None
    out = tripped_machines(result)
    delta = named(result, "delta[", out)
    if delta is not None and delta.shape[1] > 0:
        spread = float(np.degrees(np.nanmax(delta.max(axis=1) - delta.min(axis=1))))
    nadir = nadir_t = zenith = zenith_t = None
    omega = named(result, "omega[", out)
    if omega is not None and omega.shape[1] > 0:
        coi = omega.mean(axis=1)
        k = int(np.nanargmin(coi))
        nadir, nadir_t = float(coi[k] * f_hz), float(t[k])
        k = int(np.nanargmax(coi))
        zenith, zenith_t = float(coi[k] * f_hz), float(t[k])
    vmin = vmin_t = recovery = None
    volts = named(result, "V[")
    if volts is not None and volts.shape[1] > 0:
        low = volts.min(axis=1)
        k = int(np.nanargmin(low))
        vmin, vmin_t = float(low[k]), float(t[k])
        below = np.nonzero(~(low[k:] >= VOLTAGE_RECOVERY_PU))[0]
        if below.size == 0:
            recovery = vmin_t
        elif k + below[-1] + 1 < len(t):
            recovery = float(t[k + below[-1] + 1])
    stable = finite and (spread is None or spread < ANGLE_LIMIT_DEG)
    severity = (spread or 0.0) / ANGLE_LIMIT_DEG
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
