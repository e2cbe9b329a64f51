"""Build a ``Scenario`` from data: a disturbance, a horizon and an initial-condition instance."""

from __future__ import annotations

import numpy as np

from models.dae import DAESystem, Scenario
from models.disturbances import Disturbance, NoDisturbance
from models.kernels import consistent_z

ALGEBRAIC_TOL = 1e-9
"""Largest |g| (pu) accepted for a re-solved initial algebraic state."""


def perturbed_initial_state(
    system: DAESystem, seed: int, spread: float
) -> tuple[np.ndarray, np.ndarray]:
    """A seeded, physically plausible initial state and its consistent algebraic state.

    Each differential state moves by ``spread * scale_i * N(0, 1)`` where ``scale_i`` is the
    system's ``perturbation_scale`` (e.g. 0.05 rad for rotor angles, 1e-3 pu for speeds); the
    algebraic variables are then re-solved from 0 = g(x, z). ``spread = 0`` returns the equilibrium.
    """
    if spread < 0:
        raise ValueError("spread must be non-negative")
    x0 = np.array(system.x0, dtype=float)
    if spread == 0:
        return x0, np.array(system.z0, dtype=float)
    scale = system.perturbation_scale
    if scale is None:
        raise ValueError(f"system {system.name!r} declares no perturbation_scale")
    rng = np.random.default_rng(seed)
    x = x0 + spread * np.asarray(scale) * rng.standard_normal(system.n_x)
    z, _, residual = consistent_z(system, x)
    if not residual <= ALGEBRAIC_TOL:
        raise ValueError(
            f"no consistent algebraic state for the perturbed initial state (|g| = {residual:.2e});"
            " reduce the spread"
        )
    return x, z


def make_scenario(
    system: DAESystem,
    disturbance: Disturbance | None = None,
    *,
    t_end: float = 1.0,
    ic_seed: int = 0,
    ic_spread: float = 0.0,
    n_eval: int = 201,
    label: str = "",
) -> Scenario:
    """The scenario for one disturbance and one initial-condition instance on ``system``."""
    disturbance = disturbance or NoDisturbance()
    events = disturbance.events(system)
    if events and max(e.time for e in events) > t_end:
        raise ValueError(
            f"the disturbance's last event (t = {max(e.time for e in events)} s) is after the "
            f"horizon t_end = {t_end} s"
        )
    x0, z0 = perturbed_initial_state(system, ic_seed, ic_spread)
    offsets = disturbance.initial_offsets(system)
    if offsets:
        x0 = x0.copy()
        for index, delta in offsets:
            x0[index] += delta
        z0, _, residual = consistent_z(system, x0, z_guess=z0)
        if not residual <= ALGEBRAIC_TOL:
            raise ValueError(
                f"no consistent algebraic state for the offset initial state (|g| = "
                f"{residual:.2e}); reduce the offset"
            )
    return Scenario(
        t_end=t_end,
        events=events,
        x0=x0,
        z0=z0,
        t_eval=np.linspace(0.0, t_end, n_eval),
        label=label or disturbance.kind,
    )
