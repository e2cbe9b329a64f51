"""Small-signal analysis of any DAE system at a point: the eigenvalues of the reduced state
matrix A = f_x - f_z g_z^{-1} g_x (implicit-function theorem, autodiff Jacobians).

Used to check that a case starts at a stable equilibrium and to report its stiffness: the
fastest mode |lambda|_max (rad/s) and the slowest decay (largest real part, 1/s).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

import models.jaxconfig  # noqa: F401
from models.dae import DAESystem


@dataclass(frozen=True)
class Modes:
    eigenvalues: np.ndarray
    """Eigenvalues of the reduced state matrix (1/s), sorted by decreasing real part."""

    @property
    def max_real(self) -> float:
        return float(self.eigenvalues.real.max())

    @property
    def fastest(self) -> float:
        """Largest |lambda| (rad/s): the stiffest mode."""
        return float(np.abs(self.eigenvalues).max())

    @property
    def stiffness_ratio(self) -> float:
        """|lambda|_max / |lambda|_min over the modes (a zero mode gives inf)."""
        smallest = float(np.abs(self.eigenvalues).min())
        return self.fastest / smallest if smallest > 0 else float("inf")

    def summary(self) -> dict:
        return {
            "n_modes": int(self.eigenvalues.size),
            "max_real_per_s": self.max_real,
            "fastest_rad_per_s": self.fastest,
            "stiffness_ratio": self.stiffness_ratio,
        }


def state_matrix(system: DAESystem, x=None, z=None, params=None) -> np.ndarray:
    """The reduced state matrix at (x, z) (default: the system's initial point)."""
    x = np.asarray(system.x0 if x is None else x, dtype=float)
    z = np.asarray(system.z0 if z is None else z, dtype=float)
    p = {k: jnp.asarray(v) for k, v in (params or system.params).items()}

    @jax.jit
    def jacobians(x, z):
        fx, fz = jax.jacfwd(system.f, argnums=(0, 1))(x, z, p)
        gx, gz = jax.jacfwd(system.g, argnums=(0, 1))(x, z, p)
        return fx, fz, gx, gz

    fx, fz, gx, gz = (np.asarray(a) for a in jacobians(x, z))
    return fx - fz @ np.linalg.solve(gz, gx)


def modes(system: DAESystem, x=None, z=None, params=None) -> Modes:
    """Eigenvalues of the reduced state matrix at (x, z)."""
    eig = np.linalg.eigvals(state_matrix(system, x, z, params))
    return Modes(eig[np.argsort(-eig.real)])
