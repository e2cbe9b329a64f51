"""Grid-following inverter, averaged model: SRF-PLL, outer P/Q control, inner current control.

Sources: N. Pogaku, M. Prodanovic and T. C. Green, "Modeling, analysis and testing of autonomous
operation of an inverter-based microgrid", IEEE Trans. Power Electron. 22(2), 2007, §II (power
measurement filter, PI current controller with decoupling and voltage feed-forward, L filter in a
dq frame, PLL); the structure of PowerSimulationsDynamics.jl's ``AverageConverter`` with
``CurrentModeControl`` and ``KauraPLL``/SRF PLL. Per unit on the *system* base (the builder converts
the filter impedance and the current-controller gains, which are impedances, from the inverter
rating: x S_base / S_inv); time in s; omega_b = 2 pi f.

dq frame of the PLL (angle theta relative to the synchronous network frame; d aligned with the
terminal voltage in steady state): v_d + j v_q = V e^{-j theta}; the injected current is
I = (i_d + j i_q) e^{j theta}, with P = v_d i_d + v_q i_q, Q = v_q i_d - v_d i_q.

    PLL:      d theta/dt = omega_b dw,     dw = kp_pll v_q + ki_pll eps,    d eps/dt = v_q
    filters:  Tf dPf/dt = P - Pf,           Tf dQf/dt = Q - Qf
    outer:    i_d_ref = kp_pq (Pref - Pf) + xP,   dxP/dt = ki_pq (Pref - Pf)
              i_q_ref = -(kp_pq (Qref - Qf) + xQ), dxQ/dt = ki_pq (Qref - Qf)
    inner:    v_cd = kp_c (i_d_ref - i_d) + ki_c gd - w Lf i_q + v_d,  dgd/dt = i_d_ref - i_d
              v_cq = kp_c (i_q_ref - i_q) + ki_c gq + w Lf i_d + v_q,  dgq/dt = i_q_ref - i_q
    L filter: (Lf / omega_b) di_d/dt = v_cd - v_d - Rf i_d + w Lf i_q
              (Lf / omega_b) di_q/dt = v_cq - v_q - Rf i_q - w Lf i_d

with w = 1 + dw the PLL frequency (pu). Current and output limits are omitted (smooth f).

As a bus device (``GFL_INVERTER``): parameters ``inv_<name>`` plus the set-points ``inv_pref``,
``inv_qref`` from the initialization; outputs P and Q injected; every state but the filter
currents is a controller state.
"""

from __future__ import annotations

from collections.abc import Mapping

import jax.numpy as jnp
import numpy as np

from models.components.validation import check_fields, non_negative, positive
from models.devices.base import DeviceModel, check_rules

STATES = ("theta", "eps", "Pf", "Qf", "xP", "xQ", "i_d", "i_q", "gd", "gq")
PARAMS = ("kp_pll", "ki_pll", "Tf", "kp_pq", "ki_pq", "kp_c", "ki_c", "Lf", "Rf")
_RULES = (
    ("kp_pll", positive, "> 0 (PLL proportional gain, pu frequency / pu voltage)"),
    ("ki_pll", positive, "> 0 (PLL integral gain, 1/s)"),
    ("Tf", positive, "> 0 (power-measurement filter time constant, s)"),
    ("kp_pq", non_negative, ">= 0 (outer-loop proportional gain, pu current / pu power)"),
    ("ki_pq", positive, "> 0 (outer-loop integral gain, 1/s)"),
    ("kp_c", positive, "> 0 (current-controller proportional gain, pu impedance)"),
    ("ki_c", non_negative, ">= 0 (current-controller integral gain, pu impedance / s)"),
    ("Lf", positive, "> 0 (filter reactance at rated frequency, pu)"),
    ("Rf", non_negative, ">= 0 (filter resistance, pu)"),
)


def validate_inverter(device: str, data: Mapping) -> dict[str, float]:
    """Check the fields of ``PARAMS``."""
    return check_fields(device, data, _RULES)


def terminal_dq(vr, vi, theta):
    """(v_d, v_q) of the network-frame voltage Vr + j Vi in the PLL frame."""
    c, s = jnp.cos(theta), jnp.sin(theta)
    return vr * c + vi * s, -vr * s + vi * c


def injected_current(i_d, i_q, theta):
    """(Ir, Ii): the injected current in the network frame, (i_d + j i_q) e^{j theta}."""
    c, s = jnp.cos(theta), jnp.sin(theta)
    return i_d * c - i_q * s, i_d * s + i_q * c


