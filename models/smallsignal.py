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


SCAN_HZ = (0.0, 0.1, 0.3, 1.0, 2.0, 5.0, 10.0, 30.0, 100.0)
"""Imaginary parts (Hz) of the shifts of ``rightmost_modes``: from the network's common-rotation
and governor modes through the electromechanical (0.1-3 Hz) to the exciter and inverter-control
bands."""
SCAN_MODES = 10
"""Eigenvalues found nearest each shift."""


def rightmost_modes(
    system: DAESystem,
    x=None,
    z=None,
    params=None,
    *,
    shift_real: float = 0.5,
    scan_hz: tuple[float, ...] = SCAN_HZ,
    k: int = SCAN_MODES,
) -> Modes:
    """The finite eigenvalues of the DAE pencil (J, E) nearest each shift s = shift_real +
    2 pi i f (f in ``scan_hz``), by sparse shift-invert: ARPACK's largest |nu| of
    (J - s E)^-1 E with one sparse LU of J - s E per shift, lambda = s + 1/nu. J is the
    unreduced Jacobian (``models.sparsity``), E = diag(1 on x, 0 on z), so the algebraic
    directions (infinite eigenvalues, nu = 0) never appear and nothing is densified: the check
    of choice for networks whose reduced state matrix is too large for dense ``eigvals``
    (thousands of states). The eigenvalues of (J, E) are those of the reduced state matrix.

    A scan, not the whole spectrum: it finds the modes nearest the right half-plane along the
    imaginary axis up to max(scan_hz), which is where instability of a power system shows."""
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    from models.sparsity import jacobian_structure

    structure, _, _ = jacobian_structure(system)
    x = np.asarray(structure.x0 if x is None else x, dtype=float)
    z = np.asarray(structure.z0 if z is None else z, dtype=float)
    p = {k_: jnp.asarray(v, jnp.float64) for k_, v in (params or system.params).items()}
    jac = structure.csc(np.asarray(structure.values(x, z, p))).astype(complex)
    n = structure.n
    e = sp.diags(np.r_[np.ones(system.n_x), np.zeros(system.n_z)]).tocsc()
    found: list[complex] = []
    for f_hz in scan_hz:
        shift = shift_real + 2j * np.pi * f_hz
        lu = spla.splu((jac - shift * e).tocsc())
        operator = spla.LinearOperator(
            (n, n), matvec=lambda v, lu=lu: lu.solve(e @ v), dtype=complex
        )
        want = min(k, system.n_x - 2)
        try:
            nu = spla.eigs(
                operator,
                k=want,
                which="LM",
                ncv=min(n, max(4 * want, 40)),
                maxiter=50 * n,
                return_eigenvectors=False,
            )
        except spla.ArpackNoConvergence as partial:  # keep what converged
            nu = partial.eigenvalues
        nu = nu[np.abs(nu) > 1e-12]
        found.extend(shift + 1.0 / nu)
    eig = np.asarray(found)
    # keep one of each eigenvalue found from several shifts, and its conjugate
    eig = np.concatenate([eig, np.conj(eig)])
    eig = np.unique(np.round(eig, 6))
    return Modes(eig[np.argsort(-eig.real)])
