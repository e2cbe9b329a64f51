"""One RAPTOR interval attempt on the unreduced DAE (x and z together), compiled once per
system structure, with dense or sparse (KLU) linear algebra.

Unknowns: the stage increments Y = X - 1 x_k^T of the differential states and the algebraic
values Z at the M collocation points (``basis``). The collocation equations

    Y - h Q F(x_k + Y, Z) = 0,       G(x_k + Y, Z) = 0        (M (n_x + n_z) equations)

are solved together by a chord (modified Newton) iteration with the Jacobian J = [[f_x, f_z],
[g_x, g_z]] frozen at the interval start. Multiplying the g-rows by -h Q, the chord matrix is
I (x) E - h Q (x) J with E = diag(1 on x, 0 on z), and the eigen-decomposition Q = T diag(lam)
T^-1 decouples it, as Radau5 does for DAEs with its stage matrix, into M systems

    (E - h lam_j J) u_j = (T^-1 [-R_Y ; h Q G])_j,          [dY ; dZ] = Re(T U)

each with J's own sparsity pattern (complex for conjugate pairs; one factorization per pair).
Nothing is reduced: the reduced Jacobian f_x - f_z g_z^-1 g_x fills in (15 % dense on IEEE 118
against J's 0.6 %), and no separate algebraic Newton solve runs per collocation point.

An attempt

1. factorizes E - h lam_s J for every slot s, the real E - h J (predictor and filter) and g_z
   (``solvers.shifted_lu``: dense LAPACK or KLU refactorizations), or keeps the previous
   attempt's factorizations when the runner says J, h and the bank are unchanged;
2. initializes Y from the start and predicted end derivatives, x_hat = x_k + h (I - h A)^-1 f_k
   (linearly implicit Euler through E - h J: the reduced (I - h A)^-1 is its x-block), and Z
   linear between z_k and the linearized z_hat, then moved onto g = 0 by one simplified-Newton
   pass (``INITIAL_Z_PASSES``), biased to the previous interval's coefficients;
3. iterates the chord update, each followed by ``Z_PASSES`` simplified-Newton passes on g at all
   points with the frozen g_z, with Hairer-Wanner control on the contraction rate theta of the
   scaled update of x (the tolerances are in state units);
4. makes the end consistent (simplified Newton on g) and evaluates the acceptance indicator:
   the DAE residual h x_w'(s) - h f(x_w(s), z(s)) at the off-grid checkpoints, z(s) consistent
   there, filtered by (I - h A)^-1 (the x-block of (E - h J)^-1) and normalised by
   atol + rtol |x|, RMS over points and states.

Shapes (n_x, n_z, N, M, slots) and iteration caps are static; h, J's entries, the bank index,
parameters and states are traced, so nothing recompiles between intervals or scenarios.
"""

from __future__ import annotations

import weakref
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from models.dae import DAESystem
from models.executables import load_or_compile
from solvers.raptor.basis import collocation_points
from solvers.reduced import ALGEBRAIC_TOL

STATUS_RUNNING, STATUS_CONVERGED, STATUS_DIVERGED = 0, 1, 2
Z_PASSES = 1
"""Simplified-Newton passes on g (frozen g_z, all points at once) after each chord update. The
chord matrix is linear in z but g is not (machine angles rotate the network interface); moving
Z back towards g = 0 keeps F on the constraint manifold: on wscc9 (bus-7 fault, rtol 1e-6)
0 passes took 33 accepted + 12 rejected intervals, 1 pass 26 + 8, 2-3 passes 26 + 8."""
INITIAL_Z_PASSES = 1
"""Simplified-Newton passes on g that put the initial Z (linear in s between z_k and the
linearized z at the predicted end) on the constraint before the first chord iteration, so the
first update does not have to correct Z's interpolation error: with one pass, wscc9's bus-7
fault (rtol 1e-6) took 22 + 5 intervals instead of 27 + 8, emt_sm's switch-off 24 + 6 instead
of 35 + 18, ieee39's bus-20 fault 29 + 4 instead of 31 + 6; two passes changed nothing more."""
ALG_MAX_ITER = 12
"""Cap on simplified-Newton iterations that make z consistent (warm starts need 1-3)."""
NEGLIGIBLE_UPDATE = 1e-6
"""A chord update this small (in units of the tolerance) is converged whatever the rate: at an
equilibrium the updates are round-off, whose 'rate' is meaningless."""


