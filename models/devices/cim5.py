"""CIM5: PSS(R)E's induction motor load model (``CIM5BL``: a motor on one load, named by bus and
load ID), single or double cage, motor type 1 or 2.

Data (``.dyr`` order, PSS(R)E Model Library, CIM5BL): ICON IT (motor type 1 or 2); CONs RA, XA,
XM, R1, X1, R2, X2 (pu on the motor base), E1, SE(E1), E2, SE(E2) (magnetizing saturation), MBASE
(MVA; 0: PMULT times the load's MW), PMULT, H (s), VT (pu), TV (cycles) (undervoltage trip), TB
(cycles, breaker), D (load torque exponent), TNOM (load torque at 1 pu speed, for motor starting).
R2 = 0 or X2 = 0 is a single-cage rotor.

Equivalent circuit and its transient parameters (classical definitions: each open-circuit time
constant seen by one rotor resistance with the other rotor branch open (T') or shorted (T'');
omega_b = 2 pi f; reading, see ``readings``):

* single cage: X0 = XA + XM, X' = XA + XM||X1, T'0 = (XM + X1) / (omega_b R1), X'' = X'.
* type 1 (two cages in parallel at the air gap): X' = XA + XM||X1, T'0 = (XM + X1) / (omega_b
  R1), X'' = XA + XM||X1||X2, T''0 = (X2 + XM||X1) / (omega_b R2).
* type 2 (nested cage: air gap -jX1- node B; R1 from B; jX2 + R2 from B): X' = XA +
  XM||(X1 + X2), T'0 = (XM + X1 + X2) / (omega_b R2), X'' = XA + XM||X1, T''0 =
  ((XM + X1)||X2) / (omega_b R1).

Equations (motor convention: I into the motor; network-frame phasors rotating at synchronous
speed; s the slip, speed omega = 1 - s; F. Milano, *Power System Modelling and Scripting*, 2010,
§15.2.1 "Order V" double-cage machine, in complex form):

    V = E'' + (RA + j X'') I
    dE'/dt  = -j omega_b s E' - (E' - j (X0 - X') I) / T'0
    dE''/dt = dE'/dt - j omega_b s (E'' - E') - (E'' - E' - j (X' - X'') I) / T''0
    2 H ds/dt = TL - Te,   Te = Re(E'' conj(I)),   TL = T0 omega^D

(the load torque of the PSS(R)E Model Library, T = T0 (1 + d omega)^D, T0 from the initial
state). At steady state the motor is the impedance Z(s) = RA + j X'' + j (X' - X'') / (1 + j
omega_b s T''0) + j (X0 - X') / (1 + j omega_b s T'0); for a single cage exactly the textbook
circuit RA + j XA + j XM || (R1 / s + j X1). A single cage keeps E'' = E' (its E'' states follow
E').

As a bus device (per unit on the system base: impedances times SBASE / MBASE, H and torques
times MBASE / SBASE; parameter ``scale`` = MBASE / SBASE from the importer): it is asked for the
load's constant-power part P + jQ; the motor draws P at the power-flow voltage (slip on the stable
branch, below pull-out), and a compensating shunt ``bc`` (the PSS(R)E model's shunt) makes its
reactive power Q: Q_motor - bc |V|^2 = Q (bc > 0 capacitive).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from scipy.optimize import brentq

from models.devices.base import DeviceModel, InitialValueError, problems_where

PARAMS = ("IT", "RA", "XA", "XM", "R1", "X1", "R2", "X2", "E1", "SE1", "E2", "SE2", "MBASE",
          "PMULT", "H", "VT", "TV", "TB", "D", "TNOM")  # fmt: skip
STATES = ("s", "er_p", "em_p", "er_pp", "em_pp")


def _check(p) -> list[tuple[str, int, str]]:
    out = problems_where(~np.isin(p["IT"], (1, 2)), "IT", "must be 1 or 2 (motor type)")
    for name in ("XA", "XM", "R1", "X1", "H"):
        out += problems_where(~(np.asarray(p[name]) > 0), name, "must be > 0")
    for name in ("RA", "R2", "X2", "D"):
        out += problems_where(~(np.asarray(p[name]) >= 0), name, "must be >= 0")
    out += problems_where((np.asarray(p["MBASE"]) <= 0) & ~(np.asarray(p["PMULT"]) > 0), "PMULT",
                          "must be > 0 where MBASE = 0 (motor base = PMULT x MW load)")  # fmt: skip
    out += problems_where(np.asarray(p["MBASE"]) < 0, "MBASE", "must be >= 0")
    return out


def readings(values) -> list[str]:
    """What a record's values mean where the model library leaves a choice (module docstring)."""
    out = []
    single = values["R2"] == 0 or values["X2"] == 0
    out.append(
        "single-cage rotor (R2 or X2 is 0)" if single else
        f"double-cage rotor, motor type {int(values['IT'])} "
        + ("(cages in parallel at the air gap)" if values["IT"] == 1 else
           "(nested cage: X1 to R1, then X2 + R2)")
        + "; transient parameters by the classical open/short-circuit definitions"
    )  # fmt: skip
    v = values
    if v["SE1"] != 0 or v["SE2"] != 0:
        out.append(f"magnetizing saturation SE({v['E1']:g}) = {v['SE1']:g}, "
                   f"SE({v['E2']:g}) = {v['SE2']:g} not modelled (unsaturated XM)")  # fmt: skip
    if v["VT"] > 0:
        out.append(f"undervoltage trip VT = {v['VT']:g} pu after TV = {v['TV']:g} cycles, "
                   f"TB = {v['TB']:g} cycles not modelled (the motor stays on)")  # fmt: skip
    out.append(f"load torque T0 (1 - s)^D, D = {values['D']:g}, T0 from the initial state; "
               f"TNOM = {values['TNOM']:g} (motor starting only) not used")  # fmt: skip
    return out


