"""Shared steps of the case builders: unique element names and the equilibrium check."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import jax
import jax.numpy as jnp
import numpy as np

import models.jaxconfig  # noqa: F401
from models.kernels import newton_solver

INIT_TOL = 1e-8
"""Largest accepted |f| and |g| at the initial point."""
PF_TOL = 1e-6
"""Largest accepted |g| at the power-flow point before polishing (the model reproduces the PF)."""


def unique_names(names: Iterable[str]) -> tuple[str, ...]:
    """Number repeated names: the first keeps its name, later ones get ``_2``, ``_3``, ..."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    return tuple(out)


def network_alg_names(bus_names: Iterable[str], gen_names: Iterable[str]) -> tuple[str, ...]:
    """Algebraic variables of a machine network, in the order the builders stack z: bus
    voltages (real parts, then imaginary parts, pu) and machine currents (d, then q axis, pu)."""
    buses, gens = tuple(bus_names), tuple(gen_names)
    return (
        tuple(f"Vr[{b}]" for b in buses)
        + tuple(f"Vi[{b}]" for b in buses)
        + tuple(f"Id[{g}]" for g in gens)
        + tuple(f"Iq[{g}]" for g in gens)
    )


def network_output_names(bus_names: Iterable[str], gen_names: Iterable[str]) -> tuple[str, ...]:
    """Outputs every machine network shares: bus V (pu) and theta (rad), machine omega (pu),
    delta (rad) and Pe (pu); case builders append their own (inverters, motors, kcl_max)."""
    buses, gens = tuple(bus_names), tuple(gen_names)
    return (
        tuple(f"V[{b}]" for b in buses)
        + tuple(f"theta[{b}]" for b in buses)
        + tuple(f"omega[{g}]" for g in gens)
        + tuple(f"delta[{g}]" for g in gens)
        + tuple(f"Pe[{g}]" for g in gens)
    )


DENSE_NEWTON_MAX = 1500
"""Largest number of algebraic unknowns polished with the dense autodiff g_z. Above it the
sparse path: on case2869pegase (n_z 6,088) the dense Newton took 38 s of the 64 s build and
the dense g_z of case9241pegase (22,000 columns) does not fit in memory."""


def newton_z(g, x, z, p, max_iter: int = 20, tol: float = 1e-14) -> np.ndarray:
    """Newton on 0 = g(x, z, p) for z: the project's one algebraic Newton
    (``models.kernels.newton_solver``) with the dense autodiff g_z up to ``DENSE_NEWTON_MAX``
    unknowns, else with g_z coloured and factored sparse (``sparse_newton_z``)."""
    if np.size(z) > DENSE_NEWTON_MAX:
        return sparse_newton_z(g, x, z, p, max_iter=max_iter, tol=tol)
    z_new, _ = jax.jit(newton_solver(g, max_iter, tol))(x, jnp.asarray(z), p)
    return np.asarray(z_new)


def sparse_newton_z(g, x, z, p, max_iter: int = 20, tol: float = 1e-14) -> np.ndarray:
    """``newton_z`` with g_z's pattern found on the jaxpr (asdex, plus the diagonal), one JVP
    per column colour (``models.sparsity.colored_jacobian``) and SuperLU; the same stopping
    rule (update below ``tol`` relative to max(1, |z|), or ``max_iter`` iterations)."""
    import asdex
    import scipy.sparse as sp
    from scipy.sparse.linalg import splu

    from models.sparsity import colored_jacobian, column_colors, csc_pattern

    x, z = jnp.asarray(x, jnp.float64), jnp.asarray(z, jnp.float64)
    n = int(z.size)
    found = asdex.jacobian_sparsity(lambda v: g(x, v, p), z)
    rows = np.concatenate([np.asarray(found.rows, np.int64), np.arange(n)])
    cols = np.concatenate([np.asarray(found.cols, np.int64), np.arange(n)])
    indptr, indices, col_of_entry = csc_pattern(rows, cols, n)
    colors = column_colors(indices, col_of_entry, n)
    residual = jax.jit(lambda v, x, p: g(x, v, p))
    values = jax.jit(
        colored_jacobian(residual, n, indices, col_of_entry, colors, int(colors.max()) + 1)
    )
    z_host = np.asarray(z)
    for _ in range(max_iter):
        g_z = sp.csc_matrix((np.asarray(values(z, x, p)), indices, indptr), shape=(n, n))
        dz = splu(g_z).solve(np.asarray(residual(z, x, p)))
        z_host = z_host - dz
        z = jnp.asarray(z_host)
        step = np.max(np.abs(dz)) / max(1.0, float(np.max(np.abs(z_host))))
        if not np.isfinite(step) or step <= tol:
            break
    return z_host


def checked_equilibrium(
    f, g, x0, z_pf, params: dict, setpoints: Callable[[np.ndarray], dict] | None = None
) -> tuple[np.ndarray, float, float]:
    """Polish z at x0 from the power-flow point and check |f|, |g| <= INIT_TOL.

    ``setpoints(z0)``, if given, returns parameters recomputed from the polished z0 (e.g. AVR
    references from the polished terminal voltages: a regulator with KA / TA = 1e4 1/s turns the
    power flow's ~1e-11 pu voltage tolerance into |f| ~ 1e-7); ``params`` is updated in place.
    Returns (z0, max |f|, max |g|); raises ``RuntimeError`` when the model does not reproduce the
    power flow or the point is not an equilibrium.
    """
    p_dev = {k: jnp.asarray(v) for k, v in params.items()}
    g_pf = float(np.max(np.abs(np.asarray(jax.jit(g)(x0, z_pf, p_dev)))))
    if not g_pf <= PF_TOL:
        raise RuntimeError(
            f"the network model does not reproduce the power flow (|g| = {g_pf:.2e})"
        )
    z0 = newton_z(g, x0, z_pf, p_dev)
    if setpoints is not None:
        params.update(setpoints(z0))
        p_dev = {k: jnp.asarray(v) for k, v in params.items()}
    f_res = float(np.max(np.abs(np.asarray(jax.jit(f)(x0, z0, p_dev)))))
    g_res = float(np.max(np.abs(np.asarray(jax.jit(g)(x0, z0, p_dev)))))
    if not (f_res <= INIT_TOL and g_res <= INIT_TOL):
        raise RuntimeError(
            f"initial point is not an equilibrium: |f| = {f_res:.2e}, |g| = {g_res:.2e}"
        )
    return z0, f_res, g_res
