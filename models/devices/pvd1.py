"""PVD1: WECC distributed (and small) PV model: the whole resource in one model, a current source
with its own P and Q control, frequency droop and voltage and frequency trip fractions.

Sources: Ellis, Behnke, Elliott, *Generic Solar Photovoltaic System Dynamic Simulation Model
Specification*, Sandia SAND2013-8876 (2013), the PVD1 model (block diagram and parameter table);
WECC Renewable Energy Modeling Task Force, "WECC PV Power Plant Dynamic Modeling Guide" (2014),
its distributed-PV section; Siemens PTI, *PSS(R)E Model Library*, "PVD1". Record order (reading,
see ``readings``): ICONs IGREG, Pqflag; CONs Xc, Qmx, Qmn, v0, v1, dqdv, fdbd, Ddn, Imax, Vt0,
Vt1, Vt2, Vt3, Vrflag, Ft0, Ft1, Ft2, Ft3, Frflag, Tg, Tf, Vtmax, Lvpnt1, Lvpnt0, Qmin, Khv
(the specification's parameter table in its order). Per unit on MBASE; time in s; Ft0..Ft3 in
Hz; fdbd and Ddn per unit of frequency (fdbd <= 0, Ddn >= 0).

Interface (role ``converter``, no electrical or plant control): the injected current is
(Ipout - j Iqout) V / |V|, so P = |V| Ipout and Q = |V| Iqout (Q > 0 delivered), as REGCA1.
With vt = |V| and vp = max(vt, 0.01):

    frequency (Hz): f = fn + (th - fw) / (2 pi TW_FREQ),  Tf dth/dt = theta - th,
                    TW_FREQ dfw/dt = th - fw    (theta the bus-voltage angle: a lag and a washout)
    Pdrp = Ddn min(0, (1 - f/fn) - fdbd)                     (over-frequency droop, pu)
    Pcmd = max(Pref + Pdrp, 0)
    Vcomp = |V + j Xc I| = |vt + Xc Iq + j Xc Ip|       (voltage behind the feeder reactance Xc)
    Qdrp = clip(dqdv (Vcomp - v0), 0, max(Qmx - Qref, 0))   below v0           (dqdv < 0)
           clip(dqdv (Vcomp - v1), min(Qmn - Qref, 0), 0)   above v1,  0 in [v0, v1]
    Qcmd = Qref + Qdrp
    Ipul = Pcmd / vp,  Iqul = Qcmd / vp
    Pqflag = 1 (P priority): Ipc = clip(Ipul, 0, Imax), Iqc = clip(Iqul, +-sqrt(Imax^2 - Ipc^2))
    Pqflag = 0 (Q priority): Iqc = clip(Iqul, +-Imax), Ipc = clip(Ipul, 0, sqrt(Imax^2 - Iqc^2))
    Fvl = clip((vt - Vt0)/(Vt1 - Vt0), 0, 1),  Fvh = clip((Vt3 - vt)/(Vt3 - Vt2), 0, 1)
    Ffl = clip((f - Ft0)/(Ft1 - Ft0), 0, 1),   Ffh = clip((Ft3 - f)/(Ft3 - Ft2), 0, 1)
    each F latched (below): Fe = min(F, m) + r max(F - m, 0),  dm/dt = min(F - m, 0) / T_LATCH
        (r = Vrflag for Fvl, Fvh; r = Frflag for Ffl, Ffh; m its lowest value so far)
    Tg dIp/dt = Fvle Fvhe Ffle Ffhe Ipc - Ip,   Tg dIq/dt = Fvle Fvhe Ffle Ffhe Iqc - Iq
    Ipout = Ip clip((vt - Lvpnt0)/(Lvpnt1 - Lvpnt0), 0, 1)   (low-voltage active current logic)
    Iqout = Iq - min(Khv max(vt - Vtmax, 0), max(Iq - Qmin, 0))  (high-voltage reactive logic)

Readings (each also in ``readings``):

* Trip fractions: the specification's fractions of the resource that remain connected, latched
  at the lowest value seen (Vrflag = 0, Frflag = 0: latching); 0 < r <= 1 lets the fraction
  r of what the characteristic has recovered since its lowest point reconnect, r = 1 is
  self-resetting (Fe = F). The lowest value ``m`` is a state that follows F down with time
  constant T_LATCH (1 ms) and never rises, so every method integrates it as an ODE (relays as
  state events are a later issue). The four fractions multiply both current commands after
  the current limits and before the Tg lag.
* Frequency: the bus frequency (the angle's derivative, PSS/E's network bus frequency) through
  the transducer lag Tf; the derivative is a washout of time constant TW_FREQ = 0.02 s (the
  value of ANDES's BusFreq of the cross-check case). The lag's input theta - th is the angle of
  the bus voltage turned back by th, so th runs on unwrapped where the bus angle passes +-pi
  (it does when the frequency stays off nominal: 0.3 Hz for 1.7 s; a wrapped angle would read
  as a frequency spike and trip the PV). fn is the network's frequency (Hz).
* Qmx, Qmn bound the droop characteristic (the command saturates where the droop brings it to
  Qmx below v0 or to Qmn above v1, as the specification's Q-V curve is drawn); Qref itself is
  not limited (ANDES 2.0.0 reads them so too; its cross-check data solve at Q = -0.3387 pu,
  below Qmn = -0.33).
* Pref, Qref are the power-flow P and Q (the voltage behind Xc must lie in [v0, v1] there);
  Pcmd >= 0 (the resource does not absorb active power).
* IGREG (remote bus for the droop response) must be 0: the terminal bus.

ANDES 2.0.0 departs (``tests/test_psse_crosscheck.py``): its PVD1 has no latch (self-resetting
fractions whatever Vrflag, Frflag; ANDES's docstring: "recovery latching is yet to be
implemented"), takes fdbd in Hz and Ddn in pu/Hz, has separate lags Tip, Tiq and no Tf, Vtmax,
Lvpnt1, Lvpnt0, Qmin, Khv (its frequency is its BusFreq device's), and writes the droop outside
[v0, v1] differently (not reached in the cross-check events while any PV stays connected:
Vt0 > v0). The cross-check data written from its spreadsheet convert fdbd, Ddn and take Tg = Tip
= Tiq, Tf = its BusFreq's Tf and Khv = 0, Lvpnt0 = 0, Lvpnt1 = 0.01, Qmin = -Imax.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from models.devices.base import DeviceModel, InitialValueError, problems_where

ICONS = ("IGREG", "Pqflag")
CONS = ("Xc", "Qmx", "Qmn", "v0", "v1", "dqdv", "fdbd", "Ddn", "Imax", "Vt0", "Vt1", "Vt2", "Vt3",
        "Vrflag", "Ft0", "Ft1", "Ft2", "Ft3", "Frflag", "Tg", "Tf", "Vtmax", "Lvpnt1", "Lvpnt0",
        "Qmin", "Khv")  # fmt: skip
STATES = ("Ipv", "Iqv", "th", "fw", "mvl", "mvh", "mfl", "mfh")
"""Ip, Iq, th, fw of the module docstring and the lowest values of Fvl, Fvh, Ffl, Ffh."""
INPUTS = ("vr", "vi")
"""The terminal bus voltage's real and imaginary parts (pu, network frame) its derivatives read
(``DeviceModel.inputs``; at ``init`` the network's frequency ``fn`` in Hz instead)."""
TW_FREQ = 0.02
"""Washout (derivative) time constant of the bus frequency estimate (s)."""
T_LATCH = 1e-3
"""Time constant (s) with which a latch state follows its trip fraction down."""
V_FLOOR = 0.01
"""Lower bound on the voltage that divides power into current (pu)."""


def _check(p) -> list:
    out = problems_where(p["IGREG"] != 0, "IGREG", "must be 0 (a remote bus is not implemented)")
    out += problems_where(~np.isin(p["Pqflag"], (0, 1)), "Pqflag", "must be 0 or 1")
    out += problems_where(p["Tg"] <= 0, "Tg", "must be > 0 (s)")
    out += problems_where(p["Tf"] <= 0, "Tf", "must be > 0 (s)")
    out += problems_where(p["Imax"] <= 0, "Imax", "must be > 0 (pu)")
    out += problems_where(~(p["Qmx"] >= p["Qmn"]), "Qmx", "must be >= Qmn")
    out += problems_where(~(p["v1"] >= p["v0"]), "v1", "must be >= v0")
    out += problems_where(p["dqdv"] > 0, "dqdv", "must be <= 0 (a droop)")
    out += problems_where(p["fdbd"] > 0, "fdbd", "must be <= 0 (over-frequency deadband, pu)")
    out += problems_where(p["Ddn"] < 0, "Ddn", "must be >= 0")
    for lo, hi, what in (
        ("Vt0", "Vt1", "Vt"),
        ("Vt1", "Vt2", "Vt"),
        ("Vt2", "Vt3", "Vt"),
        ("Ft0", "Ft1", "Ft"),
        ("Ft1", "Ft2", "Ft"),
        ("Ft2", "Ft3", "Ft"),
    ):
        out += problems_where(~(p[hi] > p[lo]), hi, f"must be > {lo} ({what} points increase)")
    for flag in ("Vrflag", "Frflag"):
        out += problems_where(~((p[flag] >= 0) & (p[flag] <= 1)), flag, "must lie in [0, 1]")
    out += problems_where(~(p["Lvpnt1"] > p["Lvpnt0"]), "Lvpnt1", "must be > Lvpnt0")
    out += problems_where(p["Khv"] < 0, "Khv", "must be >= 0")
    return out


def _fractions(vt, f_hz, p) -> tuple:
    """(Fvl, Fvh, Ffl, Ffh): the fractions the voltage and frequency characteristics keep."""
    fvl = jnp.clip((vt - p["Vt0"]) / (p["Vt1"] - p["Vt0"]), 0.0, 1.0)
    fvh = jnp.clip((p["Vt3"] - vt) / (p["Vt3"] - p["Vt2"]), 0.0, 1.0)
    ffl = jnp.clip((f_hz - p["Ft0"]) / (p["Ft1"] - p["Ft0"]), 0.0, 1.0)
    ffh = jnp.clip((p["Ft3"] - f_hz) / (p["Ft3"] - p["Ft2"]), 0.0, 1.0)
    return fvl, fvh, ffl, ffh


def latched(f, m, r):
    """A trip fraction ``f`` latched at its lowest value ``m``, recovering by the share ``r``."""
    return jnp.minimum(f, m) + r * jnp.maximum(f - m, 0.0)


def _current(xs, vt, p):
    """(Ipout, Iqout): active and reactive current delivered (pu on MBASE)."""
    ip, iq = xs[0], xs[1]
    gain = jnp.clip((vt - p["Lvpnt0"]) / (p["Lvpnt1"] - p["Lvpnt0"]), 0.0, 1.0)
    cut = jnp.minimum(
        p["Khv"] * jnp.maximum(vt - p["Vtmax"], 0.0), jnp.maximum(iq - p["Qmin"], 0.0)
    )
    return ip * gain, iq - cut


def _q_droop(vcomp, qref, p):
    """Qdrp: the Q-V droop outside [v0, v1], saturating where Qref + Qdrp reaches Qmx / Qmn."""
    low = jnp.clip(p["dqdv"] * (vcomp - p["v0"]), 0.0, jnp.maximum(p["Qmx"] - qref, 0.0))
    high = jnp.clip(p["dqdv"] * (vcomp - p["v1"]), jnp.minimum(p["Qmn"] - qref, 0.0), 0.0)
    return jnp.where(vcomp < p["v0"], low, jnp.where(vcomp > p["v1"], high, 0.0))


def _commands(xs, vt, p) -> dict:
    """The current commands before the trip fractions, the fractions and the frequency (Hz)."""
    ip, iq, th, fw, mvl, mvh, mfl, mfh = xs
    vp = jnp.maximum(vt, V_FLOOR)
    f_hz = p["fn"] + (th - fw) / (2.0 * jnp.pi * TW_FREQ)
    p_drp = p["Ddn"] * jnp.minimum(0.0, (1.0 - f_hz / p["fn"]) - p["fdbd"])
    p_cmd = jnp.maximum(p["pref"] + p_drp, 0.0)
    ipo, iqo = _current(xs, vt, p)
    vcomp = jnp.sqrt((vt + p["Xc"] * iqo) ** 2 + (p["Xc"] * ipo) ** 2)
    q_cmd = p["qref"] + _q_droop(vcomp, p["qref"], p)
    ipul, iqul = p_cmd / vp, q_cmd / vp
    imax2 = p["Imax"] ** 2
    ip_p = jnp.clip(ipul, 0.0, p["Imax"])
    iqm_p = jnp.sqrt(jnp.maximum(imax2 - ip_p**2, 0.0))
    iq_q = jnp.clip(iqul, -p["Imax"], p["Imax"])
    ipm_q = jnp.sqrt(jnp.maximum(imax2 - iq_q**2, 0.0))
    pprio = p["Pqflag"] == 1
    ipc = jnp.where(pprio, ip_p, jnp.clip(ipul, 0.0, ipm_q))
    iqc = jnp.where(pprio, jnp.clip(iqul, -iqm_p, iqm_p), iq_q)
    raw = _fractions(vt, f_hz, p)
    flags = (p["Vrflag"], p["Vrflag"], p["Frflag"], p["Frflag"])
    kept = [latched(f, m, r) for f, m, r in zip(raw, (mvl, mvh, mfl, mfh), flags, strict=True)]
    share = kept[0] * kept[1] * kept[2] * kept[3]
    return {"ipc": ipc, "iqc": iqc, "share": share, "raw": raw, "f_hz": f_hz}


def _derivatives(xs, vt, ipcmd, iqcmd, p, sig):
    """The converter's own commands drive it (``ipcmd``, ``iqcmd`` of the slot are not read)."""
    ip, iq, th, fw, mvl, mvh, mfl, mfh = xs
    c = _commands(xs, vt, p)
    # theta - th from the phasor turned back by th: no wrap where theta passes +-pi
    sin, cos = jnp.sin(th), jnp.cos(th)
    ahead = jnp.arctan2(sig["vi"] * cos - sig["vr"] * sin, sig["vr"] * cos + sig["vi"] * sin)
    d_m = [jnp.minimum(f - m, 0.0) / T_LATCH for f, m in zip(c["raw"], (mvl, mvh, mfl, mfh),
                                                            strict=True)]  # fmt: skip
    return ((c["share"] * c["ipc"] - ip) / p["Tg"], (c["share"] * c["iqc"] - iq) / p["Tg"],
            ahead / p["Tf"], (th - fw) / TW_FREQ, *d_m)  # fmt: skip


def _init(v, s, p, sig) -> dict:
    """States and the references Pref, Qref from the terminal voltage ``v`` and the delivered
    power ``s`` (complex, MBASE); ``sig["fn"]`` the network's frequency (Hz)."""
    p = {k: np.asarray(v_, dtype=float) for k, v_ in p.items()}
    v, s = np.asarray(v, complex), np.asarray(s, complex)
    vt = np.abs(v)
    fn = np.full(vt.shape, float(sig["fn"]))
    problems: list[tuple[int, str]] = []

    def refuse(bad, text) -> None:
        problems.extend((int(i), text.format(i=i)) for i in np.flatnonzero(bad))

    ip0, iq0 = s.real / vt, s.imag / vt
    refuse(vt < p["Lvpnt1"], "terminal voltage below Lvpnt1 at the power flow (the low-voltage "
           "active current logic would cut the solved current)")  # fmt: skip
    refuse((p["Khv"] > 0) & (vt > p["Vtmax"]), "terminal voltage above Vtmax with Khv > 0 at the "
           "power flow (the high-voltage reactive logic would act)")  # fmt: skip
    refuse((vt < p["Vt1"]) | (vt > p["Vt2"]), "terminal voltage outside [Vt1, Vt2] at the power "
           "flow (a voltage trip at the initial point)")  # fmt: skip
    refuse((fn < p["Ft1"]) | (fn > p["Ft2"]), "nominal frequency outside [Ft1, Ft2]")
    refuse(s.real < 0, "active power < 0 at the power flow (PV does not absorb)")
    refuse(np.hypot(ip0, iq0) > p["Imax"] * (1 + 1e-12), "current above Imax at the power flow")
    vcomp0 = np.hypot(vt + p["Xc"] * iq0, p["Xc"] * ip0)
    refuse((vcomp0 < p["v0"]) | (vcomp0 > p["v1"]), "voltage behind Xc outside [v0, v1] at the "
           "power flow (the Q-V droop would act)")  # fmt: skip
    if problems:
        raise InitialValueError("PVD1", problems)
    qref = s.imag
    theta = np.angle(v)
    ones = np.ones_like(vt)
    return {"Ipv": ip0, "Iqv": iq0, "th": theta, "fw": theta, "mvl": ones, "mvh": ones,
            "mfl": ones, "mfh": ones, "Ipout": ip0, "Iqout": iq0, "ipcmd": ip0, "iqcmd": iq0,
            "pref": s.real, "qref": qref, "fn": fn}  # fmt: skip


def _readings(values: dict) -> list[str]:
    out = ["record order read as ICONs IGREG, Pqflag then the specification's CON table (Xc .. "
           "Khv)",
           f"bus frequency: the bus angle's derivative (a {TW_FREQ:g} s washout) through the "
           f"transducer lag Tf = {values['Tf']:g} s",
           "Pref, Qref: the power flow's P and Q; Pcmd kept >= 0"]  # fmt: skip
    for flag, what in (("Vrflag", "voltage"), ("Frflag", "frequency")):
        r = values[flag]
        if r == 0:
            out.append(f"{flag} = 0: the {what} trip fractions latch at their lowest value (a "
                       f"state following them down in {T_LATCH:g} s)")  # fmt: skip
        else:
            out.append(f"{flag} = {r:g}: the share {r:g} of what the {what} characteristic "
                       "recovers above its lowest value reconnects")  # fmt: skip
    return out


PVD1 = DeviceModel(
    name="PVD1",
    role="converter",
    params=ICONS + CONS,
    states=STATES,
    source="Sandia SAND2013-8876 PVD1; WECC PV Power Plant Dynamic Modeling Guide (2014); "
    "PSS(R)E Model Library, PVD1",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    current=_current,
    inputs=INPUTS,
    readings=_readings,
)
