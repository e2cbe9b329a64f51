"""Compiled kernels of a system: f, g, the algebraic Newton solve and the exact reduced Jacobian.

Compiled ahead of time once per system (shapes never change between scenarios), so the compile
time is measured apart from solve time and every later call reuses the same executable.
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


@dataclass(frozen=True)
class Kernels:
    """AOT-compiled functions of one system; all take and return float64 arrays.

    ``newton(x, z_guess, p) -> (z, iterations, |g|_inf)``: full Newton on 0 = g(x, z, p) with the
    autodiff g_z. ``ode_jacobian(x, z, p)``: d x'/d x of the reduced ODE by the implicit-function
    theorem, f_x - f_z g_z^{-1} g_x (one factorization of g_z, n_x back-substitutions).

    Fused kernels keep host-device round trips to one per call (they dominate small systems):
    ``reduced_rhs(x, z_guess, p)`` -> packed [f, z, iterations, |g|]; ``reduced_jacobian(x,
    z_guess, p)`` -> (J, packed [z, iterations, |g|]); ``recover(X, Z_guess, p)`` for a batch of
    SAMPLE_BATCH states -> packed rows [z, outputs, iterations, |g|].
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


def newton_solver(g, max_iter: int = NEWTON_MAX_ITER, step_tol: float = NEWTON_STEP_TOL):
    """``newton(x, z_guess, p) -> (z, iterations)``: full Newton on 0 = g(x, z, p) with the
    autodiff g_z, stopping when the update is below ``step_tol`` relative to max(1, |z|), after
    ``max_iter`` iterations, or on NaN. The one algebraic Newton of the project (kernels, RAPTOR's
    collocation points and the diffrax vector field all build on it)."""
    g_z = jax.jacfwd(g, argnums=1)

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


def _newton_fn(system: DAESystem):
    solve = newton_solver(system.g)

    def newton(x, z, p):
        z, it = solve(x, z, p)
        return z, it, jnp.max(jnp.abs(system.g(x, z, p)))

    return newton


def _ode_jacobian_fn(system: DAESystem):
    f, g = system.f, system.g
    n = system.n_x

    def ode_jacobian(x, z, p):
        # one forward-mode pass over w = (x, z) through (f, g): the same tangents as four
        # separate jacfwd calls, traced once (a quarter of the graph to compile)
        def fg(w):
            return jnp.concatenate([f(w[:n], w[n:], p), g(w[:n], w[n:], p)])

        jac = jax.jacfwd(fg)(jnp.concatenate([x, z]))
        f_x, f_z, g_x, g_z = jac[:n, :n], jac[:n, n:], jac[n:, :n], jac[n:, n:]
        return f_x + f_z @ (-jnp.linalg.solve(g_z, g_x))

    return ode_jacobian


def _fused_fns(system: DAESystem):
    newton = _newton_fn(system)
    jacobian = _ode_jacobian_fn(system)
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

        def compile_(fn):
            return jax.jit(fn).lower(x, z, p).compile()

        outputs = compile_(system.outputs) if system.outputs is not None else None
        reduced_rhs, reduced_jacobian, recover = _fused_fns(system)
        xb = jnp.broadcast_to(x, (SAMPLE_BATCH, x.size))
        zb = jnp.broadcast_to(z, (SAMPLE_BATCH, z.size))
        kernels = Kernels(
            f=compile_(system.f),
            g=compile_(system.g),
            newton=compile_(_newton_fn(system)),
            ode_jacobian=compile_(_ode_jacobian_fn(system)),
            g_z=compile_(jax.jacfwd(system.g, argnums=1)),
            outputs=outputs,
            reduced_rhs=compile_(reduced_rhs),
            reduced_jacobian=compile_(reduced_jacobian),
            recover=jax.jit(recover).lower(xb, zb, p).compile(),
            compile_seconds=time.perf_counter() - start,
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
    z, it, res = kernels.newton(jnp.asarray(x, jnp.float64), jnp.asarray(z0, jnp.float64), p)
    return np.asarray(z), int(it), float(res)
