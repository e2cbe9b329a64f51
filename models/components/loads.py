"""Static loads: constant impedance (the default) and the general ZIP (polynomial) load.

A load that draws S0 = P0 + jQ0 (pu, positive = consumed) at the power-flow voltage V0 = |V| is
split into constant-impedance (Z), constant-current (I) and constant-power (P) parts with fractions
cz + ci + cp = 1 (IEEE Task Force on Load Representation, "Load representation for dynamic
performance analysis", IEEE Trans. Power Syst. 8(2), 1993, eq. (1); Kundur 1994, §7.1.1 eq. 7.2):

    S(V) = S0 [cz (|V|/V0)^2 + ci (|V|/V0) + cp]

and drawn as the current I = conj(S(V) / V) (pu, system base):

    I = Y V + (ip - j iq) V / |V| + (pp - j pq) V / |V|^2

with Y = G + jB = cz conj(S0) / V0^2 (the admittance, Sauer & Pai 1998 Ch. 7), ip + j iq =
ci S0 / V0 and pp + j pq = cp S0. With cz = 1 the load is linear in V.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np


def constant_impedance(
    p: np.ndarray, q: np.ndarray, vm: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(G, B) in pu of the admittances that draw P + jQ at |V| = vm: G = P/vm^2, B = -Q/vm^2."""
    vm2 = np.asarray(vm, dtype=float) ** 2
    return np.asarray(p, dtype=float) / vm2, -np.asarray(q, dtype=float) / vm2


def zip_parameters(
    p: np.ndarray, q: np.ndarray, vm: np.ndarray, cz: float, ci: float, cp: float
) -> dict[str, np.ndarray]:
    """Parameters ``load_g, load_b, load_ip, load_iq, load_pp, load_pq`` (pu) of ZIP loads that
    draw P + jQ at |V| = vm; raises ``ValueError`` unless the fractions are >= 0 and sum to 1."""
    fractions = np.array([cz, ci, cp], dtype=float)
    if np.any(fractions < 0.0) or not np.isclose(fractions.sum(), 1.0, rtol=0, atol=1e-12):
        raise ValueError(f"ZIP fractions (cz, ci, cp) = {tuple(fractions)} must be >= 0, sum 1")
    g, b = constant_impedance(p, q, vm)
    vm = np.asarray(vm, dtype=float)
    return {
        "load_g": cz * g,
        "load_b": cz * b,
        "load_ip": ci * np.asarray(p, dtype=float) / vm,
        "load_iq": ci * np.asarray(q, dtype=float) / vm,
        "load_pp": cp * np.asarray(p, dtype=float),
        "load_pq": cp * np.asarray(q, dtype=float),
    }


def zip_current(v, g, b, ip, iq, pp, pq):
    """Complex current (pu) drawn by ZIP loads at complex voltages ``v`` (JAX). At v = 0 exactly
    (a de-energized bus, ``models.disturbances.BranchTrip``) it is 0 with finite derivatives:
    the I and P parts' 1/|v| factors are taken at |v| = 1 there, where they multiply v = 0,
    instead of giving 0/0 = NaN."""
    vm2 = jnp.real(v) ** 2 + jnp.imag(v) ** 2
    vm2 = jnp.where(vm2 > 0.0, vm2, 1.0)
    return ((g + 1j * b) + (ip - 1j * iq) / jnp.sqrt(vm2) + (pp - 1j * pq) / vm2) * v
