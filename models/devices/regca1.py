"""REGCA1: renewable energy generator/converter model A (WECC REGC_A), a current source.

Sources: Siemens PTI, *PSS(R)E Model Library*, "REGCA1" (ICON LVPLSW; CONs Tg, Rrpwr, Brkpt,
Zerox, Lvpl1, Volim, Lvpnt1, Lvpnt0, Iolim, Tfltr, Khv, Iqrmax, Iqrmin, Accel); WECC Renewable
Energy Modeling Task Force, "WECC Second Generation Renewable Energy System Models" (REGC_A
specification, 2014) and "WECC Solar Photovoltaic Power Plant Dynamic Modeling Guide" (2014).
Per unit on MBASE; time in s.

The converter sits in its generator's slot (role ``converter``) and injects the current
I = (Ip - j Iq) V / |V| into its bus: Ip along the terminal voltage (P = |V| Ip), Iq positive
for reactive power delivered (Q = |V| Iq). Commands Ipcmd, Iqcmd come from the electrical control
(REECA1, the same sign: Iqcmd > 0 delivers reactive power; held at their initial values without
one).

    Tg dIq/dt = Iqcmd - Iq,      Iqrmin <= dIq/dt <= Iqrmax                   (rate limits)
    Tg dIp/dt = Ipcmd - Ip,      dIp/dt <= Rrpwr,   Ip <= LVPL(Vf)  (non-windup upper limit)
    Tfltr dVf/dt = V - Vf                                         (LVPL's voltage filter)
    LVPL(Vf) = 0 (Vf < Zerox), Lvpl1 (Vf - Zerox)/(Brkpt - Zerox) (Zerox..Brkpt), none above;
               none at all where LVPLSW = 0                 (low-voltage power logic)
    Ipout = Ip LVG(V),  LVG = 0 (V < Lvpnt0), (V - Lvpnt0)/(Lvpnt1 - Lvpnt0), 1 (V > Lvpnt1)
                                                    (low-voltage active current management)
    Iqout = max(Iq - Khv max(V - Volim, 0), Iolim)  (high-voltage reactive current management)

Readings (``readings``): the LVPL limit moves with Vf; where it falls below Ip the state is
carried down with it (IEEE Std 421.5-2016 Annex E: a non-windup state never exceeds its limit),
made continuous by a pull of time constant ``CLAMP`` (1 ms). Rrpwr limits every increase of Ip
(the specification names it the LVPL ramp rate, for the recovery after a dip; a constant rate
limit is its reading in ANDES too). Accel (a network-solution acceleration factor) has no role
in a simultaneous DAE solution. ANDES 2.0.0 departs in two respects not met by the cross-check
data: its Iq rate limits act only in the direction of the initial reactive power, and it injects
P, Q rather than a current (the same at the solved point).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from models.devices.base import DeviceModel, non_windup, problems_where

PARAMS = ("LVPLSW", "Tg", "Rrpwr", "Brkpt", "Zerox", "Lvpl1", "Volim", "Lvpnt1", "Lvpnt0",
          "Iolim", "Tfltr", "Khv", "Iqrmax", "Iqrmin", "Accel")  # fmt: skip
STATES = ("Iq_lag", "Ip_lag", "V_lvpl")
"""Iq, Ip and Vf of the module docstring (named apart from the slot's algebraic Id, Iq)."""
NO_LIMIT = 1e4
"""Stands for "no limit" (pu current) in the LVPL characteristic."""
CLAMP = 1e-3
"""Time constant (s) with which a falling LVPL limit carries Ip down."""


def _check(p) -> list:
    out = problems_where(p["Tg"] <= 0, "Tg", "must be > 0 (s)")
    out += problems_where(p["Tfltr"] <= 0, "Tfltr", "must be > 0 (s)")
    out += problems_where(~np.isin(p["LVPLSW"], (0, 1)), "LVPLSW", "must be 0 or 1")
    out += problems_where((p["LVPLSW"] == 1) & ~(p["Brkpt"] > p["Zerox"]), "Brkpt",
                          "must be > Zerox (LVPL characteristic)")  # fmt: skip
    out += problems_where(~(p["Lvpnt1"] > p["Lvpnt0"]), "Lvpnt1", "must be > Lvpnt0")
    out += problems_where(p["Rrpwr"] <= 0, "Rrpwr", "must be > 0 (pu/s)")
    out += problems_where(~(p["Iqrmax"] > p["Iqrmin"]), "Iqrmax", "must be > Iqrmin (pu/s)")
    out += problems_where(p["Khv"] < 0, "Khv", "must be >= 0")
    return out


def lvpl(vf, p):
    """The LVPL upper limit on Ip (pu) at the filtered voltage ``vf``."""
    slope = p["Lvpl1"] / jnp.where(p["Brkpt"] > p["Zerox"], p["Brkpt"] - p["Zerox"], 1.0)
    ramp = jnp.where(vf < p["Zerox"], 0.0, (vf - p["Zerox"]) * slope)
    return jnp.where((p["LVPLSW"] == 0) | (vf > p["Brkpt"]), NO_LIMIT, ramp)


def lvg(v, p):
    """Low-voltage active current gain (0 .. 1)."""
    return jnp.clip((v - p["Lvpnt0"]) / (p["Lvpnt1"] - p["Lvpnt0"]), 0.0, 1.0)


def _init(v, s, p) -> dict:
    """States and commands from the terminal voltage and the delivered power (MBASE)."""
    vm = np.abs(v)
    gain = np.asarray(lvg(vm, p))
    if np.any(gain <= 0):
        raise ValueError("REGCA1: terminal voltage below Lvpnt0 at the power flow (no active "
                         "current can be delivered)")  # fmt: skip
    ip = s.real / vm / gain
    iq = s.imag / vm
    hv = np.asarray(p["Khv"]) * np.maximum(vm - np.asarray(p["Volim"]), 0.0)
    if np.any(iq - hv < np.asarray(p["Iolim"]) - 1e-12):
        raise ValueError("REGCA1: the solved reactive current lies below Iolim (the "
                         "high-voltage management would clamp it)")  # fmt: skip
    if np.any(ip > np.asarray(lvpl(vm, p))):
        raise ValueError("REGCA1: the solved active current exceeds the LVPL limit")
    iq_state = iq + hv
    return {"Iq_lag": iq_state, "Ip_lag": ip, "V_lvpl": vm, "Ipout": s.real / vm, "Iqout": iq,
            "ipcmd": ip, "iqcmd": iq_state}  # fmt: skip


def _derivatives(xs, v, ipcmd, iqcmd, p):
    iq, ip, vf = xs
    d_iq = jnp.clip((iqcmd - iq) / p["Tg"], p["Iqrmin"], p["Iqrmax"])
    limit = lvpl(vf, p)
    d_ip = jnp.minimum((ipcmd - ip) / p["Tg"], p["Rrpwr"])
    d_ip = jnp.where(ip > limit, (limit - ip) / CLAMP, d_ip)
    return d_iq, non_windup(d_ip, ip, -NO_LIMIT, limit), (v - vf) / p["Tfltr"]


def _current(xs, v, p):
    """(Ipout, Iqout): active and reactive current delivered (pu on MBASE)."""
    iq, ip, _ = xs
    iq_out = jnp.maximum(iq - p["Khv"] * jnp.maximum(v - p["Volim"], 0.0), p["Iolim"])
    return ip * lvg(v, p), iq_out


def _readings(values: dict) -> list[str]:
    out = []
    if values["Accel"] != 0:
        out.append(f"Accel = {values['Accel']:g} not used (a network-solution acceleration "
                   "factor; the DAE is solved simultaneously)")  # fmt: skip
    if values["LVPLSW"] == 1:
        out.append("the LVPL limit carries Ip down when it falls below it (state clamp, 1 ms)")
    return out


REGCA1 = DeviceModel(
    name="REGCA1",
    role="converter",
    params=PARAMS,
    states=STATES,
    source="PSS(R)E Model Library, REGCA1; WECC REGC_A (2014)",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    current=_current,
    readings=_readings,
)