def parameters(p, omega_b: float, xp=np):
    """Per unit on the system base: (ra, X0, X', X'', T'0, T''0, H, double) per instance, where
    ``double`` is 1 for a double cage (NumPy or JAX arrays)."""
    scale = p["scale"]
    ra, xa, xm, r1, x1, r2, x2 = (p[k] for k in ("RA", "XA", "XM", "R1", "X1", "R2", "X2"))
    double = (r2 > 0) & (x2 > 0)
    safe_r2 = xp.where(double, r2, 1.0)
    safe_x2 = xp.where(double, x2, 1.0)
    m1 = xm * x1 / (xm + x1)
    type1 = p["IT"] == 1
    x_p = xp.where(double & ~type1, xa + xm * (x1 + safe_x2) / (xm + x1 + safe_x2), xa + m1)
    t_p = xp.where(double & ~type1, (xm + x1 + safe_x2) / (omega_b * safe_r2),
                   (xm + x1) / (omega_b * r1))  # fmt: skip
    x_pp = xp.where(type1, xa + m1 * safe_x2 / (m1 + safe_x2), xa + m1)
    t_pp = xp.where(type1, (safe_x2 + m1) / (omega_b * safe_r2),
                    (xm + x1) * safe_x2 / (xm + x1 + safe_x2) / (omega_b * r1))  # fmt: skip
    x_pp = xp.where(double, x_pp, x_p)
    t_pp = xp.where(double, t_pp, 1.0)
    return (ra / scale, (xa + xm) / scale, x_p / scale, x_pp / scale, t_p, t_pp, p["H"] * scale,
            double)  # fmt: skip


def steady_impedance(slip: float, p, omega_b: float) -> complex:
    """Z(s) of one instance (module docstring), pu on the system base."""
    ra, x0, x_p, x_pp, t_p, t_pp, _, double = (np.asarray(a) for a in parameters(p, omega_b))
    z = ra + 1j * x_p + 1j * (x0 - x_p) / (1 + 1j * omega_b * slip * t_p)
    if bool(double):
        z += 1j * (x_pp - x_p) + 1j * (x_p - x_pp) / (1 + 1j * omega_b * slip * t_pp)
    return z