def inverter_derivatives(states, vr, vi, pref, qref, p: Mapping, omega_b: float):
    """Derivatives of ``STATES`` (in that order) given the terminal voltage and set-points."""
    theta, eps, pf, qf, xp, xq, i_d, i_q, gd, gq = states
    v_d, v_q = terminal_dq(vr, vi, theta)
    dw = p["kp_pll"] * v_q + p["ki_pll"] * eps
    w = 1.0 + dw
    p_out = v_d * i_d + v_q * i_q
    q_out = v_q * i_d - v_d * i_q
    e_p, e_q = pref - pf, qref - qf
    i_d_ref = p["kp_pq"] * e_p + xp
    i_q_ref = -(p["kp_pq"] * e_q + xq)
    lf = p["Lf"]
    v_cd = p["kp_c"] * (i_d_ref - i_d) + p["ki_c"] * gd - w * lf * i_q + v_d
    v_cq = p["kp_c"] * (i_q_ref - i_q) + p["ki_c"] * gq + w * lf * i_d + v_q
    return (
        omega_b * dw,
        v_q,
        (p_out - pf) / p["Tf"],
        (q_out - qf) / p["Tf"],
        p["ki_pq"] * e_p,
        p["ki_pq"] * e_q,
        omega_b / lf * (v_cd - v_d - p["Rf"] * i_d + w * lf * i_q),
        omega_b / lf * (v_cq - v_q - p["Rf"] * i_q - w * lf * i_d),
        i_d_ref - i_d,
        i_q_ref - i_q,
    )


def init_inverter(v: np.ndarray, s: np.ndarray, p: Mapping) -> dict[str, np.ndarray]:
    """Steady state injecting ``s`` = P + jQ (complex pu, per inverter) at terminal voltage ``v``:
    theta = angle(v), eps = 0, i_d = P/|v|, i_q = -Q/|v|, Pf = P, Qf = Q, xP = i_d, xQ = -i_q,
    gd = Rf i_d / ki_c, gq = Rf i_q / ki_c (zero when ki_c = 0 needs Rf = 0). Returns the states
    and the set-points ``pref``, ``qref``."""
    v = np.asarray(v, dtype=complex)
    s = np.asarray(s, dtype=complex)
    vm = np.abs(v)
    i_d, i_q = s.real / vm, -s.imag / vm
    ki_c, rf = np.asarray(p["ki_c"], dtype=float), np.asarray(p["Rf"], dtype=float)
    if np.any((ki_c == 0.0) & (rf != 0.0)):
        raise ValueError("inverter: ki_c = 0 with Rf > 0 has no steady state at zero error")
    safe = np.where(ki_c == 0.0, 1.0, ki_c)
    return {
        "theta": np.angle(v),
        "eps": np.zeros_like(vm),
        "Pf": s.real.copy(),
        "Qf": s.imag.copy(),
        "xP": i_d,
        "xQ": -i_q,
        "i_d": i_d,
        "i_q": i_q,
        "gd": rf * i_d / safe,
        "gq": rf * i_q / safe,
        "pref": s.real.copy(),
        "qref": s.imag.copy(),
    }


def _init(v, s, p, omega_s) -> dict:
    out = init_inverter(v, s, p)
    out["power"] = np.asarray(s, dtype=complex)
    return out


def _derivatives(xs, vr, vi, p, omega_s):
    return inverter_derivatives(tuple(xs), vr, vi, p["pref"], p["qref"], p, omega_s)


def _current(xs, vr, vi, p, omega_s):
    return injected_current(xs[6], xs[7], xs[0])


def _measure(xs, vr, vi, p, omega_s):
    jr, ji = injected_current(xs[6], xs[7], xs[0])
    return vr * jr + vi * ji, vi * jr - vr * ji


GFL_INVERTER = DeviceModel(
    name="gfl_inverter",
    role="bus",
    params=PARAMS,
    states=STATES,
    source="Pogaku, Prodanovic & Green 2007, §II (averaged grid-following inverter)",
    check=check_rules(_RULES),
    init=_init,
    derivatives=_derivatives,
    current=_current,
    measures=("P", "Q"),
    measure=_measure,
    prefix="inv_",
    controller=tuple(s for s in STATES if s not in ("i_d", "i_q")),
    kind="inverter",
)
