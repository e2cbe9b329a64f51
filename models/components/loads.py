"""Constant-impedance (constant-admittance) static loads.

A load that draws S = P + jQ (pu, positive = consumed) at the voltage magnitude |V| of the power
flow is represented by the shunt admittance Y = G + jB = conj(S) / |V|^2 = (P - jQ) / |V|^2, so
its current is I = Y V and its power |V|^2 conj(Y) scales with |V|^2 (Sauer & Pai 1998, Ch. 7,
constant-impedance loads of the multimachine models). Per unit on the system base.
"""

from __future__ import annotations

import numpy as np


def constant_impedance(
    p: np.ndarray, q: np.ndarray, vm: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(G, B) in pu of the admittances that draw P + jQ at |V| = vm: G = P/vm^2, B = -Q/vm^2."""
    vm2 = np.asarray(vm, dtype=float) ** 2
    return np.asarray(p, dtype=float) / vm2, -np.asarray(q, dtype=float) / vm2
