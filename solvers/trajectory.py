"""Pieces every method shares: event segments, trajectory collection and the failure result."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from models.dae import DAESystem, Event, Params, Scenario, apply_changes
from solvers.result import SolveResult, Stats
from solvers.status import FailureReason, RunStatus

DIVERGENCE_LIMIT = 1e6
"""A state magnitude above this (in its own units) is taken as divergence."""


@dataclass(frozen=True)
class Segment:
    """A stretch [t_start, t_end] with fixed parameters; ``event`` was applied at ``t_start``."""

    t_start: float
    t_end: float
    params: Params
    event: Event | None


def segments(system: DAESystem, scenario: Scenario) -> Iterator[Segment]:
    """Split the horizon at event times; events at the same time are applied together.

    Events at t_end are applied to the parameters but leave a zero-length last segment, which
    callers skip (the state is continuous, only z would jump, and nothing follows).
    """
    params = dict(system.params)
    t = scenario.t0
    pending: Event | None = None
    for event in scenario.sorted_events():
        if event.time > t:
            yield Segment(t, event.time, params, pending)
            t, pending = event.time, None
        params = apply_changes(params, event.changes)
        if pending is not None:  # events at the same time are applied together
            label = f"{pending.label}; {event.label}"
            event = Event(event.time, pending.changes + event.changes, label)
        pending = event
    if scenario.t_end > t:
        yield Segment(t, scenario.t_end, params, pending)


@dataclass
class TrajectoryBuilder:
    """Collects accepted points and dense samples; samples at an event time take the
    post-event (right-continuous) value."""

    system: DAESystem
    scenario: Scenario
    t_eval: np.ndarray
    warnings: list[str] = field(default_factory=list)
    t: list[float] = field(default_factory=list)
    x: list[np.ndarray] = field(default_factory=list)
    z: list[np.ndarray] = field(default_factory=list)
    x_eval: np.ndarray = field(init=False)
    z_eval: np.ndarray = field(init=False)
    y_eval: np.ndarray = field(init=False)
    events: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        n_t = len(self.t_eval)
        self.x_eval = np.full((n_t, self.system.n_x), np.nan)
        self.z_eval = np.full((n_t, self.system.n_z), np.nan)
        self.y_eval = np.full((n_t, len(self.system.output_names)), np.nan)

    def accept(self, t: float, x: np.ndarray, z: np.ndarray) -> None:
        self.t.append(float(t))
        self.x.append(np.array(x, dtype=float))
        self.z.append(np.array(z, dtype=float))

    def accept_many(self, t: np.ndarray, x: np.ndarray, z: np.ndarray) -> None:
        """Several accepted points at once (rows of ``x`` and ``z``), in time order."""
        self.t.extend(np.asarray(t, dtype=float).tolist())
        self.x.extend(np.asarray(x, dtype=float))
        self.z.extend(np.asarray(z, dtype=float))

    def sample_indices(self, t_lo: float, t_hi: float, last: bool) -> np.ndarray:
        """Indices of grid points in [t_lo, t_hi) (or [t_lo, t_hi] when ``last``)."""
        upper = self.t_eval <= t_hi if last else self.t_eval < t_hi
        return np.nonzero((self.t_eval >= t_lo) & upper)[0]

    def result(
        self,
        *,
        method: str,
        options: dict,
        stats: Stats,
        status: RunStatus = RunStatus.SUCCEEDED,
        reason: FailureReason | None = None,
        message: str = "",
    ) -> SolveResult:
        n_x, n_z = self.system.n_x, self.system.n_z
        return SolveResult(
            status=status,
            message=message or ("integration finished" if status is RunStatus.SUCCEEDED else ""),
            method=method,
            options=options,
            stats=stats,
            state_names=self.system.state_names,
            alg_names=self.system.alg_names,
            output_names=self.system.output_names,
            t=np.asarray(self.t, dtype=float),
            x=np.asarray(self.x, dtype=float).reshape(len(self.t), n_x),
            z=np.asarray(self.z, dtype=float).reshape(len(self.t), n_z),
            t_eval=np.asarray(self.t_eval, dtype=float),
            x_eval=self.x_eval,
            z_eval=self.z_eval,
            y_eval=self.y_eval,
            reason=reason,
            events=self.events,
            warnings=list(self.warnings),
        )


def failure_message(reason: FailureReason, detail: str, t: float) -> str:
    return f"{detail} at t = {t:.6g} s. What to try: {reason.advice}."


def check_state(x: np.ndarray) -> FailureReason | None:
    """NON_FINITE or DIVERGED when the state left the model's domain, else None."""
    if not np.all(np.isfinite(x)):
        return FailureReason.NON_FINITE
    if np.max(np.abs(x)) > DIVERGENCE_LIMIT:
        return FailureReason.DIVERGED
    return None
