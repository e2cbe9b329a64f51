"""One RAPTOR interval attempt, compiled once per system structure.

Given x_k, z_k, the interval length h (traced), a frozen reduced Jacobian A_0 and a basis bank
(selected by a traced index from device-resident stacked banks), the attempt

1. factorizes the decoupled chord matrices (I - h lam_j A_0) (complex, size n_x; one per
   conjugate pair of eigenvalues of the stage matrix, see ``basis``), the real (I - h A_0)
   used by the predictor and the error filter, and g_z at the interval start;
2. initializes the coefficients by matching the start derivative f(x_k) and a predicted end
   derivative f(x_hat), x_hat = x_k + h (I - h A_0)^-1 f(x_k) (linearly implicit Euler, the
   default; the paper's plain forward-Euler prediction x_k + h f(x_k) is an option, but it
   explodes for h |lam| > 2), biased towards the previous interval's coefficients with weight
   ``mu`` (0 after events and rejections);
3. runs the chord (modified Newton) iteration on Y = h Q F(x_k + Y), recovering z at every
   collocation point from g = 0 (warm-started simplified Newton with g_z factorized once per
   attempt at (x_k, z_k); a full Newton solve only when that stalls), with Hairer-Wanner
   convergence control on the contraction rate theta;
4. evaluates the acceptance indicator: the DAE residual h x_w'(s) - h f(x_w(s), z(s)) at the
   off-grid checkpoints, filtered by (I - h A_0)^-1 (so stiff components are not over-penalised)
   and normalised by atol + rtol |x|, RMS over points and states.

Shapes (n_x, n_z, N, M) and iteration caps are static; everything else is traced, so h, the
shape parameters, event parameters and the initial state never cause a recompilation.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from jax.scipy.linalg import lu_factor, lu_solve

from models.dae import DAESystem
from models.kernels import FROZEN_MAX_ITER, frozen_newton_solver, newton_solver
from solvers.raptor.basis import collocation_points

STATUS_RUNNING, STATUS_CONVERGED, STATUS_DIVERGED = 0, 1, 2
ALG_MAX_ITER = 12
"""Cap on algebraic Newton iterations per point per chord iteration (warm starts need 1-3)."""
ALG_STEP_TOL = 1e-12
NEGLIGIBLE_UPDATE = 1e-6
"""A chord update this small (in units of the tolerance) is converged whatever the rate: at an
equilibrium the updates are round-off, whose 'rate' is meaningless."""
"""Algebraic Newton stops when its update is below this relative to max(1, |z|)."""


@dataclass(frozen=True)
class IntervalStages:
    """The numerical stages of one attempt as pure JAX functions, composed by ``make_attempt``
    and timed one by one by ``benchmarks/raptor_profile.py``."""

    solve_z: Any
    factorize: Any
    factorize_algebraic: Any
    initial_guess: Any
    chord_update: Any
    indicator: Any


def make_stages(system: DAESystem) -> IntervalStages:
    f, g = system.f, system.g
    full_newton = jax.vmap(newton_solver(g, ALG_MAX_ITER, ALG_STEP_TOL), in_axes=(0, 0, None))
    frozen_newton = jax.vmap(
        frozen_newton_solver(g, FROZEN_MAX_ITER, ALG_STEP_TOL), in_axes=(0, 0, None, None)
    )
    g_z = jax.jacfwd(g, argnums=1)
    f_points = jax.vmap(f, in_axes=(0, 0, None))

    def solve_z_points(xs, zs, p, g_lu):
        """z at each row of ``xs``: simplified Newton with the attempt's frozen g_z, then, only
        if some point did not converge, full Newton for all (warm from where it stopped)."""
        z1, it1, ok = frozen_newton(xs, zs, p, g_lu)

        def full(_):
            z2, it2 = full_newton(xs, z1, p)
            return z2, it1 + it2

        return jax.lax.cond(jnp.all(ok), lambda _: (z1, it1), full, None)

    def factorize_algebraic(x_k, z_k, p):
        """g_z at the interval start, LU-factorized: shared by every algebraic solve of the
        attempt."""
        return lu_factor(g_z(x_k, z_k, p))

    def factorize(h, lam, a0):
        """Complex chord matrices (I - h lam_s A_0), one per slot eigenvalue lam_s, and the
        real (I - h A_0), LU-factorized."""
        eye = jnp.eye(a0.shape[0])
        chord = jax.vmap(lambda lj: lu_factor(eye.astype(lam.dtype) - h * lj * a0))(lam)
        return chord, lu_factor(eye - h * a0)

    def decoupled_solve(chord, rhs, bank):
        """(I - h lam_j A_0)^-1 rhs_j for every eigenvalue j: each slot's LU solves its owner's
        right-hand side and the conjugate of its partner's (conj(A^-1 conj(r)) for conj(lam))."""
        both = jnp.stack([rhs[bank["slot_owner"]], jnp.conj(rhs[bank["slot_partner"]])], axis=2)
        sol = jax.vmap(lambda lu, piv, r: lu_solve((lu, piv), r))(chord[0], chord[1], both)
        picked = sol[bank["slot_of"], :, bank["is_partner"]]  # (M, n)
        return jnp.where(bank["is_partner"][:, None] > 0, jnp.conj(picked), picked)

    def initial_guess(x_k, z_k, f_k, h, p, filt, g_lu, bank, w_prev, mu, implicit):
        """Stage increments Y_0 from the start and predicted end derivatives (section 2)."""
        x_hat = x_k + h * jnp.where(implicit > 0, lu_solve(filt, f_k), f_k)
        z_hat, it_hat = solve_z_points(x_hat[None], z_k[None], p, g_lu)
        b = h * jnp.stack([f_k, f(x_hat, z_hat[0], p)])  # (2, n): h x'(0), h x'(1)
        w_fit = bank["init_reg"] @ (bank["init_e"].T @ b + mu * w_prev)  # (N, n)
        y0 = jnp.where(mu > 0, bank["psi_colloc"] @ w_fit, bank["init_map"] @ b)
        s = jnp.asarray(collocation_points(y0.shape[0]))[:, None]
        zc0 = z_k + s * (z_hat[0] - z_k)  # z at the collocation points, linear in s
        return y0, zc0, it_hat[0]

    def chord_update(y, zc, x_k, h, p, g_lu, bank, chord):
        """One chord iteration: z at the collocation points, the residual Y - h Q F, and the
        update through the M decoupled factorizations."""
        xc = x_k + y
        zc, it_alg = solve_z_points(xc, zc, p, g_lu)
        resid = y - h * (bank["q"] @ f_points(xc, zc, p))
        rhs = bank["t_inv"] @ resid.astype(bank["t_inv"].dtype)  # (M, n) decoupled
        dw = -decoupled_solve(chord, rhs, bank)
        return jnp.real(bank["t"] @ dw), zc, it_alg

    def indicator(x_k, z_k, y, zc, h, p, filt, g_lu, bank, rtol, atol):
        """Filtered DAE residual at the off-grid checkpoints, RMS in units of the tolerance."""
        x_chk = x_k + bank["check_values"] @ y
        z_guess = z_k + bank["check_values"] @ (zc - z_k)
        z_chk, it_chk = solve_z_points(x_chk, z_guess, p, g_lu)
        defect = bank["check_slopes"] @ y - h * f_points(x_chk, z_chk, p)  # (M, n)
        filtered = lu_solve(filt, defect.T).T
        scale = atol + rtol * jnp.maximum(jnp.abs(x_k), jnp.abs(x_chk))
        err = jnp.sqrt(jnp.mean((filtered / scale) ** 2))
        return jnp.where(jnp.isfinite(err), err, jnp.inf), jnp.sum(it_chk)

    return IntervalStages(
        solve_z_points, factorize, factorize_algebraic, initial_guess, chord_update, indicator
    )


