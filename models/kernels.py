"""Compiled kernels of a system: f, g, the algebraic Newton solve and the exact reduced Jacobian.

Compiled ahead of time once per system (shapes never change between scenarios), so the compile
time is measured apart from solve time and every later call reuses the same executable.

Jacobians (``jacobian_mode``): small systems take g_z and the reduced Jacobian
f_x - f_z g_z^-1 g_x by dense forward mode over all unknowns (one tangent per unknown; fastest
there). Above ``DENSE_MAX_UNKNOWNS`` they come from the coloured sparse machinery of
``models.sparsity`` (one pattern and colouring per system, one JVP per colour): g_z from the
colouring of its own block, and the reduced Jacobian either by colouring *its* structural
pattern (``sparse-reduced``: dq networks, where it stays sparse: per colour one JVP of g for
g_x s, a solve with g_z, one JVP of f with the tangent (s, -g_z^-1 g_x s)) or, where eliminating
z fills it in (RMS networks), from the coloured unreduced J and a dense elimination
(``sparse-blocks``).
"""

from __future__ import annotations

import hashlib
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import models.jaxconfig  # noqa: F401
from models.dae import DAESystem, Params

NEWTON_MAX_ITER = 25
"""Cap on algebraic Newton iterations per solve (2-5 suffice from a warm start)."""
NEWTON_STEP_TOL = 1e-11
"""Stop when the Newton update is below this, relative to max(1, |z|) (infinity norm)."""
SAMPLE_BATCH = 32
"""Samples per call of the batched recovery kernel (padded), so dense output costs one device
call per 32 samples instead of several per sample."""
DENSE_MAX_UNKNOWNS = 250
"""Systems with at most this many unknowns (n_x + n_z) take their Jacobians by dense forward
mode; larger ones through the coloured sparse pattern (module docstring): the crossing of the
two costs (measured: docs/measurements.md, ``DENSE_MAX_UNKNOWNS``)."""
JACOBIAN_MODE = "auto"
"""``auto`` (by size and pattern, above), or one of ``dense``, ``sparse-blocks``,
``sparse-reduced`` for every system compiled afterwards in this process (benchmarks, tests)."""
JACOBIAN_MODES = ("dense", "sparse-blocks", "sparse-reduced")


@dataclass(frozen=True)
class Kernels:
    """AOT-compiled functions of one system; all take and return float64 arrays.

    ``newton(x, z_guess, p) -> (z, iterations, |g|_inf)``: full Newton on 0 = g(x, z, p) with the
    autodiff g_z. ``ode_jacobian(x, z, p)``: d x'/d x of the reduced ODE by the implicit-function
    theorem, f_x - f_z g_z^{-1} g_x (one factorization of g_z), always as a dense array.

    Fused kernels keep host-device round trips to one per call (they dominate small systems):
    ``reduced_rhs(x, z_guess, p)`` -> packed [f, z, iterations, |g|]; ``reduced_jacobian(x,
    z_guess, p)`` -> (J, packed [z, iterations, |g|]); ``recover(X, Z_guess, p)`` for a batch of
    SAMPLE_BATCH states -> packed rows [z, outputs, iterations, |g|].

    ``jacobian_mode`` says how the Jacobians are taken (module docstring); in ``sparse-reduced``
    mode ``reduced_jacobian`` returns the reduced J's entries in the CSC order of
    ``reduced_pattern`` (``ReducedPattern.reduced_csc`` / ``reduced_dense`` build the matrix).
    """

    f: Any
    g: Any
    newton: Any
    ode_jacobian: Any
    g_z: Any
    outputs: Any | None
    reduced_rhs: Any
    reduced_jacobian: Any
    recover: Any
    compile_seconds: float
    jacobian_mode: str = "dense"
    reduced_pattern: Any = None


DEVICE_PARAMS_CACHE = 64
"""Distinct parameter sets kept on the device (``as_device_params``): the segments of one
campaign's scenarios share a handful (pre-event, fault-on, post-event)."""
_DEVICE_PARAMS: OrderedDict[bytes, dict[str, jax.Array]] = OrderedDict()
_DEVICE_PARAMS_LOCK = threading.Lock()


