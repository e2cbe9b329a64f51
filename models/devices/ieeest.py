"""IEEEST: IEEE standard power system stabilizer (PSS/E's IEEEST).

Source: Siemens PTI, *PSS(R)E Model Library*, "IEEEST" (ICONs IC input code, IB remote bus;
CONs A1 .. A6, T1 .. T6, KS, LSMAX, LSMIN, VCU, VCL); IEEE Std 421.5-1992 type PSS1A (the
filter, lead-lags and washout of IEEE Std 421.5-2016 §9.2, Figure 9-1, with PSS/E's fourth-order
filter). Per unit on the machine's base; time in s.

    u   = input signal of code IC (``base.STABILIZER_INPUTS``: 1 speed deviation, 3 electrical
          power, 4 accelerating power, 5 terminal voltage; 2 and 6 and a remote bus refused)
    w   = (1 + A5 s + A6 s^2) / ((1 + A1 s + A2 s^2)(1 + A3 s + A4 s^2)) u       (filter)
    y1  = (1 + s T1)/(1 + s T2) w,   y2 = (1 + s T3)/(1 + s T4) y1         (lead-lags;
          T2 = 0 or T4 = 0 removes the block, as in PSS/E)
    v   = KS s T5 / (1 + s T6) y2                                           (washout)
    VSS = clip(v, LSMIN, LSMAX)                                         (output limits)
    VOTHSG = VSS if VCL <= Vt <= VCU else 0           (cutoff; VCU = 0 or VCL = 0: that side off)

The filter is realized in controllable canonical form of its denominator D(s) = 1 + d1 s + d2
s^2 + d3 s^3 + d4 s^4 (d1 = A1 + A3, d2 = A2 + A4 + A1 A3, d3 = A1 A4 + A2 A3, d4 = A2 A4) of
degree n (the highest non-zero d): states q1 = w0, q2 = w0', ..., dn q_n' = u - q1 - d1 q2 -
..., the numerator applied to q1 (w = q1 + A5 q1' + A6 q1''); states beyond n stay 0, and with
n = 0 the filter passes u through. A numerator of higher degree than the denominator is refused.
The output limits and the cutoff are applied to the output (no state is limited).
Initialization at a constant input u0: q1 = u0, q2..q4 = 0, lead-lag states u0, washout state
u0, output 0.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from models.devices.base import (
    DeviceModel,
    check_input_code,
    lead_lag,
    problems_where,
    stabilizer_input,
    stabilizer_input0,
)

PARAMS = ("IC", "IB", "A1", "A2", "A3", "A4", "A5", "A6", "T1", "T2", "T3", "T4", "T5", "T6",
          "KS", "LSMAX", "LSMIN", "VCU", "VCL")  # fmt: skip


def _denominator(p):
    a1, a2, a3, a4 = p["A1"], p["A2"], p["A3"], p["A4"]
    return a1 + a3, a2 + a4 + a1 * a3, a1 * a4 + a2 * a3, a2 * a4


def _degree(p) -> np.ndarray:
    d = np.stack([np.asarray(v, float) for v in _denominator(p)])
    nonzero = d != 0
    return np.where(nonzero.any(axis=0), 4 - np.argmax(nonzero[::-1], axis=0), 0)


def _check(p) -> list:
    out = check_input_code(p, "IC", "IB")
    for k in ("A1", "A2", "A3", "A4", "A5", "A6", "T1", "T2", "T3", "T4", "T5"):
        out += problems_where(p[k] < 0, k, "must be >= 0")
    n = _degree(p)
    out += problems_where((p["A6"] != 0) & (n < 2), "A6",
                          "must be 0 when the filter's denominator is below 2nd order")  # fmt: skip
    out += problems_where((p["A5"] != 0) & (n < 1), "A5",
                          "must be 0 when the filter has no denominator")  # fmt: skip
    out += problems_where((p["T2"] == 0) & (p["T1"] != 0), "T1", "must be 0 when T2 = 0")
    out += problems_where((p["T4"] == 0) & (p["T3"] != 0), "T3", "must be 0 when T4 = 0")
    out += problems_where(p["T6"] <= 0, "T6", "must be > 0 (s)")
    out += problems_where(~(p["LSMAX"] > p["LSMIN"]), "LSMAX", "must be > LSMIN")
    out += problems_where(p["VCU"] < 0, "VCU", "must be >= 0 (0: no cutoff)")
    out += problems_where(p["VCL"] < 0, "VCL", "must be >= 0 (0: no cutoff)")
    return out


def _filter(q, u, p):
    """(derivatives of q1..q4, filtered signal w)."""
    q1, q2, q3, q4 = q
    d1, d2, d3, d4 = _denominator(p)

    def over(num, d):
        return num / jnp.where(d != 0, d, 1.0)

    n4 = d4 != 0
    n3 = ~n4 & (d3 != 0)
    n2 = ~n4 & ~n3 & (d2 != 0)
    n1 = ~n4 & ~n3 & ~n2 & (d1 != 0)
    n0 = ~(n4 | n3 | n2 | n1)
    top1 = over(u - q1, d1)
    top2 = over(u - q1 - d1 * q2, d2)
    top3 = over(u - q1 - d1 * q2 - d2 * q3, d3)
    top4 = over(u - q1 - d1 * q2 - d2 * q3 - d3 * q4, d4)
    dq1 = jnp.where(n1, top1, jnp.where(n0, 0.0, q2))
    dq2 = jnp.where(n4 | n3, q3, jnp.where(n2, top2, 0.0))
    dq3 = jnp.where(n4, q4, jnp.where(n3, top3, 0.0))
    dq4 = jnp.where(n4, top4, 0.0)
    w = jnp.where(n0, u, q1 + p["A5"] * dq1 + p["A6"] * jnp.where(n1, 0.0, dq2))
    return (dq1, dq2, dq3, dq4), w


def _chain(xs, sig, p):
    """(derivatives, unlimited washout output v)."""
    q1, q2, q3, q4, x1, x2, xw = xs
    u = stabilizer_input(p["IC"], sig)
    dq, w = _filter((q1, q2, q3, q4), u, p)
    d_x1, y1 = lead_lag(x1, w, p["T1"], p["T2"])
    d_x2, y2 = lead_lag(x2, y1, p["T3"], p["T4"])
    v = p["KS"] * p["T5"] * (y2 - xw) / p["T6"]
    return (*dq, d_x1, d_x2, (y2 - xw) / p["T6"]), v


def _init(sig, p) -> dict:
    u0 = stabilizer_input0(p["IC"], sig)
    zero = np.zeros_like(u0)
    return {"pf1": u0, "pf2": zero, "pf3": zero, "pf4": zero, "pll1": u0, "pll2": u0,
            "pwo": u0}  # fmt: skip


def _derivatives(xs, sig, p):
    return _chain(xs, sig, p)[0]


def _output(xs, sig, p):
    vss = jnp.clip(_chain(xs, sig, p)[1], p["LSMIN"], p["LSMAX"])
    vt = sig["vt"]
    on = ((p["VCU"] == 0) | (vt <= p["VCU"])) & ((p["VCL"] == 0) | (vt >= p["VCL"]))
    return jnp.where(on, vss, 0.0)


IEEEST = DeviceModel(
    name="IEEEST",
    role="stabilizer",
    params=PARAMS,
    states=("pf1", "pf2", "pf3", "pf4", "pll1", "pll2", "pwo"),
    source="PSS(R)E Model Library, IEEEST; IEEE Std 421.5-2016 §9.2 (PSS1A)",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    output=_output,
)
