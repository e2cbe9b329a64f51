"""The reduced ODE x' = f(x, z(x)) of a semi-explicit index-1 DAE, with its work counted.

z(x) comes from a warm-started Newton solve of 0 = g(x, z) (compiled, analytic g_z), falling back
to SciPy's MINPACK ``hybr`` and then ``lm`` when the fast solve fails, as seed 001 found necessary
away from the operating point. The exact Jacobian is f_x - f_z g_z^{-1} g_x (implicit-function
theorem). Every Newton iteration spent here is counted in ``Stats.algebraic_iterations``.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from scipy.optimize import root
from scipy.sparse import csc_matrix

from models.dae import DAESystem, Params
from models.kernels import SAMPLE_BATCH, Kernels, as_device_params
from solvers.result import Stats

ALGEBRAIC_TOL = 1e-8
"""Largest accepted |g| (pu) after the algebraic solve."""


class AlgebraicSolveError(RuntimeError):
    """0 = g(x, z) could not be solved near the current state."""


class NonFiniteError(RuntimeError):
    """The model returned NaN or inf at a finite state: the trajectory left its domain."""

    def __init__(self, message: str, t: float) -> None:
        super().__init__(message)
        self.t = t


def minpack_solve(residual, jacobian, guess: np.ndarray, stats: Stats) -> np.ndarray:
    """z with residual(z) = 0 by MINPACK's ``hybr``, then ``lm`` (both with the analytic
    ``jacobian``): the fallback seed 001 found necessary when Newton starts outside its basin.
    Raises ``AlgebraicSolveError`` when neither reaches ALGEBRAIC_TOL."""
    guess = np.asarray(guess, dtype=float)
    residual_norm = np.inf
    for method in ("hybr", "lm"):
        sol = root(residual, guess, jac=jacobian, method=method, tol=1e-12)
        stats.algebraic_iterations += int(getattr(sol, "nfev", 0))
        if np.all(np.isfinite(sol.x)) and np.max(np.abs(residual(sol.x))) <= ALGEBRAIC_TOL:
            return np.asarray(sol.x)
        residual_norm = float(np.max(np.abs(residual(sol.x))))
    raise AlgebraicSolveError(
        f"0 = g(x, z) has no solution near the current state (|g| = "
        f"{residual_norm:.2e} after Newton, hybr and lm)"
    )


class ReducedODE:
    """Right-hand side and Jacobian of the reduced ODE for one parameter set (one segment)."""

    def __init__(
        self, system: DAESystem, kernels: Kernels, params: Params, z_guess: np.ndarray, stats: Stats
    ) -> None:
        self.system = system
        self.kernels = kernels
        self.params = params
        self.p = as_device_params(params)
        self.z = np.asarray(z_guess, dtype=float)
        self.stats = stats

    def solve_z(self, x: np.ndarray, z_guess: np.ndarray | None = None) -> np.ndarray:
        """Consistent z for ``x``, warm-started from the last solution (or ``z_guess``)."""
        guess = self.z if z_guess is None else z_guess
        z, iterations, residual = self.kernels.newton(x, guess, self.p)
        self.stats.algebraic_iterations += int(iterations)
        return self._checked(x, np.asarray(z), float(residual), guess)

    def _checked(self, x: np.ndarray, z: np.ndarray, residual: float, guess) -> np.ndarray:
        if not (residual <= ALGEBRAIC_TOL and np.all(np.isfinite(z))):
            z = self._robust_solve(x, guess)
        self.z = z
        return z

    def _robust_solve(self, x: np.ndarray, guess: np.ndarray) -> np.ndarray:
        xj = jnp.asarray(x, jnp.float64)

        def residual(z: np.ndarray) -> np.ndarray:
            return np.asarray(self.kernels.g(xj, jnp.asarray(z, jnp.float64), self.p))

        def jacobian(z: np.ndarray) -> np.ndarray:
            return np.asarray(self.kernels.g_z(xj, jnp.asarray(z, jnp.float64), self.p))

        return minpack_solve(residual, jacobian, guess, self.stats)

    def rhs(self, t: float, x: np.ndarray) -> np.ndarray:
        """x' of the reduced ODE; one fused device call (Newton for z, then f)."""
        self.stats.rhs_evaluations += 1
        n_x = self.system.n_x
        packed = np.asarray(self.kernels.reduced_rhs(x, self.z, self.p))
        self.stats.algebraic_iterations += int(packed[-2])
        z = packed[n_x:-2]
        if not (packed[-1] <= ALGEBRAIC_TOL and np.all(np.isfinite(z))):
            z = self._checked(x, z, float(packed[-1]), self.z)
            return np.asarray(self.kernels.f(x, z, self.p))
        self.z = z
        f = packed[:n_x]
        if not np.all(np.isfinite(f)) and np.all(np.isfinite(x)):
            raise NonFiniteError("the model returned a non-finite x' = f(x, z)", t)
        return f

    def jacobian(self, t: float, x: np.ndarray) -> np.ndarray:
        """Exact d x'/d x = f_x - f_z g_z^-1 g_x at (x, z(x)) as a dense array; one fused
        device call."""
        return self._jacobian(x, sparse=False)

    def sparse_jacobian(self, t: float, x: np.ndarray) -> csc_matrix:
        """The same in CSC form (built from the entries alone where the kernels take the
        reduced Jacobian by its coloured pattern, ``models.kernels``)."""
        return self._jacobian(x, sparse=True)

    @property
    def jacobian_pattern(self):  # noqa: ANN201
        """The reduced Jacobian's structural pattern (``models.sparsity.ReducedPattern``) when
        the kernels take it coloured, else None."""
        return self.kernels.reduced_pattern

    def _jacobian(self, x: np.ndarray, sparse: bool):  # noqa: ANN202
        self.stats.jacobian_evaluations += 1
        jac, packed = self.kernels.reduced_jacobian(x, self.z, self.p)
        packed = np.asarray(packed)
        self.stats.algebraic_iterations += int(packed[-2])
        z = packed[:-2]
        if not (packed[-1] <= ALGEBRAIC_TOL and np.all(np.isfinite(z))):
            z = self._checked(x, z, float(packed[-1]), self.z)
            dense = np.asarray(self.kernels.ode_jacobian(x, z, self.p))
            return csc_matrix(dense) if sparse else dense
        self.z = z
        pattern = self.kernels.reduced_pattern
        if pattern is not None:  # the entries in the pattern's CSC order
            values = np.asarray(jac)
            return pattern.reduced_csc(values) if sparse else pattern.reduced_dense(values)
        return csc_matrix(np.asarray(jac)) if sparse else np.asarray(jac)

    def recover(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Consistent z and the named outputs at each row of ``xs`` (dense-output samples),
        batched SAMPLE_BATCH at a time, every sample warm-started from the current z."""
        n_z = self.system.n_z
        zs = np.empty((len(xs), n_z))
        ys = np.empty((len(xs), len(self.system.output_names)))
        for start in range(0, len(xs), SAMPLE_BATCH):
            chunk = xs[start : start + SAMPLE_BATCH]
            padded = np.concatenate([chunk, np.repeat(chunk[-1:], SAMPLE_BATCH - len(chunk), 0)])
            guess = np.broadcast_to(self.z, (SAMPLE_BATCH, n_z))
            packed = np.asarray(self.kernels.recover(padded, guess, self.p))[: len(chunk)]
            self.stats.algebraic_iterations += int(packed[:, -2].sum())
            for i, row in enumerate(packed):
                z = row[:n_z]
                if not (row[-1] <= ALGEBRAIC_TOL and np.all(np.isfinite(z))):
                    z = self._robust_solve(chunk[i], self.z)
                    row = np.concatenate([z, self.outputs(chunk[i], z), row[-2:]])
                zs[start + i], ys[start + i] = z, row[n_z:-2]
        return zs, ys

    def outputs(self, x: np.ndarray, z: np.ndarray) -> np.ndarray:
        if self.kernels.outputs is None:
            return np.zeros(0)
        return np.asarray(self.kernels.outputs(x, z, self.p))
