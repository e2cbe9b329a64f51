"""REECA1: renewable energy electrical control model A (WECC REEC_A).

Sources: Siemens PTI, *PSS(R)E Model Library*, "REECA1" (ICONs IREG, PFFLAG, VFLAG, QFLAG,
PFLAG, PQFLAG; CONs Vdip, Vup, Trv, dbd1, dbd2, Kqv, Iqh1, Iql1, Vref0, Iqfrz, Thld, Thld2, Tp,
QMax, QMin, VMAX, VMIN, Kqp, Kqi, Kvp, Kvi, Vref1, Tiq, dPmax, dPmin, PMAX, PMIN, Imax, Tpord,
Vq1, Iq1 .. Vq4, Iq4, Vp1, Ip1 .. Vp4, Ip4); WECC Renewable Energy Modeling Task Force, "WECC
Second Generation Renewable Energy System Models" (REEC_A specification, 2014). Per unit on
MBASE; time in s. It drives its converter's (REGCA1's) commands Ipcmd, Iqcmd (Iqcmd > 0
delivers reactive power); its references Pref, Qref come from the plant control (REPCA1) or
stay at their initial values.

    Vf:  Trv dVf/dt = Vt - Vf                          (voltage filter; VDL tables, Iqinj)
    Pef: Tp dPef/dt = Pe - Pef                          (PFFLAG = 1: Q = Pef tan(pfaref))
    Qlim = clip(PFFLAG ? Pef tan(pfaref) : Qref, QMin, QMax)
    VFLAG = 1: Vcmd = clip(Kqp (Qlim - Qe) + xq, VMIN, VMAX),  dxq/dt = Kqi (Qlim - Qe)
    VFLAG = 0: Vcmd = clip(Vref1 + Qlim, VMIN, VMAX)
    QFLAG = 1: Iqc = clip(Kvp (Vcmd - Vf) + xv, Iqmin, Iqmax),  dxv/dt = Kvi (Vcmd - Vf)
    QFLAG = 0: Iqc = Iqf,  Tiq dIqf/dt = Qlim / max(Vt, 0.01) - Iqf
    Iqinj = clip(Kqv db(Vref0 - Vf, dbd1, dbd2), Iql1, Iqh1) during a voltage dip (Vt < Vdip or
            Vt > Vup), after it for |Thld| s: Iqfrz (Thld > 0) or the same law (Thld < 0); else 0
    Iqcmd = clip(Iqc + Iqinj, Iqmin, Iqmax)
    Psel = Pref (PFLAG = 0) or Pref omega (PFLAG = 1; omega = 1, no drive train here)
    Pord: Tpord dPord/dt = Psel - Pord, dPmin <= dPord/dt <= dPmax, PMIN <= Pord <= PMAX
    Ipcmd = clip(Pord / max(Vt, 0.01), 0, Ipmax)
    PQFLAG = 0 (Q priority): Iqmax = min(VDL1(Vf), Imax), Ipmax = sqrt(Imax^2 - Iqcmd^2)
    PQFLAG = 1 (P priority): Ipmax = min(VDL2(Vf), Imax), Iqmax = sqrt(Imax^2 - Ipcmd^2)
    Iqmin = -Iqmax; Ipmax is held for Thld2 s after a dip at its value at the dip's end.

During the dip the integrators xq, xv and the lags Iqf, Pord are frozen (derivative 0); xq
(xv) integrates only where VFLAG = 1 (QFLAG = 1), where its loop is used. db is
the continuous deadband (0 inside [dbd1, dbd2], u - dbd2 above, u - dbd1 below). VDL1, VDL2:
piecewise linear through their four points, flat beyond the ends.

Readings (``readings``; the specification's state machine written as a DAE): the time since the
last dip ended is a state ``tpost`` (rate 1 outside a dip, reset to 0 within ``RESET`` = 1 ms in a
dip, limited to [0, max(|Thld|, Thld2) + 1]); the Ipmax held after a dip is a state ``Ipmh``
that follows Ipmax with time constant ``RESET`` outside the hold. The dPmin/dPmax rate limits act
on Pord's derivative. Thld < 0 keeps Kqv db(..) acting for |Thld| s after the dip (ANDES 2.0.0's
reading too). VFLAG = 0 sends Vref1 + Qlim to the voltage loop and QFLAG = 1 subtracts Vf after
the VFLAG switch (ANDES 2.0.0 subtracts it only for VFLAG = 0); neither path is exercised by the
cross-check data (QFLAG = 0). ANDES 2.0.0 departs in two places that the data do exercise only
with constant references: a 0.02 s lag on Pref before Pord, and tracking anti-windup PI blocks.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from models.devices.base import DeviceModel, lag, non_windup, problems_where

ICONS = ("IREG", "PFFLAG", "VFLAG", "QFLAG", "PFLAG", "PQFLAG")
CONS = ("Vdip", "Vup", "Trv", "dbd1", "dbd2", "Kqv", "Iqh1", "Iql1", "Vref0", "Iqfrz", "Thld",
        "Thld2", "Tp", "QMax", "QMin", "VMAX", "VMIN", "Kqp", "Kqi", "Kvp", "Kvi", "Vref1", "Tiq",
        "dPmax", "dPmin", "PMAX", "PMIN", "Imax", "Tpord", "Vq1", "Iq1", "Vq2", "Iq2", "Vq3",
        "Iq3", "Vq4", "Iq4", "Vp1", "Ip1", "Vp2", "Ip2", "Vp3", "Ip3", "Vp4", "Ip4")  # fmt: skip
STATES = ("Vrv", "Pef", "xq", "Iqf", "xv", "Pord", "tpost", "Ipmh")
"""Vf of the module docstring is ``Vrv``."""
RESET = 1e-3
"""Time constant (s) of the dip timer's reset and of the held Ipmax's tracking."""
V_FLOOR = 0.01
"""Lower bound on the voltage that divides power into current (pu)."""
FLAGS = ("PFFLAG", "VFLAG", "QFLAG", "PFLAG", "PQFLAG")


def deadband(u, low, high):
    """Continuous deadband: 0 inside [low, high], u - high above, u - low below."""
    return jnp.where(u > high, u - high, jnp.where(u < low, u - low, 0.0))


def _table(v, p, kind: str):
    xs = jnp.stack([p[f"V{kind}{k}"] for k in range(1, 5)], axis=-1)
    ys = jnp.stack([p[f"I{kind}{k}"] for k in range(1, 5)], axis=-1)
    v = jnp.asarray(v)
    return jnp.vectorize(jnp.interp, signature="(),(n),(n)->()")(v, xs, ys)


def _check(p) -> list:
    out = []
    for flag in FLAGS:
        out += problems_where(~np.isin(p[flag], (0, 1)), flag, "must be 0 or 1")
    out += problems_where(p["IREG"] != 0, "IREG", "must be 0 (a remote bus is not implemented)")
    for name in ("Tpord",):
        out += problems_where(p[name] <= 0, name, "must be > 0 (s)")
    for name in ("Trv", "Tp", "Tiq"):
        out += problems_where(p[name] < 0, name, "must be >= 0 (s)")
    out += problems_where(p["Imax"] <= 0, "Imax", "must be > 0 (pu)")
    out += problems_where(~(p["Vup"] > p["Vdip"]), "Vup", "must be > Vdip")
    for kind in ("q", "p"):
        v = np.stack([p[f"V{kind}{k}"] for k in range(1, 5)], axis=-1)
        i = np.stack([p[f"I{kind}{k}"] for k in range(1, 5)], axis=-1)
        bad = np.any(np.diff(v, axis=-1) <= 0, axis=-1) | np.any(np.diff(i, axis=-1) < 0, axis=-1)
        out += problems_where(bad, f"V{kind}1", f"VDL{1 if kind == 'q' else 2} points must "
                              "have increasing voltages and non-decreasing currents")  # fmt: skip
    return out


def _hold_max(p):
    return jnp.maximum(jnp.abs(p["Thld"]), p["Thld2"]) + 1.0


def _terms(xs, sig, pref, qref, p) -> dict:
    """Every algebraic signal of the block diagram (module docstring)."""
    vf, pef, xq, iqf, xv, pord, tpost, ipmh = xs
    vt = sig["vt"]
    vp = jnp.maximum(vt, V_FLOOR)
    dip = (vt < p["Vdip"]) | (vt > p["Vup"])
    post1 = ~dip & (tpost < jnp.abs(p["Thld"]))
    post2 = ~dip & (tpost < p["Thld2"])
    iqv = p["Kqv"] * deadband(p["Vref0_eff"] - vf, p["dbd1"], p["dbd2"])
    after = jnp.where(post1, jnp.where(p["Thld"] > 0, p["Iqfrz"], iqv), 0.0)
    iqinj = jnp.clip(jnp.where(dip, iqv, after), p["Iql1"], p["Iqh1"])
    qsel = jnp.where(p["PFFLAG"] == 1, pef * jnp.tan(p["pfaref"]), qref)
    qlim = jnp.clip(qsel, p["QMin"], p["QMax"])
    q_err = qlim - sig["qe"]
    vcmd = jnp.where(p["VFLAG"] == 1, jnp.clip(p["Kqp"] * q_err + xq, p["VMIN"], p["VMAX"]),
                     jnp.clip(p["Vref1"] + qlim, p["VMIN"], p["VMAX"]))  # fmt: skip
    v_err = vcmd - vf
    pord_c = jnp.clip(pord, p["PMIN"], p["PMAX"])
    ip_want = pord_c / vp
    imax2 = p["Imax"] ** 2
    qprio = p["PQFLAG"] == 0
    # Q priority: Iq limits from VDL1, then Ip's from what is left
    iqmax_q = jnp.minimum(_table(vf, p, "q"), p["Imax"])
    # P priority: Ip limits from VDL2 (held after a dip), then Iq's from what is left
    ipmax_p_live = jnp.minimum(_table(vf, p, "p"), p["Imax"])
    ipmax_p = jnp.where(post2, ipmh, ipmax_p_live)
    ipcmd_p = jnp.clip(ip_want, 0.0, ipmax_p)
    iqmax_p = jnp.sqrt(jnp.maximum(imax2 - ipcmd_p**2, 0.0))
    iqmax = jnp.where(qprio, iqmax_q, iqmax_p)
    iqc = jnp.where(p["QFLAG"] == 1, jnp.clip(p["Kvp"] * v_err + xv, -iqmax, iqmax), iqf)
    iqcmd = jnp.clip(iqc + iqinj, -iqmax, iqmax)
    ipmax_q_live = jnp.sqrt(jnp.maximum(imax2 - iqcmd**2, 0.0))
    ipmax_q = jnp.where(post2, ipmh, ipmax_q_live)
    ipcmd = jnp.where(qprio, jnp.clip(ip_want, 0.0, ipmax_q), ipcmd_p)
    return {"vp": vp, "dip": dip, "post2": post2, "qlim": qlim, "q_err": q_err, "v_err": v_err,
            "iqmax": iqmax, "ipmax_live": jnp.where(qprio, ipmax_q_live, ipmax_p_live),
            "ipcmd": ipcmd, "iqcmd": iqcmd}  # fmt: skip


def _output(xs, sig, pref, qref, p):
    """(Ipcmd, Iqcmd) for the converter (pu on MBASE)."""
    t = _terms(xs, sig, pref, qref, p)
    return t["ipcmd"], t["iqcmd"]


def _derivatives(xs, sig, pref, qref, p):
    vf, pef, xq, iqf, xv, pord, tpost, ipmh = xs
    t = _terms(xs, sig, pref, qref, p)
    dip = t["dip"]
    d_vf, _ = lag(vf, sig["vt"], p["Trv"])
    d_pef, _ = lag(pef, sig["pe"], p["Tp"])
    on_q = ~dip & (p["VFLAG"] == 1)  # the Q loop's integrator acts only where it is used
    on_v = ~dip & (p["QFLAG"] == 1)
    d_xq = non_windup(jnp.where(on_q, p["Kqi"] * t["q_err"], 0.0), xq, p["VMIN"], p["VMAX"])
    d_iqf, _ = lag(iqf, t["qlim"] / t["vp"], p["Tiq"])
    d_iqf = jnp.where(dip, 0.0, d_iqf)
    d_xv = non_windup(jnp.where(on_v, p["Kvi"] * t["v_err"], 0.0), xv, -t["iqmax"], t["iqmax"])
    psel = pref  # PFLAG = 1 multiplies by the speed, 1 without a drive train
    d_pord = jnp.clip((psel - pord) / p["Tpord"], p["dPmin"], p["dPmax"])
    d_pord = non_windup(jnp.where(dip, 0.0, d_pord), pord, p["PMIN"], p["PMAX"])
    top = _hold_max(p)
    d_tpost = non_windup(jnp.where(dip, -top / RESET, 1.0), tpost, 0.0, top)
    d_ipmh = jnp.where(t["post2"], 0.0, (t["ipmax_live"] - ipmh) / RESET)
    return d_vf, d_pef, d_xq, d_iqf, d_xv, d_pord, d_tpost, d_ipmh


def _init(sig, p) -> dict:
    """States and the references Pref, Qref holding the converter's initial commands ``sig``
    (``vt``, ``pe``, ``qe``, ``ipcmd``, ``iqcmd``; MBASE)."""
    p = {k: np.asarray(v, dtype=float) for k, v in p.items()}
    vt, pe, qe = (np.asarray(sig[k], dtype=float) for k in ("vt", "pe", "qe"))
    ipcmd, iqcmd = np.asarray(sig["ipcmd"], float), np.asarray(sig["iqcmd"], float)
    if np.any((vt < p["Vdip"]) | (vt > p["Vup"])):
        raise ValueError("REECA1: the solved terminal voltage lies outside [Vdip, Vup] (a "
                         "voltage dip at the initial point)")  # fmt: skip
    vp = np.maximum(vt, V_FLOOR)
    vref0 = np.where(p["Vref0"] == 0, vt, p["Vref0"])
    iqinj0 = 0.0
    # the Q value that makes the Q path deliver iqcmd with zero errors
    q_needed = np.where(p["QFLAG"] == 1, np.where(p["VFLAG"] == 1, qe, vt - p["Vref1"]),
                        (iqcmd - iqinj0) * vp)  # fmt: skip
    pfaref = np.arctan2(q_needed, pe)
    qref = q_needed
    if np.any((q_needed < p["QMin"]) | (q_needed > p["QMax"])):
        raise ValueError("REECA1: the initial reactive power lies outside [QMin, QMax]")
    pord = ipcmd * vp
    if np.any((pord < p["PMIN"]) | (pord > p["PMAX"])):
        raise ValueError("REECA1: the initial active power order lies outside [PMIN, PMAX]")
    derived = {"Vref0_eff": vref0, "pfaref": pfaref}
    states = {"Vrv": vt, "Pef": pe, "xq": vt, "Iqf": iqcmd, "xv": iqcmd, "Pord": pord,
              "tpost": np.asarray(_hold_max(p)), "Ipmh": np.zeros_like(vt)}  # fmt: skip
    xs = tuple(jnp.asarray(states[s]) for s in STATES)
    t = _terms(xs, {"vt": vt, "pe": pe, "qe": qe}, pord, qref, {**p, **derived})
    states["Ipmh"] = np.asarray(t["ipmax_live"])
    if not np.allclose(np.asarray(t["ipcmd"]), ipcmd, atol=1e-10) or not np.allclose(
        np.asarray(t["iqcmd"]), iqcmd, atol=1e-10
    ):
        raise ValueError("REECA1: the current limits (Imax, VDL1, VDL2) bind at the initial "
                         "point")  # fmt: skip
    return {**states, **derived, "pref": pord, "qref": qref}


def _readings(values: dict) -> list[str]:
    out = ["the voltage-dip state machine is written with a dip timer state (reset in 1 ms) and, "
           "where Thld2 > 0, a held-Ipmax state (1 ms tracking)"]  # fmt: skip
    if values["Thld"] < 0:
        out.append(f"Thld = {values['Thld']:g} < 0: Kqv db(Vref0 - Vf) keeps acting for "
                   f"{-values['Thld']:g} s after a dip")  # fmt: skip
    if values["Vref0"] == 0:
        out.append("Vref0 = 0 read as the initial terminal voltage")
    if values["PFLAG"] == 1:
        out.append("PFLAG = 1 multiplies Pref by a speed of 1 (no drive-train model)")
    return out


REECA1 = DeviceModel(
    name="REECA1",
    role="electrical",
    params=ICONS + CONS,
    states=STATES,
    source="PSS(R)E Model Library, REECA1; WECC REEC_A (2014)",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    output=_output,
    readings=_readings,
)
