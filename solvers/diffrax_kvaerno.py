"""Kvaerno5 for tight tolerances: a stage root finder that measures the Newton correction in
state units, and a fifth-degree dense output.

**Stage solves.** diffrax solves each implicit stage for the stage's vector-field value f_i
(the stage state is y_i = y_partial + gamma h f_i) and its ``VeryChord`` scales the correction
Delta f by the controller's ``atol + rtol |f_i|``: a state tolerance applied to a time
derivative. Near an equilibrium f_i ~ 0, so the iteration must bring Delta f below
kappa * atol (1e-14 at the reference's atol 1e-12), whatever the step size. The reduced vector
field cannot be evaluated that precisely: its rounding floor is ~2e-13 on the IEEE 39-bus case
(the inverter's current loop, gain omega_b / Lf, and the ~1e-14 floor of the algebraic z), so
every stage solve ended in ``nonlinear_divergence``, the controller shrank the step by 5 and
the step collapsed to zero (99,905 accepted steps, t stuck at 3.2 ms, before any event).

``StateScaledChord`` measures the change of the stage *state*, Delta y = gamma h Delta f, in
units of ``atol + rtol |y_i|``, as Hairer and Wanner's Radau5 does and as the step-error test
does, so a stage solve asks for the accuracy the step needs and no more. Convergence is
VeryChord's (two iterations at least; rate theta from consecutive corrections; converged when
theta / (1 - theta) |Delta y| < kappa; diverged when theta > 2), plus a noise floor: a correction
below ``floor`` (in units of the tolerance) is converged whatever theta, because once the
iterates differ by rounding noise the ratio of two noises says nothing about convergence. With
theta <= 0.9 a correction below kappa / 10 leaves at most kappa of error. The stage's (gamma,
h, y_partial) come from the arguments diffrax passes to the root finder
(``_implicit_relation_f``'s ``(stage_index, diagonal, vf, prod, ti, yi_partial, args,
control)``); ``init`` checks that layout so a diffrax upgrade that changes it fails loudly.

**Dense output.** diffrax gives Kvaerno5 a third-degree Hermite interpolant (y and y' at both
ends), whose error grows as h^4 while the step's is controlled to the tolerance: once the stage
solves stopped rejecting steps for nothing, the steps on the WSCC 9-bus fault grew ~3x and
the error at the samples between steps reached 16x rtol at rtol 1e-8 while the step points
stayed within 0.3x rtol. ``Kvaerno5Quintic`` adds y'' = f_t + J f at both ends of each step
(two Jacobian-vector products per step) and interpolates with the fifth-degree Hermite
polynomial, whose error is O(h^6), below the method's own.
"""

from __future__ import annotations

import models.jaxconfig  # noqa: F401  (before diffrax: Equinox reads EQX_ON_ERROR on import)

# isort: split

from collections.abc import Callable
from typing import Any, ClassVar

import diffrax as dfx
import equinox as eqx
import jax
import jax.lax as lax
import jax.numpy as jnp
import jax.tree_util as jtu
import lineax as lx
import optimistix as optx
from jaxtyping import Array, PyTree

KAPPA = 1e-2
"""Converged when the estimated remaining error theta / (1 - theta) |Delta y| is below this
fraction of the tolerance (diffrax's VeryChord default; Hairer and Wanner suggest 0.01-0.1)."""
NOISE_FLOOR = KAPPA / 10
"""A correction below this fraction of the tolerance is converged (rounding noise)."""
STAGE_ARGS = 8
"""Length of the argument tuple diffrax passes to an f-space stage solve."""


def stage_layout_ok(args: Any) -> bool:
    """True when ``args`` looks like diffrax's f-space stage arguments."""
    return (
        isinstance(args, tuple)
        and len(args) == STAGE_ARGS
        and callable(args[2])  # vf
        and callable(args[3])  # prod
    )


class _ChordState(eqx.Module):
    linear_state: tuple[lx.AbstractLinearOperator, PyTree[Any]]
    diffsize: Array
    diffsize_prev: Array
    result: optx.RESULTS
    step: Array


class _NoAux(eqx.Module):
    fn: Callable

    def __call__(self, y, args):
        out, _ = self.fn(y, args)
        return out


