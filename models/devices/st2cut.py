"""ST2CUT: dual-input stabilizer with output cutoff (PSS/E's ST2CUT).

Source: Siemens PTI, *PSS(R)E Model Library*, "ST2CUT" (ICONs IC1 input 1 code, IB1 its remote
bus, IC2 input 2 code, IB2 its remote bus; CONs K1, K2, T1 .. T10, LSMAX, LSMIN, VCU, VCL). Per
unit on the machine's base; time in s.

    u1, u2 = input signals of codes IC1, IC2 (``base.STABILIZER_INPUTS``: 1 speed deviation,
             3 electrical power, 4 accelerating power, 5 terminal voltage; 0 no input; 2, 6
             and a remote bus refused)
    T1 dz1/dt = K1 u1 - z1,   T2 dz2/dt = K2 u2 - z2     (transducers; T = 0: z = K u)
    v  = s T3 / (1 + s T4) (z1 + z2)                    (washout)
    y  = (1 + s T5)/(1 + s T6) (1 + s T7)/(1 + s T8) (1 + s T9)/(1 + s T10) v   (lead-lags;
         a zero denominator time constant removes its block, as in PSS/E)
    VOTHSG = clip(y, LSMIN, LSMAX)                      (output limits)

The output limits act on the output (no state is limited). The voltage cutoff VCU / VCL is not
implemented: both must be 0 (PSS/E: 0 switches the cutoff off). Initialization at constant
inputs: z = K u0, washout state z1 + z2, lead-lag states 0, output 0.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from models.devices.base import (
    DeviceModel,
    check_input_code,
    lag,
    lead_lag,
    problems_where,
    stabilizer_input,
    stabilizer_input0,
)

PARAMS = ("IC1", "IB1", "IC2", "IB2", "K1", "K2", "T1", "T2", "T3", "T4", "T5", "T6", "T7",
          "T8", "T9", "T10", "LSMAX", "LSMIN", "VCU", "VCL")  # fmt: skip


def _check(p) -> list:
    out = check_input_code(p, "IC1", "IB1", allow_none=True)
    out += check_input_code(p, "IC2", "IB2", allow_none=True)
    for k in ("T1", "T2", "T3", "T5", "T6", "T7", "T8", "T9", "T10"):
        out += problems_where(p[k] < 0, k, "must be >= 0 (s)")
    out += problems_where(p["T4"] <= 0, "T4", "must be > 0 (s)")
    for lead, lag_ in (("T5", "T6"), ("T7", "T8"), ("T9", "T10")):
        out += problems_where((p[lag_] == 0) & (p[lead] != 0), lead, f"must be 0 when {lag_} = 0")
    out += problems_where(~(p["LSMAX"] > p["LSMIN"]), "LSMAX", "must be > LSMIN")
    for k in ("VCU", "VCL"):
        out += problems_where(p[k] != 0, k, "must be 0 (the voltage cutoff is not implemented)")
    return out


def _chain(xs, sig, p):
    z1, z2, xw, x1, x2, x3 = xs
    d_z1, y1 = lag(z1, p["K1"] * stabilizer_input(p["IC1"], sig), p["T1"])
    d_z2, y2 = lag(z2, p["K2"] * stabilizer_input(p["IC2"], sig), p["T2"])
    total = y1 + y2
    v = p["T3"] * (total - xw) / p["T4"]
    d_x1, o1 = lead_lag(x1, v, p["T5"], p["T6"])
    d_x2, o2 = lead_lag(x2, o1, p["T7"], p["T8"])
    d_x3, o3 = lead_lag(x3, o2, p["T9"], p["T10"])
    return (d_z1, d_z2, (total - xw) / p["T4"], d_x1, d_x2, d_x3), o3


def _init(sig, p) -> dict:
    z1 = p["K1"] * stabilizer_input0(p["IC1"], sig)
    z2 = p["K2"] * stabilizer_input0(p["IC2"], sig)
    zero = np.zeros_like(z1)
    return {"pt1": z1, "pt2": z2, "pwo": z1 + z2, "pll1": zero, "pll2": zero, "pll3": zero}


def _derivatives(xs, sig, p):
    return _chain(xs, sig, p)[0]


def _output(xs, sig, p):
    return jnp.clip(_chain(xs, sig, p)[1], p["LSMIN"], p["LSMAX"])


ST2CUT = DeviceModel(
    name="ST2CUT",
    role="stabilizer",
    params=PARAMS,
    states=("pt1", "pt2", "pwo", "pll1", "pll2", "pll3"),
    source="PSS(R)E Model Library, ST2CUT",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    output=_output,
)
