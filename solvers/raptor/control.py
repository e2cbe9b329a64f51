"""Interval-length control: the starting-interval heuristic and the PI controller."""

from __future__ import annotations

import numpy as np


def rms_norm(v: np.ndarray, scale: np.ndarray) -> float:
    return float(np.sqrt(np.mean((v / scale) ** 2)))


def starting_interval(
    x0: np.ndarray,
    f0: np.ndarray,
    f_at,
    rtol: float,
    atol: float,
    order_plus_one: int,
) -> float:
    """Hairer-Norsett-Wanner I, II.4 (p. 169) on the reduced ODE: ``f_at(x)`` evaluates x'
    with z re-solved consistently. Returns h in seconds."""
    scale = atol + rtol * np.abs(x0)
    d0, d1 = rms_norm(x0, scale), rms_norm(f0, scale)
    h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
    f1 = f_at(x0 + h0 * f0)
    d2 = rms_norm(f1 - f0, scale) / h0
    if max(d1, d2) <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** (1.0 / order_plus_one)
    return min(100.0 * h0, h1)


class PIController:
    """h_new = h * clip(safety * err^-k_i * err_prev^k_p, fac_min, fac_max) after acceptance
    (the previous error of the first interval is its own error, as in the paper); after a
    rejection h shrinks by clip(safety * err^-k_i, fac_min, 1) and the next accepted interval may
    not grow."""

    def __init__(self, safety: float, k_i: float, k_p: float, fac_min: float, fac_max: float):
        self.safety, self.k_i, self.k_p = safety, k_i, k_p
        self.fac_min, self.fac_max = fac_min, fac_max
        self.reset()

    def reset(self) -> None:
        self.err_prev: float | None = None
        self.just_rejected = False

    def accepted(self, h: float, err: float) -> float:
        err = max(err, 1e-10)
        prev = err if self.err_prev is None else self.err_prev
        fac = self.safety * err ** (-self.k_i) * prev**self.k_p
        fac = min(self.fac_max, max(self.fac_min, fac))
        if self.just_rejected:
            fac = min(fac, 1.0)
        self.err_prev, self.just_rejected = err, False
        return h * fac

    def rejected(self, h: float, err: float) -> float:
        self.just_rejected = True
        if not np.isfinite(err):
            return h * 0.5
        return h * min(1.0, max(self.fac_min, self.safety * err ** (-self.k_i)))