def as_device_params(params: Params) -> dict[str, jax.Array]:
    """The parameters as float64 device arrays, shared between calls with equal values.

    Moving a system's ~30-100 small arrays to the device one by one cost 4-27 ms per segment
    (measured on wscc9/ieee39 in the worker profile, more than half of a 0.05 s Radau run);
    device arrays are immutable, so equal parameter sets (keyed by names, shapes and bytes)
    share one copy."""
    host = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    digest = hashlib.blake2b(digest_size=16)
    for name, value in host.items():
        digest.update(name.encode())
        digest.update(repr(value.shape).encode())
        digest.update(value.tobytes())
    key = digest.digest()
    with _DEVICE_PARAMS_LOCK:
        hit = _DEVICE_PARAMS.get(key)
        if hit is not None:
            _DEVICE_PARAMS.move_to_end(key)
            return hit
    device = jax.device_put(host)
    with _DEVICE_PARAMS_LOCK:
        _DEVICE_PARAMS[key] = device
        while len(_DEVICE_PARAMS) > DEVICE_PARAMS_CACHE:
            _DEVICE_PARAMS.popitem(last=False)
    return device


def newton_solver(g, max_iter: int = NEWTON_MAX_ITER, step_tol: float = NEWTON_STEP_TOL, g_z=None):
    """``newton(x, z_guess, p) -> (z, iterations)``: full Newton on 0 = g(x, z, p) with the
    autodiff g_z (``g_z(x, z, p)``, default dense forward mode), stopping when the update is
    below ``step_tol`` relative to max(1, |z|), after ``max_iter`` iterations, or on NaN. The one
    algebraic Newton of the project (kernels, RAPTOR's collocation points and the diffrax vector
    field all build on it)."""
    g_z = jax.jacfwd(g, argnums=1) if g_z is None else g_z

    def newton(x, z, p):
        def cond(carry):
            _, it, step = carry
            return (it < max_iter) & (step > step_tol)

        def body(carry):
            z, it, _ = carry
            dz = jnp.linalg.solve(g_z(x, z, p), g(x, z, p))
            z_new = z - dz
            step = jnp.max(jnp.abs(dz)) / jnp.maximum(1.0, jnp.max(jnp.abs(z_new)))
            step = jnp.where(jnp.isfinite(step), step, -1.0)  # stop on NaN
            return z_new, it + 1, step

        z, it, _ = jax.lax.while_loop(cond, body, (z, 0, jnp.inf))
        return z, it

    return newton


def jacobian_mode(system: DAESystem) -> str:
    """How ``system``'s kernels take their Jacobians (``JACOBIAN_MODE``, module docstring)."""
    if JACOBIAN_MODE != "auto":
        return JACOBIAN_MODE
    if system.n_x + system.n_z <= DENSE_MAX_UNKNOWNS:
        return "dense"
    from models.sparsity import reduced_pattern

    return "sparse-reduced" if reduced_pattern(system).reduced_sparse else "sparse-blocks"


def _pattern_for(system: DAESystem, mode: str):
    if mode == "dense":
        return None
    from models.sparsity import reduced_pattern

    pattern = reduced_pattern(system)
    if mode == "sparse-reduced" and not pattern.reduced_sparse:
        raise ValueError("the reduced Jacobian of this system is not sparse: use sparse-blocks")
    return pattern


def _g_z_fn(system: DAESystem, pattern):
    """g_z(x, z, p) as a dense n_z x n_z array: forward mode over z, or coloured."""
    if pattern is None:
        return jax.jacfwd(system.g, argnums=1)
    from models.sparsity import colored_jacobian

    n_z = system.n_z
    values = colored_jacobian(
        lambda z, x, p: system.g(x, z, p),
        n_z,
        pattern.gz_rows,
        pattern.gz_cols,
        pattern.gz_colors,
        pattern.gz_n_colors,
    )
    rows, cols = jnp.asarray(pattern.gz_rows), jnp.asarray(pattern.gz_cols)

    def g_z(x, z, p):
        return jnp.zeros((n_z, n_z)).at[rows, cols].set(values(z, x, p))

    return g_z


