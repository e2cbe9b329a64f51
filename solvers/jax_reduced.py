"""The reduced vector field x' = f(x, z(x), p) written in JAX, for integrators that run inside XLA.

z(x) comes from a Newton solve of 0 = g(x, z, p) (a ``lax.while_loop``; g_z by forward mode, or
by coloured JVPs on large networks: ``models.kernels.g_z_function``) started from
a guess fixed per segment: inside a compiled integrator there is no previous call to warm-start
from. Differentiating through the loop would be slow and only approximate, so ``solve_z`` carries
a custom JVP from the implicit-function theorem,

    dz = -g_z^{-1} (g_x dx + g_p dp),

which makes the Jacobian an implicit integrator builds by autodiff exact, at the cost of one
linear solve with g_z per tangent. When Newton does not reach |g| <= ALGEBRAIC_TOL the returned z
is NaN, so the integrator rejects the step and shrinks it instead of following a wrong z.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

import models.jaxconfig  # noqa: F401
from models.dae import DAESystem
from models.kernels import g_z_function, newton_solver
from solvers.reduced import ALGEBRAIC_TOL

NEWTON_MAX_ITER = 30
"""Newton iterations per algebraic solve; more than the warm-started host solve's, because the
guess is the segment's starting z, not the previous call's."""
NEWTON_STEP_TOL = 1e-12
"""Stop when the Newton update is below this, relative to max(1, |z|) (infinity norm)."""

ZSolver = Callable[[Any, Any, Any], Any]
"""``solve_z(x, z_guess, p) -> z``."""


def algebraic_solver(system: DAESystem) -> ZSolver:
    """``solve_z(x, z_guess, p)`` for ``system`` with the implicit-function-theorem JVP."""
    g = system.g
    g_z = g_z_function(system)  # coloured JVPs on large networks, not one per unknown
    solve = newton_solver(g, NEWTON_MAX_ITER, NEWTON_STEP_TOL, g_z=g_z)

    def newton(x, z, p):
        z, _ = solve(x, z, p)
        converged = jnp.max(jnp.abs(g(x, z, p))) <= ALGEBRAIC_TOL
        return jnp.where(converged, z, jnp.nan)

    @jax.custom_jvp
    def solve_z(x, z_guess, p):
        return newton(x, z_guess, p)

    @solve_z.defjvp
    def solve_z_jvp(primals, tangents):
        x, z_guess, p = primals
        dx, _, dp = tangents  # the solution does not depend on the guess
        z = newton(x, z_guess, p)
        _, g_dot = jax.jvp(lambda x_, p_: g(x_, z, p_), (x, p), (dx, dp))
        return z, -jnp.linalg.solve(g_z(x, z, p), g_dot)

    return solve_z


def reduced_vector_field(system: DAESystem) -> Callable[[Any, Any, Any], Any]:
    """``vf(t, x, args)`` with ``args = (p, z_guess)``: diffrax's vector-field signature."""
    solve_z = algebraic_solver(system)
    f = system.f

    def vector_field(t, x, args):
        p, z_guess = args
        return f(x, solve_z(x, z_guess, p), p)

    return vector_field