def make_stages(system: DAESystem, linalg):
    """The stages of an attempt as traceable functions over ``linalg`` (``shifted_lu``)."""
    f, g = system.f, system.g
    fg_points = jax.vmap(lambda x, z, p: (f(x, z, p), g(x, z, p)), in_axes=(0, 0, None))
    n_x = system.n_x

    def consistent(xs, zs, p, gz):
        """Simplified Newton on g at every row with the frozen g_z; returns (z, f at z,
        max |g|, iterations)."""

        def cond(c):
            return (c["it"] < ALG_MAX_ITER) & (c["res"] > 0.1 * ALGEBRAIC_TOL) & c["improving"]

        def body(c):
            zs_new = c["z"] - linalg.solve_algebraic(gz, c["g"].T).T
            f_new, g_new = fg_points(xs, zs_new, p)
            res = jnp.max(jnp.abs(g_new))
            res = jnp.where(jnp.isfinite(res), res, jnp.inf)
            return {
                "z": zs_new,
                "f": f_new,
                "g": g_new,
                "res": res,
                "it": c["it"] + 1,
                "improving": res < c["res"],
            }

        f0, g0 = fg_points(xs, zs, p)
        res0 = jnp.max(jnp.abs(g0))
        init = {"z": zs, "f": f0, "g": g0, "res": res0, "it": 0, "improving": True}
        out = jax.lax.while_loop(cond, body, init)
        return out["z"], out["f"], out["res"], out["it"] + 1

    def factorize(jvals, h, slot_lam, handles):
        slots = linalg.factor_shifted(jvals, h * slot_lam, handles, "slots")
        filt = linalg.factor_shifted(jvals, jnp.reshape(h, (1,)), handles, "filter")
        return slots, filt, linalg.factor_algebraic(jvals, handles)

    def factorize_or_keep(jvals, h, slot_lam, handles, kept, refactor):
        """``factorize`` when ``refactor``, else the previous attempt's factorizations (same
        J, h and bank: the runner decides, as Radau5 keeps its LU while h and J stay)."""
        return jax.lax.cond(
            refactor > 0,
            lambda: factorize(jvals, h, slot_lam, handles),
            lambda: linalg.kept_factors(handles, kept),
        )

    def filter_solve(filt, rhs):
        """(E - h J)^-1 rhs for rhs (n, k) real."""
        return linalg.solve_shifted(filt, rhs[None])[0]

    def decoupled_solve(slots, rhs_hat, bank):
        """Re(T U), U_j = (E - h lam_j J)^-1 rhs_hat_j: each slot's factorization solves its
        owner's right-hand side and the conjugate of its partner's."""
        both = jnp.stack(
            [rhs_hat[bank["slot_owner"]], jnp.conj(rhs_hat[bank["slot_partner"]])], axis=2
        )
        sol = linalg.solve_shifted(slots, both)  # (S, n, 2)
        picked = sol[bank["slot_of"], :, bank["is_partner"]]  # (M, n)
        u = jnp.where(bank["is_partner"][:, None] > 0, jnp.conj(picked), picked)
        return jnp.real(bank["t"] @ u)

    def initial_guess(x_k, z_k, f_k, h, p, filt, gz, jvals, bank, w_prev, mu, implicit):
        rhs = jnp.concatenate([h * f_k, jnp.zeros(system.n_z)])
        dw = filter_solve(filt, rhs[:, None])[:, 0]
        dx_fe = h * f_k
        # forward Euler's z follows the linearized constraint: g_x dx + g_z dz = 0
        g_x_dx = _g_x_product(jvals, dx_fe)
        dz_fe = -linalg.solve_algebraic(gz, g_x_dx[:, None])[:, 0]
        dx = jnp.where(implicit > 0, dw[:n_x], dx_fe)
        dz = jnp.where(implicit > 0, dw[n_x:], dz_fe)
        x_hat, z_hat = x_k + dx, z_k + dz
        f_hat = f(x_hat, z_hat, p)
        rhs_c = jnp.concatenate([h * (f_hat - f_k), jnp.zeros(system.n_z)])
        c = filter_solve(filt, rhs_c[:, None])[:n_x, 0]
        slope0, end1 = dx - c, dx - 0.5 * c
        b = jnp.stack([slope0, end1])  # (2, n_x): h x'(0), x(1) - x_k, both filtered
        w_fit = bank["init_reg"] @ (bank["init_e"].T @ b + mu * w_prev)
        s = jnp.asarray(collocation_points(bank["psi_colloc"].shape[0]))[:, None]
        y0 = jnp.where(mu > 0, bank["psi_colloc"] @ w_fit, s * slope0 + s**2 * (end1 - slope0))
        zc0 = z_k + s * (z_hat - z_k)
        for _ in range(INITIAL_Z_PASSES):
            _, g0 = fg_points(x_k + y0, zc0, p)
            zc0 = zc0 - linalg.solve_algebraic(gz, g0.T).T
        return y0, zc0

    rows_gx, cols_gx, entries_gx = _g_x_block(linalg.pattern)

    def _g_x_product(jvals, v):
        return jnp.zeros(system.n_z).at[rows_gx].add(jvals[entries_gx] * v[cols_gx])

    def chord_update(y, zc, x_k, h, p, slots, gz, bank):
        xc = x_k + y
        fc, gc = fg_points(xc, zc, p)
        rhs = jnp.concatenate([-(y - h * (bank["q"] @ fc)), h * (bank["q"] @ gc)], axis=1)
        du = decoupled_solve(slots, bank["t_inv"] @ rhs.astype(bank["t_inv"].dtype), bank)
        y_new, zc_new = y + du[:, :n_x], zc + du[:, n_x:]
        for _ in range(Z_PASSES):
            _, g_new = fg_points(x_k + y_new, zc_new, p)
            zc_new = zc_new - linalg.solve_algebraic(gz, g_new.T).T
        return du[:, :n_x], y_new, zc_new

    def indicator(x_k, z_k, y, zc, h, p, filt, gz, bank, rtol, atol):
        x_chk = x_k + bank["check_values"] @ y
        z_guess = z_k + bank["check_values"] @ (zc - z_k)
        _, f_chk, _, it = consistent(x_chk, z_guess, p, gz)
        defect = bank["check_slopes"] @ y - h * f_chk  # (M, n_x)
        rhs = jnp.concatenate([defect, jnp.zeros((defect.shape[0], system.n_z))], axis=1)
        filtered = filter_solve(filt, rhs.T).T[:, :n_x]
        scale = atol + rtol * jnp.maximum(jnp.abs(x_k), jnp.abs(x_chk))
        err = jnp.sqrt(jnp.mean((filtered / scale) ** 2))
        return jnp.where(jnp.isfinite(err), err, jnp.inf), it

    return {
        "consistent": consistent,
        "factorize": factorize,
        "factorize_or_keep": factorize_or_keep,
        "initial_guess": initial_guess,
        "chord_update": chord_update,
        "indicator": indicator,
    }


