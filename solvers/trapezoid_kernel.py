"""One implicit-trapezoid step of the DAE with x and z solved together, compiled once per system.

Unknowns w = (x1, z1); residual

    r_x = m * (x1 - x0 - h/2 (f(x0, z0) + f(x1, z1))) + (1 - m) * (x1 - x_frozen)
    r_z = g(x1, z1)

where the mask m selects the states advanced by the trapezoidal rule and holds the others at
``x_frozen`` (m = 1 everywhere: the simultaneous scheme; m = 0 on the controller states: the
delayed scheme's network stage, whose controller stage, ``controller_residual``, then solves
only the controller states with x and z held). The Newton matrix dr/dw comes from JAX
autodiff; its LU factors are passed in and out so that a step reuses the previous step's
factorization (a chord iteration) while that converges, and refactors at the current iterate
only when the contraction is too slow; if even a fresh factorization does not converge, the
step fails. The whole iteration is one
``lax.while_loop`` inside one AOT-compiled executable.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import lu_factor, lu_solve

import models.jaxconfig  # noqa: F401
from models.dae import DAESystem
from models.devices.base import limiter_view
from models.executables import compiled_once
from models.kernels import as_device_params

RATE_LIMIT = 0.2
"""Refactor when an iteration shrinks the update by less than this factor (chord too slow).
Measured on the WSCC 9-bus fault: 0.5 -> 7.1 iterations per step, 0.2 -> 6.4, 0.05 -> 5.1 with
four times the factorizations and no gain in time."""
RUNNING, CONVERGED, FAILED = 0, 1, 2
"""Newton status codes returned by the step."""


_LIMITED: weakref.WeakKeyDictionary[DAESystem, np.ndarray] = weakref.WeakKeyDictionary()
_LIMITED_LOCK = threading.Lock()


def limited_states(system: DAESystem) -> np.ndarray:
    """Indices of the states behind a non-windup limiter (``models.devices.base.non_windup``),
    found by evaluating f once with every limiter marked (``limiter_view("marker")``)."""
    with _LIMITED_LOCK:
        found = _LIMITED.get(system)
        if found is None:
            with limiter_view("marker"):
                f = system.f(
                    jnp.asarray(system.x0), jnp.asarray(system.z0), as_device_params(system.params)
                )
            found = np.flatnonzero(~np.isfinite(np.asarray(f)))
            _LIMITED[system] = found
        return found


def trapezoid_target(system: DAESystem):
    """``(target, bounds)``: ``bounds(x0, z0, p)`` gives the limits (low, high) of the
    non-windup-limited states at a step's start, once per step; ``target(x1, z1, x0, f0, h, p,
    lim)`` is the trapezoidal rule's x0 + h/2 (f0 + f(x1, z1)) with every such state instead
    clip(x0 + h/2 (f0 + f1_raw), low, high), f1_raw its derivative without the limiter's gate
    (``lim`` = ``bounds(...)``; None where the system has no such state).

    Why: with the gated f the step equation x1 = x0 + h/2 (f0 + f(x1)) has no root when x0 lies
    inside a limit by between h/2 |f0| and about h |f| (a solution inside the limit overshoots
    it, and beyond it the gate pulls it back), and Newton cycles between the two (IEEE 14
    PSS/E case: 19 of 39 scenarios failed at dt = 1 ms on TGOV1/IEEEG1 valve limits,
    docs/models.md). The clipped form is continuous in x1 and is the limiter's definition: the
    state stops at the limit within the step and leaves it when its raw derivative points back
    inside. The limits are taken at the step's start, outside the Newton iteration: exact for
    every model that uses ``non_windup`` (their limits are parameters; EXDC2's and ESDC2A's
    limits that move with VT have their own continuous form), and the residual traces f once."""
    f = system.f
    limited = limited_states(system)
    if limited.size == 0:

        def plain(x1, z1, x0, f0, h, p, lim):
            return x0 + 0.5 * h * (f0 + f(x1, z1, p))

        return plain, lambda x0, z0, p: None
    index = jnp.asarray(limited)

    def bounds(x0, z0, p):
        with limiter_view("low"):
            low = f(x0, z0, p)[index]
        with limiter_view("high"):
            high = f(x0, z0, p)[index]
        return low, high

    def target(x1, z1, x0, f0, h, p, lim):
        with limiter_view("raw"):
            free = x0 + 0.5 * h * (f0 + f(x1, z1, p))
        return free.at[index].set(jnp.clip(free[index], *lim))

    return target, bounds


@dataclass(frozen=True)
class StepOutcome:
    """What one compiled step returns (device arrays)."""

    x: Any
    z: Any
    f: Any
    lu: Any
    piv: Any
    iterations: Any
    factorizations: Any
    status: Any


def _chord(residual, refactor, solve, w0, factors, factor_first, tol, max_iter, done=False):
    """The chord (modified Newton) iteration of a step, shared by the dense and sparse steps
    and by the batched step (``solvers.trapezoid_batch``): ``factors`` (any pytree) are kept
    while the update contracts by RATE_LIMIT per iteration, refreshed by ``refactor(w, factors)``
    when it slows (restarting from ``w0``); a step that is slow even with fresh factors fails.
    Returns (w, factors, iterations, factorizations, status).

    On a batch (w of shape (B, n), the other per-problem values of shape (B,), ``done`` marking
    members that take no step) the loop runs while any member runs, a refactorization is
    computed when any member needs one and kept only by those, and members that finished keep
    their values: each member follows exactly the iteration it would follow alone."""
    batched = jnp.ndim(w0) > 1

    def rows(mask, like):
        return jnp.reshape(mask, jnp.shape(mask) + (1,) * (jnp.ndim(like) - jnp.ndim(mask)))

    def keep_where(mask, new, old):
        return jax.tree_util.tree_map(lambda a, b: jnp.where(rows(mask, a), a, b), new, old)

    def cond(c):
        return jnp.any(c[5] == RUNNING)

    def body(c):
        w, factors, it, it_fac, n_fac, status, fresh, need, prev = c
        running = status == RUNNING
        need = need & running
        if batched:
            factors = jax.lax.cond(
                jnp.any(need), lambda: keep_where(need, refactor(w, factors), factors),
                lambda: factors,
            )  # fmt: skip
        else:
            factors = jax.lax.cond(need, lambda: refactor(w, factors), lambda: factors)
        n_fac = n_fac + need
        fresh = fresh | need
        it_fac = jnp.where(need, 0, it_fac)
        prev = jnp.where(need, jnp.inf, prev)
        dw = solve(factors, residual(w))
        w_new = w - dw
        size = jnp.max(jnp.abs(dw), axis=-1) / jnp.maximum(1.0, jnp.max(jnp.abs(w_new), axis=-1))
        finite = jnp.isfinite(size)
        converged = finite & (size <= tol)
        slow = ~finite | ((it_fac >= 1) & (size > RATE_LIMIT * prev)) | (it_fac + 1 >= max_iter)
        slow = slow & ~converged
        new_status = jnp.where(converged, CONVERGED, jnp.where(slow & fresh, FAILED, RUNNING))
        new_need = slow & ~fresh
        # a refactorization restarts from the predictor: the stale iterates may have drifted
        w_next = jnp.where(rows(new_need, w), w0, w_new)
        return (
            jnp.where(rows(running, w), w_next, w),
            factors,
            it + running,
            jnp.where(running, it_fac + 1, it_fac),
            n_fac,
            jnp.where(running, new_status, status),
            fresh,
            running & new_need,
            jnp.where(running, size, prev),
        )

    shape = jnp.shape(w0)[:-1]
    zeros = jnp.zeros(shape, jnp.int32)
    status = jnp.where(done, CONVERGED, RUNNING) + zeros
    need = (factor_first & ~jnp.asarray(done)) | jnp.zeros(shape, bool)
    fresh = jnp.zeros(shape, bool)
    init = (w0, factors, zeros, zeros, zeros, status, fresh, need, jnp.full(shape, jnp.inf))
    w, factors, it, _, n_fac, status, *_ = jax.lax.while_loop(cond, body, init)
    return w, factors, it, n_fac, status


def step_residual(system: DAESystem):
    """``(residual, bounds)``: the step's residual r(w, x0, f0, h, p, mask, frozen, lim) of the
    module docstring (``lim`` = ``bounds(x0, z0, p)``, ``trapezoid_target``), shared by the
    step here and the batched program (``solvers.trapezoid_batch``)."""
    g, n_x = system.g, system.n_x
    target, bounds = trapezoid_target(system)

    def residual(w, x0, f0, h, p, mask, frozen, lim):
        x1, z1 = w[:n_x], w[n_x:]
        advanced = x1 - target(x1, z1, x0, f0, h, p, lim)
        return jnp.concatenate([mask * advanced + (1.0 - mask) * (x1 - frozen), g(x1, z1, p)])

    return residual, bounds


def controller_residual(system: DAESystem, index: np.ndarray):
    """``(residual, bounds)``: the delayed scheme's controller stage (``solvers.trapezoid``):
    unknowns c = the controller states ``index`` at the step's end, the other states held at
    the network stage's ``x_net`` and the algebraic variables at its ``z1``;

        r(c) = c - (x0 + h/2 (f0 + f(x_net with c, z1)))[index]

    (limited states clipped as in ``trapezoid_target``). Its Newton matrix is
    len(index) x len(index): no network unknown enters it."""
    target, bounds = trapezoid_target(system)
    index = jnp.asarray(index)

    def residual(c, x_net, z1, x0, f0, h, p, lim):
        x1 = x_net.at[index].set(c)
        return c - target(x1, z1, x0, f0, h, p, lim)[index]

    return residual, bounds


def _dense_chord(residual, jacobian, args, w0, factors, factor_first, tol, max_iter):
    """``_chord`` with dense LU factors of ``jacobian(w, *args)`` (the solo steps)."""
    return _chord(
        lambda w: residual(w, *args),
        lambda w, _: lu_factor(jacobian(w, *args)),
        lambda lu, r: lu_solve(lu, r),
        w0,
        factors,
        factor_first,
        tol,
        max_iter,
    )


def _controller_step_function(system: DAESystem, index: np.ndarray):
    f = system.f
    residual, bounds = controller_residual(system, index)
    jacobian = jax.jacfwd(residual)
    at = jnp.asarray(index)

    def step(x0, z0, f0, h, p, x_net, z1, lu, piv, factor_first, tol, max_iter):
        args = (x_net, z1, x0, f0, h, p, bounds(x0, z0, p))
        c0 = x0[at] + h * f0[at]
        c, (lu, piv), it, n_fac, status = _dense_chord(
            residual, jacobian, args, c0, (lu, piv), factor_first, tol, max_iter
        )
        x1 = x_net.at[at].set(c)
        return x1, z1, f(x1, z1, p), lu, piv, it, n_fac, status

    return step


def compiled_controller_step(system: DAESystem, index: np.ndarray) -> tuple[Any, float, float]:
    """The compiled controller stage of ``system`` (controller states ``index``) and the
    seconds this call spent compiling and loading it."""
    m = len(index)

    def example():
        x, z, scalar, p = _examples(system)
        lu = (jnp.zeros((m, m), jnp.float64), jnp.zeros(m, jnp.int32))
        return (x, z, x, scalar, p, x, z, *lu, jnp.asarray(True), scalar, jnp.asarray(0, jnp.int32))

    return compiled_once(
        system,
        ("trapezoid controller step", tuple(int(i) for i in index)),
        lambda: _controller_step_function(system, index),
        example,
    )


def _examples(system: DAESystem):
    """Example (x, z, scalar, params) of ``system`` for lowering its step functions."""
    x = jnp.asarray(system.x0, jnp.float64)
    z = jnp.asarray(system.z0, jnp.float64)
    return x, z, jnp.asarray(0.0, jnp.float64), as_device_params(system.params)


def _step_function(system: DAESystem):
    f = system.f
    n_x = system.n_x
    residual, bounds = step_residual(system)
    jacobian = jax.jacfwd(residual)

    def step(x0, z0, f0, h, p, mask, frozen, lu, piv, factor_first, tol, max_iter):
        args = (x0, f0, h, p, mask, frozen, bounds(x0, z0, p))
        w0 = jnp.concatenate([mask * (x0 + h * f0) + (1.0 - mask) * frozen, z0])

        w, (lu, piv), it, n_fac, status = _dense_chord(
            residual, jacobian, args, w0, (lu, piv), factor_first, tol, max_iter
        )
        x1, z1 = w[:n_x], w[n_x:]
        return x1, z1, f(x1, z1, p), lu, piv, it, n_fac, status

    return step


def compiled_step(system: DAESystem) -> tuple[Any, float, float]:
    """The compiled step of ``system`` and the seconds this call spent compiling and loading
    it."""
    n = system.n_x + system.n_z

    def example():
        x, z, scalar, p = _examples(system)
        lu = (jnp.zeros((n, n), jnp.float64), jnp.zeros(n, jnp.int32))
        return (x, z, x, scalar, p, x, x, *lu, jnp.asarray(True), scalar, jnp.asarray(0, jnp.int32))

    return compiled_once(system, ("trapezoid step",), lambda: _step_function(system), example)


def run_step(compiled, *args) -> StepOutcome:
    """Call the compiled step; returns its outputs as a ``StepOutcome``."""
    return StepOutcome(*compiled(*args))


class SparseStep:
    """The trapezoidal step of ``_step_function`` on the sparse unreduced DAE: the Newton
    matrix comes from the network's coloured Jacobian (``models.sparsity``, a few JVPs instead
    of a dense forward-mode Jacobian over every unknown) and is factored by KLU
    (``solvers.shifted_lu``, symbolic analysis once per structure), the same machinery as
    RAPTOR's. With the mask m on the x rows, the matrix

        [[I - h/2 diag(m) f_x, -h/2 diag(m) f_z], [g_x, g_z]]

    is E - h/2 J_m, J_m = J with its x rows scaled by m, once its z rows are multiplied by
    -h/2 (so are the residual's z rows: the same solution). The numeric factorization stays in
    this object's KLU handle between steps, so a step whose h is unchanged keeps the previous
    one (a chord iteration) and refactors only when the contraction is too slow, as the dense
    step does. One object per mask (the delayed scheme has two)."""

    def __init__(self, system: DAESystem) -> None:
        from models.sparsity import _values_fn, jacobian_structure
        from solvers.shifted_lu import make_linalg

        self.structure, compile_s, load_s = jacobian_structure(system)
        self.linalg = make_linalg(self.structure, "sparse", 1)
        self.handles = self.linalg.handles()
        st = self.structure
        self.values = _values_fn(system, st.rows, st.cols, st.colors, st.n_colors)
        self.compile_seconds, self.load_seconds = compile_s, load_s

        def example() -> tuple:  # the KLU handles are arguments
            x, z, scalar, p = _examples(system)
            flags = (jnp.asarray(True), scalar, jnp.asarray(0, jnp.int32))
            return (x, z, x, scalar, p, x, x, self.handles, *flags)

        self.step, compile_s, load_s = compiled_once(
            system, ("trapezoid sparse step",), lambda: _sparse_step_function(system, self), example
        )
        self.compile_seconds += compile_s
        self.load_seconds += load_s

    def __call__(self, x0, z0, f0, h, p, mask, frozen, factor_first, tol, max_iter):
        with self.linalg.lock:
            x1, z1, f1, it, n_fac, status = self.step(
                x0, z0, f0, h, p, mask, frozen, self.handles, factor_first, tol, max_iter
            )
        return StepOutcome(x1, z1, f1, None, None, it, n_fac, status)


def _sparse_step_function(system: DAESystem, sparse: SparseStep):
    f, g = system.f, system.g
    n_x = system.n_x
    linalg, values = sparse.linalg, sparse.values
    rows = jnp.asarray(sparse.structure.rows)
    in_x_rows = rows < n_x
    x_row_of_entry = jnp.where(in_x_rows, rows, 0)
    target, bounds = trapezoid_target(system)

    def step(x0, z0, f0, h, p, mask, frozen, handles, factor_first, tol, max_iter):
        half = 0.5 * h
        lim = bounds(x0, z0, p)

        def residual(w):
            x1, z1 = w[:n_x], w[n_x:]
            advanced = x1 - target(x1, z1, x0, f0, h, p, lim)
            r_x = mask * advanced + (1.0 - mask) * (x1 - frozen)
            return jnp.concatenate([r_x, -half * g(x1, z1, p)])

        w0 = jnp.concatenate([mask * (x0 + h * f0) + (1.0 - mask) * frozen, z0])
        entry_scale = jnp.where(in_x_rows, mask[x_row_of_entry], 1.0)

        def refactor(w, num):
            vals = values(w[:n_x], w[n_x:], p) * entry_scale
            return linalg.factor_shifted(vals, jnp.reshape(half, (1,)), handles, "filter")[0]

        def solve(num, r):
            return linalg.solve_shifted((num, handles["symbolic"]), r[None, :, None])[0, :, 0]

        w, _, it, n_fac, status = _chord(
            residual, refactor, solve, w0, handles["filter"], factor_first, tol, max_iter
        )
        x1, z1 = w[:n_x], w[n_x:]
        return x1, z1, f(x1, z1, p), it, n_fac, status

    return step
