"""The contract of a dynamic device model (one per PSS/E model name) and shared helpers.

Every model is vectorized over its instances: parameters are arrays (one entry per instance),
states are a tuple of arrays in ``states`` order. The *role* fixes the signature of the functions
(per-unit on the machine base MBASE; speed ``omega`` in pu, 1 = synchronous; angles in rad):

* ``machine``: ``init(v, s, p) -> dict`` (states, ``Id``, ``Iq``, ``efd``, ``tm`` from the
  terminal voltage and generated power, complex pu), ``derivatives(xs, Id, Iq, efd, tm, p,
  omega_s)``, ``stator(xs, vd, vq, Id, Iq, p) -> (res_d, res_q)``, ``torque(xs, Id, Iq, p)``,
  ``delta`` and ``omega`` the positions of those states.
* ``exciter``: ``init(efd, vt, p) -> dict`` (states and ``vref``), ``derivatives(xs, vt, vref,
  vs, p)``, ``output(xs, vt, p) -> efd``.
* ``governor``: ``init(tm, p) -> dict`` (states and ``pref``), ``derivatives(xs, omega, pref,
  p)``, ``output(xs, omega, p) -> tm``.

``check(p) -> list[(field, index, reason)]`` lists parameter values the model cannot use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np


@dataclass(frozen=True)
class DeviceModel:
    name: str
    role: str
    params: tuple[str, ...]
    """Parameter names in ``.dyr`` order (integer ICONs first where the model has them)."""
    states: tuple[str, ...]
    source: str
    check: Callable
    init: Callable
    derivatives: Callable
    output: Callable | None = None
    stator: Callable | None = None
    torque: Callable | None = None


def quadratic_through(x1, s1, x2, s2):
    """(A, B) of PSS/E's quadratic saturation Se(x) = B (x - A)^2 / x (x > A) through Se(x1) =
    s1 and Se(x2) = s2 (0 < x1 < x2, 0 <= s1 < s2 x2 / x1); (0, 0) where s1 = s2 = 0 (none)."""
    x1, s1, x2, s2 = (np.asarray(v, float) for v in (x1, s1, x2, s2))
    on = (s1 > 0) | (s2 > 0)
    ratio = np.sqrt(np.where(on, s1 * x1 / np.where(on, s2 * x2, 1.0), 0.0))
    a = np.where(on, (ratio * x2 - x1) / np.where(on, ratio - 1.0, 1.0), 0.0)
    b = np.where(on, s2 * x2 / np.where(on, (x2 - a) ** 2, 1.0), 0.0)
    return a, b


def quadratic_saturation(s10, s12):
    """(A, B) of a machine's saturation through Se(1.0) = S(1.0), Se(1.2) = S(1.2)."""
    return quadratic_through(1.0, s10, 1.2, s12)


def saturation(x, a, b):
    """Se(x) = B (x - A)^2 / x for x > A, else 0 (works on JAX and NumPy arrays)."""
    xp = jnp if not isinstance(x, np.ndarray) else np
    excess = xp.maximum(x - a, 0.0)
    return b * excess * excess / xp.maximum(x, 1e-6)


def non_windup(derivative, state, low, high):
    """Non-windup limiter of a first-order block (IEEE Std 421.5-2016 Annex E): the state stops
    at a limit and leaves it as soon as its derivative points back inside."""
    at_high = (state >= high) & (derivative > 0)
    at_low = (state <= low) & (derivative < 0)
    return jnp.where(at_high | at_low, 0.0, derivative)


def lag(state, value, t):
    """(derivative, output) of a first-order lag 1 / (1 + s T) on ``value``, bypassed where
    T = 0 (PSS/E: a zero time constant removes the block; its state stays at its initial value
    and the output is the input)."""
    on = t > 0
    return jnp.where(on, (value - state) / jnp.where(on, t, 1.0), 0.0), jnp.where(on, state, value)


def lead_lag(state, value, t_lead, t_lag):
    """(derivative, output) of (1 + s T_lead) / (1 + s T_lag), bypassed where T_lag = 0."""
    on = t_lag > 0
    safe = jnp.where(on, t_lag, 1.0)
    ratio = t_lead / safe
    out = ratio * value + (1.0 - ratio) * state
    return jnp.where(on, (value - state) / safe, 0.0), jnp.where(on, out, value)


def problems_where(mask, field: str, reason: str) -> list[tuple[str, int, str]]:
    return [(field, int(i), reason) for i in np.flatnonzero(np.asarray(mask))]