def make_attempt(system: DAESystem, max_newton: int):
    """The attempt function for ``system`` (pure JAX; see module doc for the algorithm)."""
    stages = make_stages(system)
    f_points = jax.vmap(system.f, in_axes=(0, 0, None))

    def attempt(x_k, z_k, f_k, h, p, a0, banks, idx, w_prev, mu, rtol, atol, kappa, implicit):
        bank = {name: arr[idx] for name, arr in banks.items()}
        chord, filt = stages.factorize(h, bank["lam"][bank["slot_owner"]], a0)
        g_lu = stages.factorize_algebraic(x_k, z_k, p)
        y0, zc0, it_hat = stages.initial_guess(
            x_k, z_k, f_k, h, p, filt, g_lu, bank, w_prev, mu, implicit
        )

        def cond(carry):
            return carry["status"] == STATUS_RUNNING

        def body(carry):
            y = carry["y"]
            dy, zc, it_alg = stages.chord_update(y, carry["zc"], x_k, h, p, g_lu, bank, chord)
            y_new = y + dy
            scale = atol + rtol * jnp.maximum(jnp.abs(x_k), jnp.abs(x_k + y))
            dnorm = jnp.sqrt(jnp.mean((dy / scale) ** 2))
            it = carry["it"] + 1
            rate = jnp.where(carry["it"] > 0, dnorm / carry["dnorm"], 0.0)
            finite = jnp.all(jnp.isfinite(y_new)) & jnp.isfinite(dnorm)
            converged = (dnorm <= NEGLIGIBLE_UPDATE) | (
                (carry["it"] > 0) & (rate < 1.0) & (rate / (1.0 - rate) * dnorm < kappa)
            )
            slow = (
                (carry["it"] > 0)
                & ~converged
                & ((rate >= 1.0) | (rate ** (max_newton - it) / (1.0 - rate) * dnorm > kappa))
            )
            status = jnp.where(
                ~finite | slow,
                STATUS_DIVERGED,
                jnp.where(
                    converged,
                    STATUS_CONVERGED,
                    jnp.where(it >= max_newton, STATUS_DIVERGED, STATUS_RUNNING),
                ),
            )
            return {
                "y": y_new,
                "zc": zc,
                "it": it,
                "dnorm": dnorm,
                "rate_max": jnp.maximum(carry["rate_max"], rate),
                "status": status,
                "alg_it": carry["alg_it"] + jnp.sum(it_alg),
            }

        init = {
            "y": y0,
            "zc": zc0,
            "it": 0,
            "dnorm": jnp.inf,
            "rate_max": 0.0,
            "status": STATUS_RUNNING,
            "alg_it": it_hat,
        }
        out = jax.lax.while_loop(cond, body, init)
        y = out["y"]
        xc = x_k + y
        zc, it_alg = stages.solve_z(xc, out["zc"], p, g_lu)
        fc = f_points(xc, zc, p)
        err, it_chk = stages.indicator(x_k, z_k, y, zc, h, p, filt, g_lu, bank, rtol, atol)
        return {
            "y": y,
            "zc": zc,
            "x_end": xc[-1],
            "z_end": zc[-1],
            "f_end": fc[-1],
            "w": bank["d_pinv"] @ (bank["q_inv"] @ y),
            "err": err,
            "status": out["status"],
            "newton_iterations": out["it"],
            "rate_max": out["rate_max"],
            "alg_iterations": out["alg_it"] + jnp.sum(it_alg) + it_chk,
            "g_end": jnp.max(jnp.abs(system.g(xc[-1], zc[-1], p))),
            "g_lu": g_lu,
        }

    return attempt


