"""Component kinds of the dq-frame networks: node, line, loads, infinite bus, full-order
synchronous machine, grid-forming (droop) and grid-following (PLL) inverters.

Conventions (all kinds):

* Per unit: voltages on the bus base, currents and powers of network ports on the system base
  ``S_sys``; a device's internal quantities are on its own rating, ``S = S_rating / S_sys``
  converts its current (``i_sys = S i_dev``). Time in seconds; ``omega_b = 2 pi f`` rad/s;
  speeds and frequencies in pu of ``omega_b``. Reactances and susceptances are at nominal
  frequency (``x = omega_b L``, ``b = omega_b C`` in pu), so an inductor obeys
  ``(x / omega_b) di/dt = v - (r + j w x) i`` and a capacitor ``(b / omega_b) dv/dt = i - j w b v``
  in a frame turning at ``w`` pu.
* Complex phasors are (D, Q) pairs in the network's common frame (``w`` = the reference block's
  speed); a device's local frame is at angle ``delta`` ahead of it: ``v_local = v e^{-j delta}``.
* Port currents ``i_D, i_Q`` of devices, loads and line ends are **injected into the node** they
  connect to; a node's input is their sum.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from models.dq.blocks import Kind

F_HZ = 60.0
OMEGA_B = 2.0 * math.pi * F_HZ


def _c(re, im):
    return re + 1j * im


def _pair(value):
    return [jnp.real(value), jnp.imag(value)]


def _none(x, z, u, p):
    return jnp.zeros(0)


# --------------------------------------------------------------------------------- network


def _node_f(x, z, u, p):
    v, i, w = _c(x[0], x[1]), _c(u[0], u[1]), u[2]
    shunt = p["g_sh"] + p["fault_g"] + 1j * p["fault_b"]
    dv = OMEGA_B / p["b"] * (i - shunt * v) - 1j * OMEGA_B * w * v
    return jnp.stack(_pair(dv))


NODE = Kind(
    name="node",
    states=("v_D", "v_Q"),
    algebraics=(),
    inputs=("i_D", "i_Q", "w"),
    outputs=("v_D", "v_Q"),
    params=("b", "g_sh", "fault_g", "fault_b"),
    f=_node_f,
    h=lambda x, z, u, p: x[:2],
    public={"fault_g": ("bus", "fault_g"), "fault_b": ("bus", "fault_b")},
    description="bus: shunt capacitance b (pu) and conductance g_sh; the sum of injected "
    "currents charges it (fault_g + j fault_b: a quasi-static fault admittance)",
)


def _node_rc_v(x, u, p):
    v_c, i = _c(x[0], x[1]), _c(u[0], u[1])
    shunt = p["g_sh"] + p["fault_g"] + 1j * p["fault_b"]
    return (v_c + p["rs"] * i) / (1.0 + p["rs"] * shunt), shunt


def _node_rc_f(x, z, u, p):
    v, shunt = _node_rc_v(x, u, p)
    v_c, i, w = _c(x[0], x[1]), _c(u[0], u[1]), u[2]
    dv = OMEGA_B / p["b"] * (i - shunt * v) - 1j * OMEGA_B * w * v_c
    return jnp.stack(_pair(dv))


NODE_RC = Kind(
    name="node_rc",
    states=("vc_D", "vc_Q"),
    algebraics=(),
    inputs=("i_D", "i_Q", "w"),
    outputs=("v_D", "v_Q"),
    params=("b", "rs", "g_sh", "fault_g", "fault_b"),
    f=_node_rc_f,
    h=lambda x, z, u, p: jnp.stack(_pair(_node_rc_v(x, u, p)[0])),
    feedthrough=True,
    public={"fault_g": ("bus", "fault_g"), "fault_b": ("bus", "fault_b")},
    description="bus without charging of its own: the floor capacitance b in series with a "
    "damping resistor rs (an R-C snubber), so the bus voltage v = v_c + rs i_c is algebraic "
    "and the floor's resonance with the branch inductances is damped",
)


def _line_f(x, z, u, p):
    i, v1, v2, w = _c(x[0], x[1]), _c(u[0], u[1]), _c(u[2], u[3]), u[4]
    ratio = p["tap"] * jnp.exp(1j * p["shift"])
    di = OMEGA_B / p["x"] * (p["status"] * (v1 / ratio - v2) - p["r"] * i) - 1j * OMEGA_B * w * i
    return jnp.stack(_pair(di))


def _line_h(x, z, u, p):
    i = _c(x[0], x[1])
    ratio = p["tap"] * jnp.exp(1j * p["shift"])
    return jnp.stack(_pair(-p["status"] * i / jnp.conj(ratio)) + _pair(p["status"] * i))


LINE = Kind(
    name="line",
    states=("i_D", "i_Q"),
    algebraics=(),
    inputs=("v1_D", "v1_Q", "v2_D", "v2_Q", "w"),
    outputs=("i1_D", "i1_Q", "i2_D", "i2_Q"),
    params=("r", "x", "tap", "shift", "status"),
    f=_line_f,
    h=_line_h,
    public={"status": ("branch", "branch_status")},
    description="series R-L branch behind an ideal transformer tap e^{j shift} at end 1; the "
    "current i flows from end 1 to end 2 (pi-model charging sits in the end nodes)",
)


def _load_h(x, z, u, p):
    return jnp.stack(_pair(-p["g"] * _c(u[0], u[1])))


LOAD = Kind(
    name="load",
    states=(),
    algebraics=(),
    inputs=("v_D", "v_Q"),
    outputs=("i_D", "i_Q"),
    params=("g", "b"),
    f=_none,
    h=_load_h,
    feedthrough=True,
    public={"g": ("load", "load_g"), "b": ("load", "load_b")},
    description="constant-conductance load g (pu); a capacitive part sits in the node",
)


def _series_rl(p):
    """(R, X) of the series branch with admittance g + jb at nominal frequency, R at least
    X / q_max (a real reactor's quality factor)."""
    y2 = p["g"] ** 2 + p["b"] ** 2
    x = -p["b"] / y2
    return jnp.maximum(p["g"] / y2, x / p["q_max"]), x


def _load_rl_f(x, z, u, p):
    il, v, w = _c(x[0], x[1]), _c(u[0], u[1]), u[2]
    r, xl = _series_rl(p)
    return jnp.stack(_pair(OMEGA_B / xl * (v - (r + 1j * w * xl) * il)))


LOAD_RL = Kind(
    name="load_rl",
    states=("iL_D", "iL_Q"),
    algebraics=(),
    inputs=("v_D", "v_Q", "w"),
    outputs=("i_D", "i_Q"),
    params=("g", "b", "q_max"),
    f=_load_rl_f,
    h=lambda x, z, u, p: -x[:2],
    public={"g": ("load", "load_g"), "b": ("load", "load_b")},
    description="constant-impedance inductive load (and inductive shunts) as a series R-L "
    "branch to ground with admittance g + jb at nominal frequency (b = -Q/V^2 < 0); R is at "
    "least X / q_max",
)


def _ib_f(x, z, u, p):
    i, v, e = _c(x[0], x[1]), _c(u[0], u[1]), u[2]
    source = e * jnp.exp(1j * p["angle"])
    di = OMEGA_B / p["x"] * (p["on"] * (source - v) - (p["r"] + 1j * p["x"]) * i)
    return jnp.stack(_pair(di))


def _ib_h(x, z, u, p):
    return jnp.stack([p["on"] * x[0], p["on"] * x[1], jnp.ones(())])


INFINITE_BUS = Kind(
    name="infinite_bus",
    states=("i_D", "i_Q"),
    algebraics=(),
    inputs=("v_D", "v_Q", "E"),
    outputs=("i_D", "i_Q", "omega"),
    params=("r", "x", "angle", "on"),
    f=_ib_f,
    h=_ib_h,
    public={"on": ("source", "source_on")},
    description="ideal source E at a fixed angle (the network's reference frame, omega = 1) "
    "behind r + jx; on = 0 opens it",
)


# ---------------------------------------------------------------------- synchronous machine

SM_PARAMS = (
    "S", "Lad", "Laq", "Ll", "Ra", "Lfd", "Rfd", "L1d", "R1d", "L1q", "R1q", "L2q", "R2q",
    "H", "D", "Ka", "Ta", "Rdroop", "Tg", "delta_ref",
)  # fmt: skip


def _sm_kind(reference: bool) -> Kind:
    """Full-order synchronous machine (Kundur 1994 §3.4 model 2.2: field and one d damper, two q
    dampers, stator flux dynamics kept), with a first-order static AVR and a droop governor."""
    flux = ("psi_d", "psi_q", "psi_fd", "psi_1d", "psi_1q", "psi_2q")
    states = flux + (() if reference else ("delta",)) + ("omega", "efd", "pm")
    k = len(flux)

    def unpack(x, p):
        delta = p["delta_ref"] if reference else x[k]
        omega, efd, pm = x[-3], x[-2], x[-1]
        return delta, omega, efd, pm

    def terminal(x, u, p):
        delta = unpack(x, p)[0]
        rot = jnp.exp(1j * (delta - jnp.pi / 2))
        return _c(u[0], u[1]) / rot, rot

    def f(x, z, u, p):
        psi_d, psi_q, psi_fd, psi_1d, psi_1q, psi_2q = (x[j] for j in range(6))
        i_d, i_q, i_fd, i_1d, i_1q, i_2q = (z[j] for j in range(6))
        delta, omega, efd, pm = unpack(x, p)
        vdq, _ = terminal(x, u, p)
        te = psi_d * i_q - psi_q * i_d
        vt = jnp.abs(_c(u[0], u[1]))
        d = [
            OMEGA_B * (jnp.real(vdq) + p["Ra"] * i_d + omega * psi_q),
            OMEGA_B * (jnp.imag(vdq) + p["Ra"] * i_q - omega * psi_d),
            OMEGA_B * p["Rfd"] * (efd / p["Lad"] - i_fd),
            -OMEGA_B * p["R1d"] * i_1d,
            -OMEGA_B * p["R1q"] * i_1q,
            -OMEGA_B * p["R2q"] * i_2q,
        ]
        if not reference:
            d.append(OMEGA_B * (omega - u[2]))
        d += [
            (pm / omega - te - p["D"] * (omega - 1.0)) / (2.0 * p["H"]),
            (p["Ka"] * (u[3] - vt) - efd) / p["Ta"],
            (u[4] - (omega - 1.0) / p["Rdroop"] - pm) / p["Tg"],
        ]
        return jnp.stack(d)

    def g(x, z, u, p):
        psi_d, psi_q, psi_fd, psi_1d, psi_1q, psi_2q = (x[j] for j in range(6))
        i_d, i_q, i_fd, i_1d, i_1q, i_2q = (z[j] for j in range(6))
        lad, laq, ll = p["Lad"], p["Laq"], p["Ll"]
        return jnp.stack(
            [
                psi_d + (ll + lad) * i_d - lad * (i_fd + i_1d),
                psi_fd + lad * i_d - (p["Lfd"] + lad) * i_fd - lad * i_1d,
                psi_1d + lad * i_d - lad * i_fd - (p["L1d"] + lad) * i_1d,
                psi_q + (ll + laq) * i_q - laq * (i_1q + i_2q),
                psi_1q + laq * i_q - (p["L1q"] + laq) * i_1q - laq * i_2q,
                psi_2q + laq * i_q - laq * i_1q - (p["L2q"] + laq) * i_2q,
            ]
        )

    def h(x, z, u, p):
        _, rot = terminal(x, u, p)
        i = p["S"] * _c(z[0], z[1]) * rot
        p_e = jnp.real(_c(u[0], u[1]) * jnp.conj(i))
        return jnp.stack(_pair(i) + [unpack(x, p)[1], p_e])

    return Kind(
        name="sm_ref" if reference else "sm",
        states=states,
        algebraics=("i_d", "i_q", "i_fd", "i_1d", "i_1q", "i_2q"),
        inputs=("v_D", "v_Q", "w", "V_ref", "P_ref"),
        outputs=("i_D", "i_Q", "omega", "P"),
        params=SM_PARAMS,
        f=f,
        g=g,
        h=h,
        controller_states=("efd", "pm"),
        perturbation={} if reference else {"delta": 0.05, "omega": 1e-3},
        description="full-order synchronous machine (stator, field, 1 d and 2 q damper fluxes; "
        "generator convention, Lad-base reciprocal pu) with a static AVR and a droop governor"
        + ("; the network's frequency reference (its rotor angle is fixed)" if reference else ""),
    )


SM = _sm_kind(reference=False)
SM_REF = _sm_kind(reference=True)


# ------------------------------------------------------------------------------- inverters

GFM_PARAMS = ("S", "Rf", "Lf", "Cf", "Rc", "Lc", "Kpv", "Kiv", "Kpc", "Kic", "F", "mp", "nq", "wc")


def _gfm_f(x, z, u, p):
    delta, pf, qf = x[0], x[1], x[2]
    phi, gam = _c(x[3], x[4]), _c(x[5], x[6])
    il, vo, io = _c(x[7], x[8]), _c(x[9], x[10]), _c(x[11], x[12])
    omega = 1.0 + p["mp"] * (u[3] - pf)
    e_v = (u[4] - p["nq"] * qf) - vo
    il_ref = p["F"] * io + 1j * omega * p["Cf"] * vo + p["Kpv"] * e_v + p["Kiv"] * phi
    e_i = il_ref - il
    vi = 1j * omega * p["Lf"] * il + p["Kpc"] * e_i + p["Kic"] * gam
    vb = _c(u[0], u[1]) * jnp.exp(-1j * delta)
    s = vo * jnp.conj(io)
    dil = OMEGA_B / p["Lf"] * (vi - vo - (p["Rf"] + 1j * omega * p["Lf"]) * il)
    dvo = OMEGA_B / p["Cf"] * (il - io - 1j * omega * p["Cf"] * vo)
    dio = OMEGA_B / p["Lc"] * (vo - vb - (p["Rc"] + 1j * omega * p["Lc"]) * io)
    return jnp.stack(
        [OMEGA_B * (omega - u[2]), p["wc"] * (jnp.real(s) - pf), p["wc"] * (jnp.imag(s) - qf)]
        + _pair(e_v) + _pair(e_i) + _pair(dil) + _pair(dvo) + _pair(dio)
    )  # fmt: skip


def _gfm_h(x, z, u, p):
    i = p["S"] * _c(x[11], x[12]) * jnp.exp(1j * x[0])
    return jnp.stack(_pair(i) + [1.0 + p["mp"] * (u[3] - x[1])])


GFM = Kind(
    name="gfm",
    states=(
        "delta",
        "Pf",
        "Qf",
        "phi_d",
        "phi_q",
        "gam_d",
        "gam_q",
        "il_d",
        "il_q",
        "vo_d",
        "vo_q",
        "io_d",
        "io_q",
    ),  # fmt: skip
    algebraics=(),
    inputs=("v_D", "v_Q", "w", "P_set", "V_set"),
    outputs=("i_D", "i_Q", "omega"),
    params=GFM_PARAMS,
    f=_gfm_f,
    h=_gfm_h,
    controller_states=("delta", "Pf", "Qf", "phi_d", "phi_q", "gam_d", "gam_q"),
    perturbation={"delta": 0.05},
    description="grid-forming inverter with P-f and Q-V droop, cascaded voltage and current PI "
    "loops, LC filter and coupling inductor (Pogaku et al. 2007 structure, averaged converter)",
)

GFL_PARAMS = (
    "S", "Rf", "Lf", "Cf", "Rg", "Lg", "Kp_pll", "Ki_pll", "Kp_pq", "Ki_pq", "Kpc", "Kic", "wc",
)  # fmt: skip


def _gfl_parts(x, u, p):
    omega = 1.0 + (p["Kp_pll"] * x[11] + p["Ki_pll"] * x[1]) / OMEGA_B
    return omega


def _gfl_f(x, z, u, p):
    delta, eps, pf, qf, xi_p, xi_q = (x[j] for j in range(6))
    gam, i_f, vc, ig = _c(x[6], x[7]), _c(x[8], x[9]), _c(x[10], x[11]), _c(x[12], x[13])
    omega = _gfl_parts(x, u, p)
    i_ref = _c(
        p["Kp_pq"] * (u[3] - pf) + p["Ki_pq"] * xi_p,
        -(p["Kp_pq"] * (u[4] - qf) + p["Ki_pq"] * xi_q),
    )
    e_i = i_ref - i_f
    vi = vc + p["Kpc"] * e_i + p["Kic"] * gam + 1j * omega * p["Lf"] * i_f
    vb = _c(u[0], u[1]) * jnp.exp(-1j * delta)
    s = vc * jnp.conj(ig)
    dif = OMEGA_B / p["Lf"] * (vi - vc - (p["Rf"] + 1j * omega * p["Lf"]) * i_f)
    dvc = OMEGA_B / p["Cf"] * (i_f - ig - 1j * omega * p["Cf"] * vc)
    dig = OMEGA_B / p["Lg"] * (vc - vb - (p["Rg"] + 1j * omega * p["Lg"]) * ig)
    return jnp.stack(
        [
            OMEGA_B * (omega - u[2]),
            x[11],
            p["wc"] * (jnp.real(s) - pf),
            p["wc"] * (jnp.imag(s) - qf),
            u[3] - pf,
            u[4] - qf,
        ]
        + _pair(e_i) + _pair(dif) + _pair(dvc) + _pair(dig)
    )  # fmt: skip


def _gfl_h(x, z, u, p):
    i = p["S"] * _c(x[12], x[13]) * jnp.exp(1j * x[0])
    return jnp.stack(_pair(i) + [_gfl_parts(x, u, p)])


GFL = Kind(
    name="gfl",
    states=(
        "delta",
        "eps",
        "Pf",
        "Qf",
        "xi_p",
        "xi_q",
        "gam_d",
        "gam_q",
        "if_d",
        "if_q",
        "vc_d",
        "vc_q",
        "ig_d",
        "ig_q",
    ),  # fmt: skip
    algebraics=(),
    inputs=("v_D", "v_Q", "w", "P_ref", "Q_ref"),
    outputs=("i_D", "i_Q", "omega"),
    params=GFL_PARAMS,
    f=_gfl_f,
    h=_gfl_h,
    controller_states=("delta", "eps", "Pf", "Qf", "xi_p", "xi_q", "gam_d", "gam_q"),
    perturbation={"delta": 0.02},
    description="grid-following inverter: SRF-PLL on the filter-capacitor voltage, P and Q PI "
    "loops on filtered powers, current PI loop with decoupling, LCL filter (averaged converter)",
)


# ------------------------------------------------------------------------- initialization


def init_sm(p: dict, v: complex, i_sys: complex) -> tuple[dict, dict, dict]:
    """(states, algebraics, exogenous set-points) of a machine delivering ``i_sys`` (system
    base) at terminal voltage ``v`` at rated speed (Kundur §3.6.5: delta from E_q = V + (Ra + j
    Lq) I)."""
    lad, laq, ll, ra = p["Lad"], p["Laq"], p["Ll"], p["Ra"]
    i = i_sys / p["S"]
    delta = float(np.angle(v + complex(ra, ll + laq) * i))
    rot = np.exp(1j * (delta - np.pi / 2))
    vdq, idq = v / rot, i / rot
    v_d, v_q, i_d, i_q = vdq.real, vdq.imag, idq.real, idq.imag
    psi_d, psi_q = v_q + ra * i_q, -(v_d + ra * i_d)
    i_fd = (psi_d + (ll + lad) * i_d) / lad
    x = {
        "psi_d": psi_d,
        "psi_q": psi_q,
        "psi_fd": (p["Lfd"] + lad) * i_fd - lad * i_d,
        "psi_1d": lad * (i_fd - i_d),
        "psi_1q": -laq * i_q,
        "psi_2q": -laq * i_q,
        "delta": delta,
        "omega": 1.0,
        "efd": lad * i_fd,
        "pm": psi_d * i_q - psi_q * i_d,
    }
    z = {"i_d": i_d, "i_q": i_q, "i_fd": i_fd, "i_1d": 0.0, "i_1q": 0.0, "i_2q": 0.0}
    exo = {"V_ref": abs(v) + x["efd"] / p["Ka"], "P_ref": x["pm"]}
    return x, z, exo


def init_gfm(p: dict, v: complex, i_sys: complex) -> tuple[dict, dict, dict]:
    """Steady state of a droop inverter injecting ``i_sys`` at ``v``, at nominal frequency (its
    d axis on the filter-capacitor voltage, which the voltage loop holds with v_q = 0)."""
    io_g = i_sys / p["S"]
    vo_g = v + complex(p["Rc"], p["Lc"]) * io_g
    delta = float(np.angle(vo_g))
    rot = np.exp(-1j * delta)
    io, vo = io_g * rot, vo_g * rot
    il = io + 1j * p["Cf"] * vo
    vi = vo + complex(p["Rf"], p["Lf"]) * il
    s = vo * np.conj(io)
    phi = (il - p["F"] * io - 1j * p["Cf"] * vo) / p["Kiv"]
    gam = (vi - 1j * p["Lf"] * il) / p["Kic"]
    x = {"delta": delta, "Pf": s.real, "Qf": s.imag, "phi_d": phi.real, "phi_q": phi.imag}
    x.update(gam_d=gam.real, gam_q=gam.imag, il_d=il.real, il_q=il.imag, vo_d=vo.real)
    x.update(vo_q=vo.imag, io_d=io.real, io_q=io.imag)
    exo = {"P_set": s.real, "V_set": abs(vo) + p["nq"] * s.imag}
    return x, {}, exo


def init_gfl(p: dict, v: complex, i_sys: complex) -> tuple[dict, dict, dict]:
    """Steady state of a grid-following inverter injecting ``i_sys`` at ``v`` (PLL locked on
    the filter-capacitor voltage: vc_q = 0, omega = 1)."""
    ig_g = i_sys / p["S"]
    vc_g = v + complex(p["Rg"], p["Lg"]) * ig_g
    delta = float(np.angle(vc_g))
    rot = np.exp(-1j * delta)
    ig, vc = ig_g * rot, vc_g * rot
    i_f = ig + 1j * p["Cf"] * vc
    vi = vc + complex(p["Rf"], p["Lf"]) * i_f
    s = vc * np.conj(ig)
    gam = (vi - vc - 1j * p["Lf"] * i_f) / p["Kic"]
    x = {"delta": delta, "eps": 0.0, "Pf": s.real, "Qf": s.imag}
    x.update(xi_p=i_f.real / p["Ki_pq"], xi_q=-i_f.imag / p["Ki_pq"])
    x.update(gam_d=gam.real, gam_q=gam.imag, if_d=i_f.real, if_q=i_f.imag)
    x.update(vc_d=vc.real, vc_q=vc.imag, ig_d=ig.real, ig_q=ig.imag)
    return x, {}, {"P_ref": s.real, "Q_ref": s.imag}


def init_infinite_bus(p: dict, v: complex, i_sys: complex) -> tuple[dict, dict, dict]:
    """Source voltage behind r + jx that injects ``i_sys`` at ``v``; sets ``p['angle']``."""
    source = v + complex(p["r"], p["x"]) * i_sys
    p["angle"] = float(np.angle(source))
    return {"i_D": i_sys.real, "i_Q": i_sys.imag}, {}, {"E": abs(source)}