def g_z_function(system: DAESystem):
    """``g_z(x, z, p)`` as a dense n_z x n_z array, taken the way ``jacobian_mode`` says for
    this system: dense forward mode on small systems, a few coloured JVPs on large ones."""
    return _g_z_fn(system, _pattern_for(system, jacobian_mode(system)))


def _newton_fn(system: DAESystem, pattern=None):
    solve = newton_solver(system.g, g_z=_g_z_fn(system, pattern))

    def newton(x, z, p):
        z, it = solve(x, z, p)
        return z, it, jnp.max(jnp.abs(system.g(x, z, p)))

    return newton


def _eliminate(jac, n: int):
    f_x, f_z, g_x, g_z = jac[:n, :n], jac[:n, n:], jac[n:, :n], jac[n:, n:]
    return f_x + f_z @ (-jnp.linalg.solve(g_z, g_x))


def _reduced_values_fn(system: DAESystem, pattern):
    """``values(x, z, p) -> (red_nnz,)``: the reduced J's entries (CSC order of the reduced
    pattern), one colour at a time: J s = f_x s + f_z dz with g_z dz = -g_x s."""
    f, g = system.f, system.g
    n_x = system.n_x
    g_z = _g_z_fn(system, pattern)
    seeds = np.zeros((pattern.red_n_colors, n_x))
    seeds[pattern.red_colors, np.arange(n_x)] = 1.0
    seeds_j = jnp.asarray(seeds)
    # the compression of ``models.sparsity.colored_jacobian``, the elimination between two JVPs
    gather_color = jnp.asarray(pattern.red_colors[pattern.red_cols])
    gather_row = jnp.asarray(pattern.red_indices)

    def values(x, z, p):
        lu = jax.scipy.linalg.lu_factor(g_z(x, z, p))
        g_x_s = jax.vmap(lambda s: jax.jvp(lambda v: g(v, z, p), (x,), (s,))[1])(seeds_j)
        dz = -jax.scipy.linalg.lu_solve(lu, g_x_s.T).T
        compressed = jax.vmap(lambda s, d: jax.jvp(lambda a, b: f(a, b, p), (x, z), (s, d))[1])(
            seeds_j, dz
        )
        return compressed[gather_color, gather_row]

    return values


def _ode_jacobian_fn(system: DAESystem, mode: str = "dense", pattern=None):
    """``ode_jacobian(x, z, p)`` of ``mode``: the dense reduced J, or (``sparse-reduced``) its
    entries in the reduced pattern's CSC order."""
    f, g = system.f, system.g
    n = system.n_x

    if mode == "dense":

        def ode_jacobian(x, z, p):
            # one forward-mode pass over w = (x, z) through (f, g): the same tangents as four
            # separate jacfwd calls, traced once (a quarter of the graph to compile)
            def fg(w):
                return jnp.concatenate([f(w[:n], w[n:], p), g(w[:n], w[n:], p)])

            return _eliminate(jax.jacfwd(fg)(jnp.concatenate([x, z])), n)

        return ode_jacobian
    if mode == "sparse-blocks":
        from models.sparsity import _values_fn

        values = _values_fn(system, pattern.rows, pattern.cols, pattern.colors, pattern.n_colors)
        rows, cols = jnp.asarray(pattern.rows), jnp.asarray(pattern.cols)
        size = system.n_x + system.n_z

        def ode_jacobian(x, z, p):
            jac = jnp.zeros((size, size)).at[rows, cols].set(values(x, z, p))
            return _eliminate(jac, n)

        return ode_jacobian
    return _reduced_values_fn(system, pattern)


def reduced_jacobian_fn(system: DAESystem, mode: str):
    """Uncompiled ``(x, z, p) -> dense reduced J`` of ``mode`` (tests and benchmarks compare
    the modes with it)."""
    pattern = _pattern_for(system, mode)
    jac = _ode_jacobian_fn(system, mode, pattern)
    if mode != "sparse-reduced":
        return jac
    rows, cols = jnp.asarray(pattern.red_indices), jnp.asarray(pattern.red_cols)

    def dense(x, z, p):
        return jnp.zeros((system.n_x, system.n_x)).at[rows, cols].set(jac(x, z, p))

    return dense