class StateScaledChord(optx.AbstractRootFinder):
    """Chord iteration (one Jacobian per step, as ``diffrax.VeryChord``) whose convergence test
    measures the stage-state correction in units of ``atol + rtol |y|`` (module doc)."""

    rtol: Any
    atol: Any
    kappa: float = KAPPA
    floor: float = NOISE_FLOOR
    norm: Callable[[PyTree], Array] = optx.max_norm
    linear_solver: lx.AbstractLinearSolver = lx.AutoLinearSolver(well_posed=None)

    def init(self, fn, y, args, options, f_struct, aux_struct, tags) -> _ChordState:
        if not stage_layout_ok(args):
            raise TypeError(
                "StateScaledChord expects diffrax's f-space stage arguments (stage_index, "
                "diagonal, vf, prod, ti, yi_partial, args, control); this diffrax passes "
                f"{type(args).__name__} of length {len(args) if isinstance(args, tuple) else '?'}"
            )
        if "init_state" in options:
            state = options["init_state"]
            assert isinstance(state, _ChordState)
            return state
        jac = lx.linearise(lx.JacobianLinearOperator(_NoAux(fn), y, args, tags=tags))
        linear = self.linear_solver.init(jac, options={})
        dynamic, static = eqx.partition(linear, eqx.is_array)
        linear = eqx.combine(lax.stop_gradient(dynamic), static)
        dtype = jnp.result_type(*jtu.tree_leaves(y))
        return _ChordState(
            linear_state=(jac, linear),
            diffsize=jnp.array(jnp.inf, dtype),
            diffsize_prev=jnp.array(1.0, dtype),
            result=optx.RESULTS.successful,
            step=jnp.array(0),
        )

    def step(self, fn, y, args, options, state: _ChordState, tags):
        del options, tags
        fx, aux = fn(y, args)
        jac, linear = state.linear_state
        sol = lx.linear_solve(
            jac, fx, self.linear_solver, state=lax.stop_gradient(linear), throw=False
        )
        new_y = jtu.tree_map(lambda a, b: a - b, y, sol.value)
        _, diagonal, _, prod, _, yi_partial, _, control = args
        dy = prod(sol.value, control)  # h Delta f: the stage state moves by diagonal * dy
        yi = prod(new_y, control)
        scaled = jtu.tree_map(
            lambda d, yp, k: diagonal * d / (self.atol + self.rtol * jnp.abs(yp + diagonal * k)),
            dy,
            yi_partial,
            yi,
        )
        new_state = _ChordState(
            linear_state=state.linear_state,
            diffsize=self.norm(scaled),
            diffsize_prev=state.diffsize,
            result=optx.RESULTS.promote(sol.result),
            step=state.step + 1,
        )
        return new_y, new_state, aux

    def terminate(self, fn, y, args, options, state: _ChordState, tags):
        del fn, y, args, options, tags
        at_least_two = state.step >= 2
        rate = state.diffsize / state.diffsize_prev
        factor = state.diffsize * rate / (1 - rate)
        small = state.diffsize < self.floor
        diverged = ~jnp.isfinite(rate) | (rate > 2)
        converged = (factor > 0) & (factor < self.kappa)
        done = at_least_two & (small | diverged | converged)
        failed = at_least_two & ~small & (diverged | ~converged)
        result = optx.RESULTS.where(
            failed, optx.RESULTS.nonlinear_divergence, optx.RESULTS.successful
        )
        linear_failed = state.result != optx.RESULTS.successful
        result = optx.RESULTS.where(linear_failed, state.result, result)
        return done | linear_failed, result

    def postprocess(self, fn, y, aux, args, options, state, tags, result):
        return y, aux, {}


class QuinticHermiteInterpolation(dfx.AbstractLocalInterpolation):
    """The fifth-degree Hermite polynomial through y, h y' and h^2 y'' at both ends of a step."""

    t0: Any
    t1: Any
    coeffs: Array

    def __init__(self, *, t0, t1, y0, y1, k, a0, a1):
        d0, d1 = k[0], k[-1]  # h y'(t0), h y'(t1): FSAL, stiffly accurate
        self.t0, self.t1 = t0, t1
        self.coeffs = jnp.stack(
            [
                6 * (y1 - y0) - 3 * (d0 + d1) + 0.5 * (a1 - a0),
                15 * (y0 - y1) + 8 * d0 + 7 * d1 + 1.5 * a0 - a1,
                10 * (y1 - y0) - 6 * d0 - 4 * d1 - 1.5 * a0 + 0.5 * a1,
                0.5 * a0,
                d0,
                y0,
            ]
        )

    def evaluate(self, t0, t1=None, left=True):
        del left
        if t1 is not None:
            return self.evaluate(t1) - self.evaluate(t0)
        s = (t0 - self.t0) / (self.t1 - self.t0)
        return jnp.polyval(self.coeffs, s)


class Kvaerno5Quintic(dfx.Kvaerno5):
    """diffrax's Kvaerno5 (same steps, same error estimate) with the quintic Hermite dense
    output: each step also returns h^2 y'' at both ends (module doc). Single-array states."""

    interpolation_cls: ClassVar[Callable[..., QuinticHermiteInterpolation]] = (
        QuinticHermiteInterpolation
    )

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        y1, y_error, dense, solver_state, result = super().step(
            terms, t0, t1, y0, args, solver_state, made_jump
        )
        h = t1 - t0
        k = dense["k"]

        def curvature(t, y, hf):
            # h^2 y'' = h (f_t h + J (h f)): the JVP along (dt, dy) = (h, h f)
            _, dot = jax.jvp(lambda t_, y_: terms.vf(t_, y_, args), (t, y), (h, hf))
            return h * dot

        dense = dict(dense, a0=curvature(t0, y0, k[0]), a1=curvature(t1, y1, k[-1]))
        return y1, y_error, dense, solver_state, result


def kvaerno5(rtol: jax.Array, atol: jax.Array) -> Kvaerno5Quintic:
    """Kvaerno5 with the state-scaled stage solver and the quintic dense output, for a step
    controller with tolerances ``rtol``, ``atol``."""
    return Kvaerno5Quintic(root_finder=StateScaledChord(rtol=rtol, atol=atol))