def _g_x_block(pattern):
    """(rows, cols, entry positions) of J's g_x block, rows local to the block."""
    n_x = pattern.n_x
    mask = (pattern.rows >= n_x) & (pattern.cols < n_x)
    return (
        jnp.asarray(pattern.rows[mask] - n_x),
        jnp.asarray(pattern.cols[mask]),
        jnp.asarray(np.flatnonzero(mask)),
    )


def make_attempt(system: DAESystem, linalg, max_newton: int):
    """The attempt function (pure JAX; see module doc)."""
    st = make_stages(system, linalg)

    def attempt(
        x_k,
        z_k,
        f_k,
        h,
        p,
        jvals,
        handles,
        banks,
        idx,
        w_prev,
        mu,
        rtol,
        atol,
        kappa,
        implicit,
        kept,
        refactor,
    ):
        bank = {name: arr[idx] for name, arr in banks.items()}
        slots, filt, gz = st["factorize_or_keep"](
            jvals, h, bank["lam"][bank["slot_owner"]], handles, kept, refactor
        )
        y0, zc0 = st["initial_guess"](
            x_k, z_k, f_k, h, p, filt, gz, jvals, bank, w_prev, mu, implicit
        )

        def cond(c):
            return c["status"] == STATUS_RUNNING

        def body(c):
            dy, y_new, zc_new = st["chord_update"](c["y"], c["zc"], x_k, h, p, slots, gz, bank)
            scale = atol + rtol * jnp.maximum(jnp.abs(x_k), jnp.abs(x_k + c["y"]))
            dnorm = jnp.sqrt(jnp.mean((dy / scale) ** 2))
            it = c["it"] + 1
            rate = jnp.where(c["it"] > 0, dnorm / c["dnorm"], 0.0)
            finite = jnp.all(jnp.isfinite(y_new)) & jnp.isfinite(dnorm)
            converged = (dnorm <= NEGLIGIBLE_UPDATE) | (
                (c["it"] > 0) & (rate < 1.0) & (rate / (1.0 - rate) * dnorm < kappa)
            )
            slow = (
                (c["it"] > 0)
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
                "zc": zc_new,
                "it": it,
                "dnorm": dnorm,
                "rate_max": jnp.maximum(c["rate_max"], rate),
                "status": status,
            }

        init = {
            "y": y0,
            "zc": zc0,
            "it": 0,
            "dnorm": jnp.inf,
            "rate_max": 0.0,
            "status": STATUS_RUNNING,
        }
        out = jax.lax.while_loop(cond, body, init)
        y, zc = out["y"], out["zc"]
        x_end = x_k + y[-1]
        z_end, f_end, g_end, it_end = st["consistent"](x_end[None], zc[-1:], p, gz)
        err, it_chk = st["indicator"](x_k, z_k, y, zc, h, p, filt, gz, bank, rtol, atol)
        return {
            "y": y,
            "zc": zc,
            "x_end": x_end,
            "z_end": z_end[0],
            "f_end": f_end[0],
            "w": bank["d_pinv"] @ (bank["q_inv"] @ y),
            "err": err,
            "status": out["status"],
            "newton_iterations": out["it"],
            "rate_max": out["rate_max"],
            "alg_iterations": it_end + it_chk + out["it"] * Z_PASSES,
            "g_end": g_end,
            "gz": gz,
            "factors": (slots, filt, gz),
        }

    return attempt