def _fused_fns(system: DAESystem, mode: str = "dense", pattern=None):
    newton = _newton_fn(system, pattern)
    jacobian = _ode_jacobian_fn(system, mode, pattern)
    outputs = system.outputs or (lambda x, z, p: jnp.zeros(0))

    def reduced_rhs(x, z_guess, p):
        z, it, res = newton(x, z_guess, p)
        return jnp.concatenate([system.f(x, z, p), z, jnp.stack([it * 1.0, res])])

    def reduced_jacobian(x, z_guess, p):
        z, it, res = newton(x, z_guess, p)
        return jacobian(x, z, p), jnp.concatenate([z, jnp.stack([it * 1.0, res])])

    def recover_one(x, z_guess, p):
        z, it, res = newton(x, z_guess, p)
        return jnp.concatenate([z, outputs(x, z, p), jnp.stack([it * 1.0, res])])

    recover = jax.vmap(recover_one, in_axes=(0, 0, None))
    return reduced_rhs, reduced_jacobian, recover


_CACHE: weakref.WeakKeyDictionary[DAESystem, Kernels] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def kernels_for(system: DAESystem) -> tuple[Kernels, float]:
    """Compiled kernels of ``system`` and the compile seconds this call spent (0 if cached)."""
    with _LOCK:
        cached = _CACHE.get(system)
        if cached is not None:
            return cached, 0.0
        start = time.perf_counter()
        x = jnp.asarray(system.x0, dtype=jnp.float64)
        z = jnp.asarray(system.z0, dtype=jnp.float64)
        p = as_device_params(system.params)

        mode = jacobian_mode(system)

        def compile_(role: str, fn, args=(x, z, p)):
            """Loaded from the executable store (no tracing: tracing and lowering the nine
            kernels took 1.9 s of a worker's 2.3 s first wscc9 solve), else compiled there."""
            from models.executables import load_or_compile

            key = ("reduced kernels", role, mode, jax.default_backend())
            return load_or_compile(system, key, lambda: fn, args)[0]

        outputs = compile_("outputs", system.outputs) if system.outputs is not None else None
        pattern = _pattern_for(system, mode)
        reduced_rhs, reduced_jacobian, recover = _fused_fns(system, mode, pattern)
        ode_jacobian = (
            reduced_jacobian_fn(system, mode)
            if mode == "sparse-reduced"
            else _ode_jacobian_fn(system, mode, pattern)
        )
        xb = jnp.broadcast_to(x, (SAMPLE_BATCH, x.size))
        zb = jnp.broadcast_to(z, (SAMPLE_BATCH, z.size))
        kernels = Kernels(
            f=compile_("f", system.f),
            g=compile_("g", system.g),
            newton=compile_("newton", _newton_fn(system, pattern)),
            ode_jacobian=compile_("ode_jacobian", ode_jacobian),
            g_z=compile_("g_z", _g_z_fn(system, pattern)),
            outputs=outputs,
            reduced_rhs=compile_("reduced_rhs", reduced_rhs),
            reduced_jacobian=compile_("reduced_jacobian", reduced_jacobian),
            recover=compile_(f"recover[{SAMPLE_BATCH}]", recover, (xb, zb, p)),
            compile_seconds=time.perf_counter() - start,
            jacobian_mode=mode,
            reduced_pattern=pattern if mode == "sparse-reduced" else None,
        )
        _CACHE[system] = kernels
        return kernels, kernels.compile_seconds


def consistent_z(
    system: DAESystem,
    x: np.ndarray,
    params: Params | None = None,
    z_guess: np.ndarray | None = None,
) -> tuple[np.ndarray, int, float]:
    """Solve 0 = g(x, z, p) for z by Newton from ``z_guess`` (default the system's z0).

    Returns (z, iterations, max |g|). The caller decides whether the residual is acceptable.
    """
    kernels, _ = kernels_for(system)
    p = as_device_params(system.params if params is None else params)
    z0 = system.z0 if z_guess is None else z_guess
    # NumPy arguments and one transfer back: ~0.15 ms less per call than device arrays in and
    # three reads out (wscc9, where the Newton itself takes ~0.17 ms)
    z, it, res = jax.device_get(
        kernels.newton(np.asarray(x, np.float64), np.asarray(z0, np.float64), p)
    )
    return np.asarray(z), int(it), float(res)
