"""Synchronous machine, classical model: a constant EMF behind the transient reactance.

Source: P. W. Sauer and M. A. Pai, *Power System Dynamics and Stability*, Prentice Hall, 1998,
§7.9.3 "the classical model" (eqs. 7.223-7.225 in the multimachine form); P. Kundur, *Power System
Stability and Control*, 1994, §13.3. Per unit on the system base, time in s, angles in rad, speed
``omega`` in pu (1 = synchronous), omega_s = 2 pi f rad/s; generator convention.

    d delta/dt = omega_s (omega - 1)
    2 H d omega/dt = TM - Pe - D (omega - 1),   Pe = Re(E' conj(I))
    E' e^{j delta} = V + (Rs + j xd_p) I         (stator, solved explicitly for I)

with E' = ``E_p`` the constant EMF magnitude and I the current injected into the network.
"""

from __future__ import annotations

from collections.abc import Mapping

import jax.numpy as jnp
import numpy as np

from models.components.validation import check_fields, non_negative, positive

STATES = ("delta", "omega")
PARAMS = ("H", "D", "Rs", "xd_p")
_RULES = (
    ("H", positive, "> 0 (inertia constant, s)"),
    ("D", non_negative, ">= 0 (damping, pu)"),
    ("Rs", non_negative, ">= 0 (stator resistance, pu)"),
    ("xd_p", positive, "> 0 (transient reactance, pu)"),
)


def validate_classical(device: str, data: Mapping) -> dict[str, float]:
    return check_fields(device, data, _RULES)


def classical_current(delta, E_p, vr, vi, p: Mapping):
    """(Ir, Ii) injected: I = (E' e^{j delta} - V) / (Rs + j xd_p)."""
    er, ei = E_p * jnp.cos(delta) - vr, E_p * jnp.sin(delta) - vi
    den = p["Rs"] ** 2 + p["xd_p"] ** 2
    return (p["Rs"] * er + p["xd_p"] * ei) / den, (p["Rs"] * ei - p["xd_p"] * er) / den


def classical_derivatives(delta, omega, E_p, ir, ii, tm, p: Mapping, omega_s: float):
    """(d delta/dt, d omega/dt); Pe = E' (cos(delta) Ir + sin(delta) Ii) is the air-gap power."""
    pe = E_p * (jnp.cos(delta) * ir + jnp.sin(delta) * ii)
    return omega_s * (omega - 1.0), (tm - pe - p["D"] * (omega - 1.0)) / (2.0 * p["H"])


def init_classical(v: np.ndarray, s: np.ndarray, p: Mapping) -> dict[str, np.ndarray]:
    """From terminal voltage ``v`` and generation ``s`` (complex pu): I = conj(s / v),
    E' e^{j delta} = v + (Rs + j xd_p) I, TM = Re(E' conj(I))."""
    v = np.asarray(v, dtype=complex)
    i = np.conj(np.asarray(s, dtype=complex) / v)
    e = v + (np.asarray(p["Rs"]) + 1j * np.asarray(p["xd_p"])) * i
    return {
        "delta": np.angle(e),
        "omega": np.ones(e.shape),
        "E_p": np.abs(e),
        "tm": (e * np.conj(i)).real,
        "Ir": i.real,
        "Ii": i.imag,
    }
