"""REPCA1: renewable energy plant controller model A (WECC REPC_A).

Sources: Siemens PTI, *PSS(R)E Model Library*, "REPCA1" (ICONs IREG, BUS1, BUS2, CKTID,
VCFlag, RefFlag, Fflag; CONs Tfltr, Kp, Ki, Tft, Tfv, Vfrz, Rc, Xc, Kc, emax, emin, dbd1, dbd2,
Qmax, Qmin, Kpg, Kig, Tp, fdbd1, fdbd2, femax, femin, Pmax, Pmin, Tg, Ddn, Dup); WECC Renewable
Energy Modeling Task Force, "WECC Second Generation Renewable Energy System Models" (REPC_A
specification, 2014). Outputs Pref, Qref of its electrical control (REECA1), per unit on MBASE.

Inputs (``PLANT_SIGNALS``, built by the assembler): the regulated bus's voltage (IREG = 0: the
converter's terminal) and the branch BUS1 -> BUS2 (its current and power measured at BUS1,
flowing towards BUS2, the branch's own pi model with its tap; 0 without a branch).

    Vc = |Vreg - (Rc + j Xc) Ibranch|  (VCFlag = 1)   or   Vreg + Kc Qbranch  (VCFlag = 0)
    Tfltr dVcf/dt = Vc - Vcf,      Tfltr dQf/dt = Qbranch - Qf
    e = clip(db(RefFlag ? Vref - Vcf : Qref_plant - Qf, dbd1, dbd2), emin, emax)
    y = clip(Kp e + xq, Qmin, Qmax),  dxq/dt = Ki e (non-windup at Qmin, Qmax; 0 while
        Vreg < Vfrz: the integrator frozen)
    Qref = (1 + s Tft) / (1 + s Tfv) y                  (state xl)
    Tp dPf/dt = Pbranch - Pf
    Perr = clip(Plant_pref - Pf + droop(f), femin, femax),
        droop = Ddn db(1 - f) where db(1 - f) < 0 (over-frequency), Dup db(1 - f) otherwise
    Pi = clip(Kpg Perr + xp, Pmin, Pmax),  dxp/dt = Kig Perr (non-windup at Pmin, Pmax)
    Tg dPg/dt = Pi - Pg;   Pref = Pg (Fflag = 1), the initial Pref (Fflag = 0, xp then held)

Frequency f (pu) of the regulated bus (reading; PSS/E takes its network's bus frequency): the
derivative of the bus-voltage angle through a lag and a washout, f = 1 + s / (omega_n (1 + s
TW_FREQ)) 1 / (1 + s TF_FREQ) theta (states th, fw; TF_FREQ = 0.02 s, TW_FREQ = 0.1 s, the
defaults of ANDES's BusFreq, which ANDES's REPCA1 adds at its bus and reads). th follows the
bus angle unwrapped: its lag reads the bus voltage turned back by th, so a bus angle passing
+-pi is no frequency spike (as PVD1's measurement). The references Vref, Qref_plant,
Plant_pref are the initial Vc, Qbranch and Pbranch. Rc, Xc are per unit on the system base (the
branch's own base); Qbranch, Pbranch on MBASE.

ANDES 2.0.0 departs in three ways (see ``tests/test_psse_crosscheck.py``): Vfrz holds the PI's
input (the error) at its last value instead of freezing the integrator; its branch current is
(V1 - V2) / (r + j x) without the branch's tap; and its outputs are increments added to REECA1's
own references (the same at the initial point and within limits).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from models.devices.base import DeviceModel, lag, lead_lag, non_windup, problems_where
from models.devices.reeca1 import deadband

ICONS = ("IREG", "BUS1", "BUS2", "CKTID", "VCFlag", "RefFlag", "Fflag")
CONS = ("Tfltr", "Kp", "Ki", "Tft", "Tfv", "Vfrz", "Rc", "Xc", "Kc", "emax", "emin", "dbd1",
        "dbd2", "Qmax", "Qmin", "Kpg", "Kig", "Tp", "fdbd1", "fdbd2", "femax", "femin", "Pmax",
        "Pmin", "Tg", "Ddn", "Dup")  # fmt: skip
STATES = ("Vcf", "Qbf", "xqp", "xlq", "Pbf", "xpp", "Pg", "th", "fw")
"""Vcf, Qf, xq, xl, Pf, xp, Pg, th, fw of the module docstring (named apart from REECA1's)."""
TF_FREQ = 0.02
"""Lag on the bus angle before its derivative (s)."""
TW_FREQ = 0.1
"""Washout (derivative) time constant of the bus frequency (s)."""
PLANT_SIGNALS = ("vreg_r", "vreg_i", "ibr_r", "ibr_i", "pbr", "qbr")
"""Regulated bus voltage (pu), branch current at BUS1 (pu, system base) and branch power at BUS1
(pu on MBASE), all from the network's solution."""


def _check(p) -> list:
    out = []
    for flag in ("VCFlag", "RefFlag", "Fflag"):
        out += problems_where(~np.isin(p[flag], (0, 1)), flag, "must be 0 or 1")
    out += problems_where(p["IREG"] != 0, "IREG", "must be 0 (a remote bus is not implemented)")
    for name in ("Tfltr", "Tp", "Tg", "Tfv"):
        out += problems_where(p[name] < 0, name, "must be >= 0 (s)")
    out += problems_where(~(p["Qmax"] >= p["Qmin"]), "Qmax", "must be >= Qmin")
    out += problems_where(~(p["Pmax"] >= p["Pmin"]), "Pmax", "must be >= Pmin")
    return out


def _vc(sig, p):
    vreg = jnp.sqrt(sig["vreg_r"] ** 2 + sig["vreg_i"] ** 2)
    dr = sig["vreg_r"] - (p["Rc"] * sig["ibr_r"] - p["Xc"] * sig["ibr_i"])
    di = sig["vreg_i"] - (p["Rc"] * sig["ibr_i"] + p["Xc"] * sig["ibr_r"])
    return jnp.where(p["VCFlag"] == 1, jnp.sqrt(dr**2 + di**2), vreg + p["Kc"] * sig["qbr"])


def _terms(xs, sig, p) -> dict:
    vcf, qf, xq, xl, pf, xp, pg, th, fw = xs
    vreg = jnp.sqrt(sig["vreg_r"] ** 2 + sig["vreg_i"] ** 2)
    err = jnp.where(p["RefFlag"] == 1, p["Vref"] - vcf, p["Qref_plant"] - qf)
    e = jnp.clip(deadband(err, p["dbd1"], p["dbd2"]), p["emin"], p["emax"])
    y = jnp.clip(p["Kp"] * e + xq, p["Qmin"], p["Qmax"])
    _, qref = lead_lag(xl, y, p["Tft"], p["Tfv"])
    freq = 1.0 + (th - fw) / (TW_FREQ * 2.0 * jnp.pi * p["fn"])
    fdb = deadband(1.0 - freq, p["fdbd1"], p["fdbd2"])
    droop = jnp.where(fdb < 0, p["Ddn"] * fdb, p["Dup"] * fdb)
    perr = jnp.clip(p["Plant_pref"] - pf + droop, p["femin"], p["femax"])
    pi = jnp.clip(p["Kpg"] * perr + xp, p["Pmin"], p["Pmax"])
    _, pg_out = lag(pg, pi, p["Tg"])
    pref = jnp.where(p["Fflag"] == 1, pg_out, p["Pref0"])
    return {"vreg": vreg, "e": e, "y": y, "qref": qref, "perr": perr, "pi": pi, "pref": pref,
            "freq": freq}  # fmt: skip


def _output(xs, sig, p):
    """(Pref, Qref) of the electrical control (pu on MBASE)."""
    t = _terms(xs, sig, p)
    return t["pref"], t["qref"]


def _derivatives(xs, sig, p):
    vcf, qf, xq, xl, pf, xp, pg, th, fw = xs
    t = _terms(xs, sig, p)
    d_vcf, _ = lag(vcf, _vc(sig, p), p["Tfltr"])
    d_qf, _ = lag(qf, sig["qbr"], p["Tfltr"])
    frozen = t["vreg"] < p["Vfrz"]
    d_xq = non_windup(jnp.where(frozen, 0.0, p["Ki"] * t["e"]), xq, p["Qmin"], p["Qmax"])
    d_xl, _ = lead_lag(xl, t["y"], p["Tft"], p["Tfv"])
    d_pf, _ = lag(pf, sig["pbr"], p["Tp"])
    d_xp = non_windup(jnp.where(p["Fflag"] == 1, p["Kig"] * t["perr"], 0.0), xp, p["Pmin"],
                      p["Pmax"])  # fmt: skip
    d_pg, _ = lag(pg, t["pi"], p["Tg"])
    return (d_vcf, d_qf, d_xq, d_xl, d_pf, d_xp, d_pg, angle_ahead(sig, th) / TF_FREQ,
            (th - fw) / TW_FREQ)  # fmt: skip


def angle_ahead(sig, th):
    """The bus angle minus ``th``, in (-pi, pi]: the bus voltage turned back by ``th``, so the
    measurement runs on unwrapped through a bus angle passing +-pi."""
    sin, cos = jnp.sin(th), jnp.cos(th)
    vr, vi = sig["vreg_r"], sig["vreg_i"]
    return jnp.arctan2(vi * cos - vr * sin, vr * cos + vi * sin)


def _init(sig, pref, qref, p) -> dict:
    """States holding the electrical control's initial references ``pref``, ``qref``."""
    p = {k: np.asarray(v, dtype=float) for k, v in p.items()}
    sig = {k: np.asarray(v, dtype=float) for k, v in sig.items()}
    pref, qref = np.asarray(pref, float), np.asarray(qref, float)
    vc = np.asarray(_vc(sig, p))
    theta = np.arctan2(sig["vreg_i"], sig["vreg_r"])
    for name, value, low, high in (("Qref", qref, p["Qmin"], p["Qmax"]),
                                   ("Pref", pref, p["Pmin"], p["Pmax"])):  # fmt: skip
        if np.any((value < low) | (value > high)):
            raise ValueError(f"REPCA1: the initial {name} lies outside its plant limits")
    return {"Vcf": vc, "Qbf": sig["qbr"], "xqp": qref, "xlq": qref, "Pbf": sig["pbr"], "xpp": pref,
            "Pg": pref, "th": theta, "fw": theta, "Vref": vc, "Qref_plant": sig["qbr"],
            "Plant_pref": sig["pbr"], "Pref0": pref}  # fmt: skip


def _readings(values: dict) -> list[str]:
    out = [f"bus frequency: the bus angle's derivative through a {TF_FREQ:g} s lag and a "
           f"{TW_FREQ:g} s washout (ANDES's BusFreq)"]  # fmt: skip
    if values["Rc"] != 0 or values["Xc"] != 0:
        out.append("Rc, Xc read per unit on the system base")
    if values["Fflag"] == 0:
        out.append("Fflag = 0: the plant's active-power path does not act (Pref constant)")
    return out


REPCA1 = DeviceModel(
    name="REPCA1",
    role="plant",
    params=ICONS + CONS,
    states=STATES,
    source="PSS(R)E Model Library, REPCA1; WECC REPC_A (2014)",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    output=_output,
    readings=_readings,
)