_CACHE: weakref.WeakKeyDictionary[DAESystem, dict] = weakref.WeakKeyDictionary()


def compiled_attempt(system: DAESystem, example_args: tuple, max_newton: int) -> tuple[Any, float]:
    """AOT-compiled attempt for ``system`` (cached per system and shapes) and the compile seconds
    spent by this call (0 when cached)."""
    shapes = tuple((k, v.shape) for k, v in sorted(example_args[6].items())) + (
        max_newton,
        example_args[8].shape,
    )
    per_system = _CACHE.setdefault(system, {})
    if shapes in per_system:
        return per_system[shapes], 0.0
    start = time.perf_counter()
    compiled = jax.jit(make_attempt(system, max_newton)).lower(*example_args).compile()
    per_system[shapes] = compiled
    return compiled, time.perf_counter() - start


def make_dense(system: DAESystem):
    """Dense output of an accepted interval for a batch of samples: x(s) = x_k + L(s) Y from the
    interval's own representation (rows L(s) from ``Bank.value_rows``), z(s) from g = 0 with the
    attempt's factorized g_z (``g_lu``), and the named outputs; no integration. Returns
    (x, z, outputs, algebraic iterations per sample, max |g| per sample)."""
    stages = make_stages(system)
    outputs = system.outputs or (lambda x, z, p: jnp.zeros(0))
    outputs_points = jax.vmap(outputs, in_axes=(0, 0, None))
    g_points = jax.vmap(system.g, in_axes=(0, 0, None))

    def dense(x_k, rows, y, z_guess, p, g_lu):
        xs = x_k + rows @ y
        zs, it = stages.solve_z(xs, z_guess, p, g_lu)
        residual = jnp.max(jnp.abs(g_points(xs, zs, p)), axis=1)
        return xs, zs, outputs_points(xs, zs, p), it, residual

    return dense


def compiled_dense(system: DAESystem, example_args: tuple) -> tuple[Any, float]:
    """AOT-compiled ``make_dense`` for ``system`` (cached per system and batch shape) and the
    compile seconds spent by this call (0 when cached)."""
    key = ("dense", example_args[1].shape, example_args[3].shape)
    per_system = _CACHE.setdefault(system, {})
    if key in per_system:
        return per_system[key], 0.0
    start = time.perf_counter()
    compiled = jax.jit(make_dense(system)).lower(*example_args).compile()
    per_system[key] = compiled
    return compiled, time.perf_counter() - start