def _derivatives(xs, vr, vi, p, omega_s):
    s, er_p, em_p, er_pp, em_pp = xs
    ra, x0, x_p, x_pp, t_p, t_pp, h, double = parameters(p, omega_s, jnp)
    e_p, e_pp = er_p + 1j * em_p, er_pp + 1j * em_pp
    i = (vr + 1j * vi - e_pp) / (ra + 1j * x_pp)
    d_ep = -1j * omega_s * s * e_p - (e_p - 1j * (x0 - x_p) * i) / t_p
    sub = -1j * omega_s * s * (e_pp - e_p) - (e_pp - e_p - 1j * (x_p - x_pp) * i) / t_pp
    d_epp = d_ep + jnp.where(double, sub, 0.0)
    te = jnp.real(e_pp * jnp.conj(i))
    tl = p["T0"] * (1.0 - s) ** p["D"]
    d_s = (tl - te) / (2.0 * h)
    return d_s, jnp.real(d_ep), jnp.imag(d_ep), jnp.real(d_epp), jnp.imag(d_epp)


def _current(xs, vr, vi, p, omega_s):
    """Injected current: minus the motor's and the compensating shunt's."""
    ra, _, _, x_pp, _, _, _, _ = parameters(p, omega_s, jnp)
    i = (vr + 1j * vi - (xs[3] + 1j * xs[4])) / (ra + 1j * x_pp)
    i = i + 1j * p["bc"] * (vr + 1j * vi)
    return -jnp.real(i), -jnp.imag(i)


def _measure(xs, vr, vi, p, omega_s):
    return (xs[0],)


def init_one(v: complex, power: complex, p, omega_b: float) -> dict[str, float]:
    """Steady state of one motor drawing Re(power) (pu, system base) at ``v``: the slip on the
    stable branch solving Re(|V|^2 / conj Z(s)) = P, E' and E'' from dE'/dt = dE''/dt = 0, T0 =
    Te / omega^D, the shunt ``bc`` that makes the device draw Im(power). Raises ``ValueError``
    when P is outside (0, pull-out power)."""

    def drawn(slip: float) -> complex:
        return abs(v) ** 2 / np.conj(steady_impedance(slip, p, omega_b))

    slips = np.geomspace(1e-7, 1.0, 600)
    powers = np.array([drawn(s).real for s in slips])
    k_max = int(np.argmax(powers))
    if not 0.0 < power.real < powers[k_max]:
        raise ValueError(f"P = {power.real:.6g} pu outside (0, pull-out {powers[k_max]:.6g} pu) "
                         f"at |V| = {abs(v):.6g} pu")  # fmt: skip
    s0 = brentq(lambda s: drawn(s).real - power.real, 0.0, slips[k_max], xtol=1e-16, rtol=1e-15)
    ra, x0, x_p, x_pp, t_p, t_pp, _, double = (np.asarray(a) for a in parameters(p, omega_b))
    i = v / steady_impedance(s0, p, omega_b)
    e_p = 1j * (x0 - x_p) * i / (1 + 1j * omega_b * s0 * t_p)
    e_pp = e_p + (1j * (x_p - x_pp) * i / (1 + 1j * omega_b * s0 * t_pp) if bool(double) else 0)
    q_motor = (v * np.conj(i)).imag
    te = (e_pp * np.conj(i)).real
    return {"s": s0, "er_p": e_p.real, "em_p": e_p.imag, "er_pp": e_pp.real, "em_pp": e_pp.imag,
            "T0": te / (1.0 - s0) ** float(p["D"]), "bc": (q_motor - power.imag) / abs(v) ** 2,
            "te": te}  # fmt: skip


def _init(v, s, p, omega_s) -> dict:
    """Per instance ``init_one`` drawing -s (the requested injection is the load's consumption);
    ``power`` is -s exactly (motor and shunt)."""
    rows, problems = [], []
    for k in range(len(v)):
        one = {q: np.asarray(p[q])[k] for q in (*PARAMS, "scale")}
        try:
            rows.append(init_one(v[k], -s[k], one, omega_s))
        except ValueError as exc:
            problems.append((k, str(exc)))
    if problems:
        raise InitialValueError("CIM5BL", problems)
    out = {key: np.array([r[key] for r in rows]) for key in (*STATES, "T0", "bc")}
    out["power"] = np.asarray(s, dtype=complex).copy()
    return out


CIM5 = DeviceModel(
    name="CIM5BL",
    role="bus",
    params=PARAMS,
    states=STATES,
    source="PSS(R)E Model Library, CIM5BL; Milano 2010, §15.2.1 (double-cage induction machine)",
    check=_check,
    init=_init,
    derivatives=_derivatives,
    current=_current,
    measures=("slip",),
    measure=_measure,
    prefix="cim5_",
    kind="motor",
    readings=readings,
)
