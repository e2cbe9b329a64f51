"""The DAE contract every model and every solver share.

A system is the semi-explicit index-1 DAE

    x' = f(x, z, p),      0 = g(x, z, p),

with named differential states ``x`` (n_x), named algebraic variables ``z`` (n_z), and parameters
``p``: a flat dict of float64 arrays (a JAX pytree). ``f`` and ``g`` are pure JAX functions, traced
in float64; Jacobians come from JAX autodiff. A scenario changes parameter *values* only (never
shapes), so one compilation per system serves a whole campaign.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import models.jaxconfig  # noqa: F401  (float64 before any array exists)
from models.naming import unknown_name

Params = dict[str, Any]
"""Parameter pytree: name -> float64 array (scalars are 0-d arrays)."""

DaeFunction = Callable[[Any, Any, Params], Any]


@dataclass(frozen=True, eq=False)
class DAESystem:
    """A semi-explicit index-1 DAE with names, a consistent initial point and named outputs.

    ``outputs(x, z, p)`` returns a vector ordered like ``output_names`` (e.g. bus voltage
    magnitudes ``V[bus]`` in pu, angles ``theta[bus]`` in rad, machine speeds ``omega[gen]`` in pu,
    and ``kcl_max`` the largest nodal current mismatch in pu). ``perturbation_scale`` gives, per
    differential state, the typical size of a physically plausible initial-state perturbation
    (zero for states that must not be perturbed). ``names`` maps element kinds used by
    disturbances (``bus``, ``branch``, ``generator``, ``load``) to their ordered names; the index of
    a name in its list is the index into the matching parameter arrays.
    """

    name: str
    state_names: tuple[str, ...]
    alg_names: tuple[str, ...]
    f: DaeFunction
    g: DaeFunction
    x0: np.ndarray
    z0: np.ndarray
    params: Params
    output_names: tuple[str, ...] = ()
    outputs: DaeFunction | None = None
    perturbation_scale: np.ndarray | None = None
    names: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    controller_states: tuple[str, ...] = ()
    description: str = ""
    info: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.x0) != len(self.state_names):
            raise ValueError(f"x0 has {len(self.x0)} entries but {len(self.state_names)} states")
        if len(self.z0) != len(self.alg_names):
            raise ValueError(f"z0 has {len(self.z0)} entries but {len(self.alg_names)} variables")
        if not self.alg_names:
            raise ValueError(
                "alg_names: at least one algebraic variable is required (the solvers are built "
                "for 0 = g(x, z)); for a pure ODE add one, e.g. z with g = z - x[0]"
            )

    @property
    def n_x(self) -> int:
        return len(self.state_names)

    @property
    def n_z(self) -> int:
        return len(self.alg_names)

    def index_of(self, kind: str, name: str) -> int:
        """Index of element ``name`` of ``kind``; an unknown name raises, listing the valid ones."""
        if kind not in self.names:
            raise KeyError(f"system {self.name!r} has no {kind}s; it has: {sorted(self.names)}")
        valid = self.names[kind]
        if name not in valid:
            raise KeyError(unknown_name(kind, name, valid, f"system {self.name!r}"))
        return valid.index(name)

    def evaluate_outputs(self, x: np.ndarray, z: np.ndarray, p: Params | None = None) -> np.ndarray:
        """Outputs at one point (NumPy in, NumPy out); empty when the system defines none."""
        if self.outputs is None:
            return np.zeros(0)
        return np.asarray(self.outputs(x, z, self.params if p is None else p))


@dataclass(frozen=True)
class ParameterChange:
    """Set ``params[name][index] = value`` (``index`` None for a scalar parameter)."""

    name: str
    value: float
    index: int | None = None


@dataclass(frozen=True)
class Event:
    """Parameter changes applied together at ``time`` (s); the state ``x`` is continuous across."""

    time: float
    changes: tuple[ParameterChange, ...]
    label: str = ""


@dataclass(frozen=True)
class Scenario:
    """What to simulate on a system: a horizon, timed events and an optional initial state.

    ``x0``/``z0`` default to the system's equilibrium; when ``x0`` is given, ``z0`` must be
    consistent with it (``make_scenario`` in ``models.scenarios`` re-solves it). ``t_eval`` is the
    grid on which dense output is returned (default: 201 points over the horizon).
    """

    t_end: float
    t0: float = 0.0
    events: tuple[Event, ...] = ()
    x0: np.ndarray | None = None
    z0: np.ndarray | None = None
    t_eval: np.ndarray | None = None
    label: str = ""

    def __post_init__(self) -> None:
        if not self.t_end > self.t0:
            raise ValueError(f"t_end ({self.t_end}) must exceed t0 ({self.t0})")
        for event in self.events:
            if not self.t0 <= event.time <= self.t_end:
                raise ValueError(
                    f"event {event.label or event.time!r} at t={event.time} s lies outside "
                    f"[{self.t0}, {self.t_end}]"
                )

    def sorted_events(self) -> tuple[Event, ...]:
        return tuple(sorted(self.events, key=lambda e: e.time))

    def evaluation_grid(self, n_default: int = 201) -> np.ndarray:
        if self.t_eval is not None:
            return np.asarray(self.t_eval, dtype=float)
        return np.linspace(self.t0, self.t_end, n_default)


def apply_changes(params: Params, changes: tuple[ParameterChange, ...]) -> Params:
    """A new parameter dict with ``changes`` applied (shapes and dtypes never change)."""
    out = dict(params)
    for change in changes:
        if change.name not in out:
            raise KeyError(f"unknown parameter {change.name!r}; valid: {sorted(params)}")
        arr = np.array(out[change.name], dtype=np.float64, copy=True)
        if change.index is None:
            if arr.ndim != 0:
                raise ValueError(f"parameter {change.name!r} is an array: give an index")
            arr = np.asarray(change.value, dtype=np.float64)
        else:
            arr[change.index] = change.value
        out[change.name] = arr
    return out
