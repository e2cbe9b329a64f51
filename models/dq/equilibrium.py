"""The joint equilibrium of a block network: f = 0 and g = 0 over every state, every component's
algebraic variables and the interconnection unknowns, in one solve.

Fast path: Newton with the analytic (autodiff) Jacobian of the whole system from the blocks'
power-flow initializations. When that fails (a non-finite iterate, a residual that grows, or no
convergence in ``NEWTON_MAX_ITER``), the guess is outside Newton's basin, as seed 001 found for
SMIB (a 0.23 pu offset): Levenberg-Marquardt (MINPACK ``lm`` via ``scipy.optimize.least_squares``,
given the same analytic Jacobian) takes over, and Newton then polishes its answer. The report
says which path ran, the iterations and the residuals.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import least_squares

import models.jaxconfig  # noqa: F401
from models.cases.equilibrium import INIT_TOL
from models.dq.components import OMEGA_B

NEWTON_MAX_ITER = 15
RESIDUAL_TOL = 1e-11
"""Newton stops once the scaled residual (f / omega_b and g) is below this (infinity norm)."""


class EquilibriumError(RuntimeError):
    """No equilibrium was found from the power-flow initialization."""


@dataclass(frozen=True)
class Equilibrium:
    x: np.ndarray
    z: np.ndarray
    max_f: float
    max_g: float
    report: dict


def _newton(res, jac, w: np.ndarray) -> tuple[np.ndarray, int, bool, float]:
    r = np.asarray(res(w))
    start = float(np.max(np.abs(r)))
    for iteration in range(1, NEWTON_MAX_ITER + 1):
        w = w - np.linalg.solve(np.asarray(jac(w)), r)
        r = np.asarray(res(w))
        norm = float(np.max(np.abs(r)))
        if not np.all(np.isfinite(r)) or norm > 1e3 * max(start, 1e-6):
            return w, iteration, False, norm
        if norm <= RESIDUAL_TOL:
            return w, iteration, True, norm
    return w, NEWTON_MAX_ITER, False, norm


def solve_equilibrium(
    f: Callable,
    g: Callable,
    x_guess: np.ndarray,
    z_guess: np.ndarray,
    params: Mapping[str, Any],
    *,
    force_fallback: bool = False,
) -> Equilibrium:
    """Solve f(x, z) = 0, g(x, z) = 0 jointly from ``(x_guess, z_guess)``; ``force_fallback``
    runs Levenberg-Marquardt first (to test that path)."""
    n_x = len(x_guess)
    p = {k: jnp.asarray(v) for k, v in params.items()}

    def residual(w):
        x, z = w[:n_x], w[n_x:]
        return jnp.concatenate([f(x, z, p) / OMEGA_B, g(x, z, p)])

    res, jac = jax.jit(residual), jax.jit(jax.jacfwd(residual))
    w0 = np.concatenate([x_guess, z_guess])
    initial = float(np.max(np.abs(np.asarray(res(w0)))))
    report: dict = {"initial_residual": initial}
    ok = False
    if not force_fallback:
        w, iterations, ok, norm = _newton(res, jac, w0)
        report.update(method="newton", newton_iterations=iterations)
    if not ok:
        fit = least_squares(
            lambda w: np.asarray(res(w)),
            w0,
            jac=lambda w: np.asarray(jac(w)),
            method="lm",
            xtol=1e-15,
            ftol=1e-15,
            gtol=1e-15,
        )
        report.update(method="newton+lm" if not force_fallback else "lm", lm_evaluations=fit.nfev)
        w, iterations, ok, norm = _newton(res, jac, fit.x)
        report["polish_iterations"] = iterations
    report["final_residual"] = norm
    report["max_offset_from_guess"] = float(np.max(np.abs(w - w0)))
    x, z = w[:n_x], w[n_x:]
    max_f = float(np.max(np.abs(np.asarray(jax.jit(f)(x, z, p)))))
    max_g = float(np.max(np.abs(np.asarray(jax.jit(g)(x, z, p))))) if len(z) else 0.0
    if not (ok and max_f <= INIT_TOL and max_g <= INIT_TOL):
        raise EquilibriumError(
            f"no joint equilibrium: |f| = {max_f:.2e}, |g| = {max_g:.2e} after {report}"
        )
    return Equilibrium(np.asarray(x), np.asarray(z), max_f, max_g, report)