def make_dense(system: DAESystem, linalg):
    """Dense output of an accepted interval for a batch of samples: x(s) = x_k + L(s) Y (rows
    L(s) from ``Bank.value_rows``), z(s) consistent by simplified Newton with the interval's
    g_z factorization, and the named outputs. Returns (x, z, outputs, max |g|)."""
    st = make_stages(system, linalg)
    outputs = system.outputs or (lambda x, z, p: jnp.zeros(0))
    outputs_points = jax.vmap(outputs, in_axes=(0, 0, None))
    g_points = jax.vmap(system.g, in_axes=(0, 0, None))

    def dense(x_k, rows, y, z_guess, p, gz):
        xs = x_k + rows @ y
        zs, _, _, _ = st["consistent"](xs, z_guess, p, gz)
        residual = jnp.max(jnp.abs(g_points(xs, zs, p)), axis=1)
        return xs, zs, outputs_points(xs, zs, p), residual

    return dense


_CACHE: weakref.WeakKeyDictionary[DAESystem, dict] = weakref.WeakKeyDictionary()


def compiled(system: DAESystem, key: tuple, build, example_args: tuple) -> tuple[Any, float, float]:
    """The executable of ``build()`` for ``system`` under ``key`` (role, shapes, backend, caps):
    from this process's cache, else from the executable store, else compiled (and stored).
    Returns (executable, compile seconds, load seconds) spent by this call."""
    per_system = _CACHE.setdefault(system, {})
    if key in per_system:
        return per_system[key], 0.0, 0.0
    executable, compile_s, load_s = load_or_compile(system, key, build, example_args)
    per_system[key] = executable
    return executable, compile_s, load_s
