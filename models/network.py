"""Nodal current balance (KCL) of an AC network in rectangular coordinates, over a branch list.

No bus admittance matrix is ever formed: every branch's terminal currents are computed from its
own pi-model admittances and accumulated onto its two buses by scatter-add, so the cost and memory
are O(n_bus + n_branch) and a branch trip is only a parameter change (``branch_status`` 1 -> 0).

Branch model (MATPOWER's, R. D. Zimmerman, C. E. Murillo-Sanchez, MATPOWER User's Manual,
§3.2 "Branches", eqs. (3.1)-(3.2)): series admittance ys = 1/(r + jx), total line charging b,
off-nominal tap ratio tau (MATPOWER's 0 meaning 1) at the from end and phase shift theta_sh (rad);
an optional total shunt conductance g (pandapower's BR_G, zero in MATPOWER) joins b as g + jb:

    i_f = Yff v_f + Yft v_t,   Yff = (ys + (g + j b)/2) / tau^2,   Yft = -ys / (tau e^{-j theta_sh})
    i_t = Ytf v_f + Ytt v_t,   Ytf = -ys / (tau e^{+j theta_sh}),  Ytt = ys + (g + j b)/2

with i_f, i_t the currents *leaving* the from and to buses into the branch; an out-of-service
branch (status 0) carries none. All quantities are per unit on the system base (currents on
S_base / V_base). Shunt admittances (bus shunts, loads, faults) draw y v from their bus.

The bus equation, for each bus k (real and imaginary parts), is

    sum(injected currents at k) - y_shunt,k v_k - sum(branch currents leaving k) = 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

import models.jaxconfig  # noqa: F401

BRANCH_PARAMS = ("branch_r", "branch_x", "branch_b", "branch_tap", "branch_shift", "branch_status")
"""Per-branch parameters (pu, pu, pu, ratio, rad, 1/0), in the order of the branch list."""
BRANCH_G = "branch_g"
"""Optional per-branch total shunt conductance (pu), split half to each end like ``branch_b``
(pandapower's ppc column BR_G: transformer magnetizing losses); absent means zero."""


@dataclass(frozen=True)
class Topology:
    """The static part of a network: bus count and each branch's end-bus indices (0-based)."""

    n_bus: int
    from_bus: np.ndarray
    to_bus: np.ndarray

    def __post_init__(self) -> None:
        for ends in (self.from_bus, self.to_bus):
            if ends.ndim != 1 or (ends.size and (ends.min() < 0 or ends.max() >= self.n_bus)):
                raise ValueError(f"branch end indices must lie in [0, {self.n_bus})")
        if self.from_bus.shape != self.to_bus.shape:
            raise ValueError("from_bus and to_bus must have the same length")

    @property
    def n_branch(self) -> int:
        return int(self.from_bus.size)


def scatter_add(values: jax.Array, index: np.ndarray, n: int) -> jax.Array:
    """out[k] = sum of values[i] over i with index[i] == k (length n); a segment sum."""
    return jnp.zeros(n, dtype=values.dtype).at[index].add(values)


def branch_admittances(p: dict) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """(Yff, Yft, Ytf, Ytt) of every branch (complex pu), zero for branches out of service."""
    ys = 1.0 / (p["branch_r"] + 1j * p["branch_x"])
    tap = p["branch_tap"]
    shift = p["branch_shift"]
    on = p["branch_status"]
    y_sh = 1j * p["branch_b"] + p.get(BRANCH_G, 0.0)
    ytt = ys + 0.5 * y_sh
    yff = ytt / tap**2
    yft = -ys / (tap * jnp.exp(-1j * shift))
    ytf = -ys / (tap * jnp.exp(1j * shift))
    return on * yff, on * yft, on * ytf, on * ytt


def branch_currents(topo: Topology, v: jax.Array, p: dict) -> tuple[jax.Array, jax.Array]:
    """Currents (complex pu) leaving the from and the to bus into each branch."""
    yff, yft, ytf, ytt = branch_admittances(p)
    vf = v[topo.from_bus]
    vt = v[topo.to_bus]
    return yff * vf + yft * vt, ytf * vf + ytt * vt


def branch_outflow(topo: Topology, v: jax.Array, p: dict) -> jax.Array:
    """Per bus, the sum of the currents leaving it through its branches (complex pu)."""
    i_from, i_to = branch_currents(topo, v, p)
    return scatter_add(i_from, topo.from_bus, topo.n_bus) + scatter_add(
        i_to, topo.to_bus, topo.n_bus
    )


def current_mismatch(
    topo: Topology, v: jax.Array, injection: jax.Array, y_shunt: jax.Array, p: dict
) -> jax.Array:
    """Complex KCL residual per bus: injection - y_shunt v - branch outflow (pu)."""
    return injection - y_shunt * v - branch_outflow(topo, v, p)


def branch_parameters(
    r: np.ndarray,
    x: np.ndarray,
    b: np.ndarray,
    tap: np.ndarray,
    shift_rad: np.ndarray,
    status: np.ndarray,
) -> dict[str, np.ndarray]:
    """The parameter arrays of a branch list (float64); a MATPOWER tap of 0 becomes 1."""
    tap = np.asarray(tap, dtype=np.float64)
    arrays = (r, x, b, np.where(tap == 0.0, 1.0, tap), shift_rad, status)
    out = {
        name: np.asarray(a, dtype=np.float64).copy()
        for name, a in zip(BRANCH_PARAMS, arrays, strict=True)
    }
    if np.any((out["branch_r"] == 0.0) & (out["branch_x"] == 0.0)):
        raise ValueError("a branch with r = x = 0 has an infinite series admittance")
    return out
