"""EMT synchronous machine: a machine with stator transients feeding a local load and an infinite
bus through an RL line whose currents are dynamic; the source is switched off (the RAPTOR paper's
EMT synchronous-machine benchmark, Ellinas et al., §IV-D.1: 8 differential and 11 algebraic
states, the infinite-bus voltage source switched off at 0.05 s).

Machine: the flux-linkage model of P. Kundur, *Power System Stability and Control*, 1994, §3.4
(per-unit equations 3.120-3.135, generator convention, Lad-base reciprocal per unit) with the
stator flux derivatives kept (no stator-transient neglect, §5.1), one field winding and one q-axis
damper (IEEE Std 1110-2002 "model 1.1" structure). Rotor reference frame (dq, q leading d by 90 deg,
the q axis at angle ``delta`` from the network's D axis); time in seconds, omega_b = 2 pi 60 rad/s,
speeds in pu of omega_b, every other quantity in pu on the machine rating (S_base = 555 MVA,
V_base = 24 kV line-line, Kundur Example 3.1). With ``Ld = Ll + Lad``, ``Lq = Ll + Laq``,
``Lffd = Lfd + Lad``, ``L11q = L1q + Laq``:

    dpsi_d/dt   = omega_b (v_d + Ra i_d + omega psi_q)             (Kundur 3.120, p = d/dt/omega_b)
    dpsi_q/dt   = omega_b (v_q + Ra i_q - omega psi_d)             (3.121)
    dpsi_fd/dt  = omega_b (e_fd - Rfd i_fd)                        (3.123)
    dpsi_1q/dt  = omega_b (-R1q i_1q)                              (3.126)
    ddelta/dt   = omega_b (omega - 1)
    domega/dt   = (Tm - Te - D (omega - 1)) / (2 H)                (3.9 / 3.228 in pu)
    0 = psi_d + Ld i_d - Lad i_fd,     0 = psi_fd + Lad i_d - Lffd i_fd     (3.127, 3.130)
    0 = psi_q + Lq i_q - Laq i_1q,     0 = psi_1q + Laq i_q - L11q i_1q     (3.128, 3.132)
    0 = Te - (psi_d i_q - psi_q i_d)                               (3.117)

Network (synchronous frame D + jQ, rotating at omega_b; complex phasors, Kundur §6.4 / dynamic
phasors of an RL branch): terminal bus ``term`` with a constant-conductance local load ``load_g``,
an RL line R_L + j X_L to bus ``grid``, where a resistive shunt ``grid_g`` (a remote load) and the
infinite-bus source ``v_source`` behind the resistance ``r_source`` sit. The source is switched by
``source_on`` (1 closed, 0 open): its branch conductance is ``source_on / r_source``, so the
switch is a parameter change and the DAE stays index 1 either way (the shunt keeps V_grid
algebraic when the source is open). ``fault_g + j fault_b`` (per bus, zero) is a quasi-static
fault admittance so ``bus_fault`` also applies (an algebraic shunt, not an EMT fault inductance).

    (X_L / omega_b) dI_L/dt = V_t - V_g - (R_L + j X_L) I_L                 (differential, 2)
    0 = v_d + j v_q - V_t e^{-j(delta - pi/2)}                         (Park; Sauer & Pai Ch. 7)
    0 = (i_d + j i_q) e^{j(delta - pi/2)} - I_L - load_g V_t                (KCL at term)
    0 = I_L - grid_g V_g - (source_on / r_source) (V_g - v_source)         (KCL at grid)

States (8): psi_d, psi_q, psi_fd, psi_1q, delta, omega, iL_D, iL_Q. Algebraic (11): i_d, i_q, i_fd,
i_1q, v_d, v_q, Vt_D, Vt_Q, Vg_D, Vg_Q, Te: the paper's 8 + 11. Field voltage ``efd`` and
mechanical torque ``tm`` are constant parameters (no exciter or governor: the 0.2-0.5 s horizons of
the EMT benchmark are far shorter than their time constants). Machine data: Kundur Examples 3.1 /
3.2 fundamental parameters with the first q damper (Lad 1.66, Laq 1.61, Ll 0.15, Ra 0.003,
Lfd 0.165, Rfd 0.0006, L1q 0.7252, R1q 0.00619, H 3.5 s). The example values and the equation
numbers above were written from memory of the book: verify them against it.

Equilibrium: a power flow with the machine terminal as PV bus (P, |V| given, load included) and
the source as slack (angle 0), then the machine initialization of Kundur §3.6.5 (delta from
E_q = V_t + (Ra + j Lq) I), then a joint Newton on (x, z, efd, tm) with f = 0, g = 0, |V_t| = V and
P_t = P, checked to |f|, |g| <= 1e-8.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

import models.jaxconfig  # noqa: F401
from models.cases.equilibrium import INIT_TOL
from models.dae import DAESystem
from models.disturbances import SourceSwitch

F_HZ = 60.0
OMEGA_B = 2.0 * np.pi * F_HZ
MACHINE = {
    "Lad": 1.66,
    "Laq": 1.61,
    "Ll": 0.15,
    "Ra": 0.003,
    "Lfd": 0.165,
    "Rfd": 0.0006,
    "L1q": 0.7252,
    "R1q": 0.00619,
    "H": 3.5,
    "D": 0.0,
}
"""Fundamental machine parameters (pu on 555 MVA, H in s): Kundur 1994, Examples 3.1-3.2."""
NETWORK = {"r_line": 0.005, "x_line": 0.3, "load_g": 0.5, "grid_g": 0.3, "r_source": 1e-3}
"""RL line (step-up transformer plus line), local and remote resistive loads (pu at 1 pu V) and
the source resistance (pu on 555 MVA)."""
OPERATING_POINT = {"p": 0.9, "v": 1.0, "v_source": 1.0}
"""Machine terminal active power and voltage magnitude, infinite-bus voltage (pu)."""

STATE_NAMES = ("psi_d", "psi_q", "psi_fd", "psi_1q", "delta", "omega", "iL_D", "iL_Q")
ALG_NAMES = ("i_d", "i_q", "i_fd", "i_1q", "v_d", "v_q", "Vt_D", "Vt_Q", "Vg_D", "Vg_Q", "Te")
OUTPUT_NAMES = (
    "V[term]",
    "theta[term]",
    "V[grid]",
    "theta[grid]",
    "omega[gen]",
    "delta[gen]",
    "Pe[gen]",
    "I[line]",
    "I[gen]",
    "kcl_max",
)
EVENT_LOAD_SCALES = tuple(round(0.8 + 0.05 * k, 2) for k in range(10))
"""Local-load scales of the ten preset events (0.80 ... 1.25, applied with the switch-off)."""
SWITCH_TIME = 0.05
"""Source switch-off instant of the paper's benchmark (s)."""


def emt_sm_events(t: float = SWITCH_TIME) -> dict[str, SourceSwitch]:
    """The ten preset disturbance events for averaging, by name: the source opens at ``t`` and at
    the same instant the local load becomes ``scale`` x its pre-switch value, ``scale`` in
    ``EVENT_LOAD_SCALES``. (In the dq frame a steady state is constant, so switching instants
    alone would only shift one trajectory in time; the loadings give ten distinct transients.)"""
    return {
        f"source_off_load{round(100 * s):03d}": SourceSwitch(t=t, load="term", load_scale=s)
        for s in EVENT_LOAD_SCALES
    }


def _unpack(z):
    i_d, i_q, i_fd, i_1q, v_d, v_q, vt_d, vt_q, vg_d, vg_q, te = (z[k] for k in range(11))
    return i_d, i_q, i_fd, i_1q, v_d, v_q, vt_d + 1j * vt_q, vg_d + 1j * vg_q, te


def _f(x, z, p):
    psi_d, psi_q, psi_fd, psi_1q, _delta, omega, il_d, il_q = (x[k] for k in range(8))
    i_d, i_q, i_fd, i_1q, v_d, v_q, vt, vg, te = _unpack(z)
    il = il_d + 1j * il_q
    dil = OMEGA_B / p["x_line"] * (vt - vg - (p["r_line"] + 1j * p["x_line"]) * il)
    return jnp.stack(
        [
            OMEGA_B * (v_d + p["Ra"] * i_d + omega * psi_q),
            OMEGA_B * (v_q + p["Ra"] * i_q - omega * psi_d),
            OMEGA_B * (p["efd"] - p["Rfd"] * i_fd),
            OMEGA_B * (-p["R1q"] * i_1q),
            OMEGA_B * (omega - 1.0),
            (p["tm"] - te - p["D"] * (omega - 1.0)) / (2.0 * p["H"]),
            dil.real,
            dil.imag,
        ]
    )


def _g(x, z, p):
    psi_d, psi_q, psi_fd, psi_1q, delta, _omega, il_d, il_q = (x[k] for k in range(8))
    i_d, i_q, i_fd, i_1q, v_d, v_q, vt, vg, te = _unpack(z)
    lad, laq, ll = p["Lad"], p["Laq"], p["Ll"]
    rot = jnp.exp(1j * (delta - jnp.pi / 2))
    park = v_d + 1j * v_q - vt / rot
    y_fault = p["fault_g"] + 1j * p["fault_b"]
    kcl_t = (i_d + 1j * i_q) * rot - (il_d + 1j * il_q) - (p["load_g"][0] + y_fault[0]) * vt
    g_src = p["source_on"][0] / p["r_source"]
    kcl_g = il_d + 1j * il_q - (p["grid_g"] + y_fault[1]) * vg - g_src * (vg - p["v_source"])
    return jnp.stack(
        [
            psi_d + (ll + lad) * i_d - lad * i_fd,
            psi_fd + lad * i_d - (p["Lfd"] + lad) * i_fd,
            psi_q + (ll + laq) * i_q - laq * i_1q,
            psi_1q + laq * i_q - (p["L1q"] + laq) * i_1q,
            park.real,
            park.imag,
            kcl_t.real,
            kcl_t.imag,
            kcl_g.real,
            kcl_g.imag,
            te - (psi_d * i_q - psi_q * i_d),
        ]
    )


def _outputs(x, z, p):
    i_d, i_q, _, _, _, _, vt, vg, _ = _unpack(z)
    i_gen = (i_d + 1j * i_q) * jnp.exp(1j * (x[4] - jnp.pi / 2))
    p_t = jnp.real(vt * jnp.conj(i_gen))
    return jnp.stack(
        [
            jnp.abs(vt),
            jnp.angle(vt),
            jnp.abs(vg),
            jnp.angle(vg),
            x[5],
            x[4],
            p_t,
            jnp.hypot(x[6], x[7]),
            jnp.abs(i_gen),
            jnp.max(jnp.abs(_g(x, z, p)[6:10])),
        ]
    )


def _power_flow(pr: dict, p_spec: float, v_spec: float) -> tuple[complex, complex, complex]:
    """(V_t, I_gen, I_line) with |V_t| = v_spec, Re(V_t conj I_gen) = p_spec, source at angle 0."""
    zl = complex(pr["r_line"], pr["x_line"])
    g_src = float(pr["source_on"][0]) / pr["r_source"]
    y_g = pr["grid_g"] + g_src
    vs = pr["v_source"]

    # I_L zl = V_t - V_g and V_g y_g = I_L + g_src vs give I_gen = y V_t + c
    y_line = 1.0 / (zl + 1.0 / y_g)
    y, c = y_line + pr["load_g"][0], -g_src * vs / y_g * y_line
    theta = 0.0
    for _ in range(50):  # Newton on P(theta) = v^2 Re(y) + Re(V_t conj(c)) = p_spec
        vt = v_spec * np.exp(1j * theta)
        mismatch = v_spec**2 * y.real + (vt * np.conj(c)).real - p_spec
        if abs(mismatch) < 1e-13:
            break
        theta -= mismatch / (1j * vt * np.conj(c)).real
    else:  # pragma: no cover - a smooth scalar equation from the no-load angle
        raise RuntimeError("emt_sm: power flow did not converge (P beyond the transfer limit?)")
    vt = v_spec * np.exp(1j * theta)
    return vt, y * vt + c, y_line * vt + c


def build_emt_sm(
    *,
    p: float = OPERATING_POINT["p"],
    v: float = OPERATING_POINT["v"],
    v_source: float = OPERATING_POINT["v_source"],
    load_g: float = NETWORK["load_g"],
    grid_g: float = NETWORK["grid_g"],
    r_line: float = NETWORK["r_line"],
    x_line: float = NETWORK["x_line"],
    r_source: float = NETWORK["r_source"],
) -> DAESystem:
    """The EMT synchronous-machine case at the equilibrium of machine output ``p`` at ``|V_t| = v``
    (pu on 555 MVA), with the source closed (``source_on = 1``)."""
    start = time.perf_counter()
    positive = (("v", v), ("v_source", v_source), ("x_line", x_line), ("r_source", r_source))
    for name, value in positive:
        if not value > 0:
            raise ValueError(f"emt_sm: field {name!r} must be > 0, got {value!r}")
    for name, value in (("load_g", load_g), ("grid_g", grid_g), ("r_line", r_line)):
        if value < 0:
            raise ValueError(f"emt_sm: field {name!r} must be >= 0, got {value!r}")
    if not grid_g > 0:
        raise ValueError("emt_sm: field 'grid_g' must be > 0 (it keeps V_grid defined when open)")
    params: dict = {k: np.asarray(val, dtype=np.float64) for k, val in MACHINE.items()}
    params.update(
        r_line=np.asarray(r_line),
        x_line=np.asarray(x_line),
        load_g=np.array([load_g]),
        grid_g=np.asarray(grid_g),
        r_source=np.asarray(r_source),
        v_source=np.asarray(v_source),
        source_on=np.array([1.0]),
        fault_g=np.zeros(2),
        fault_b=np.zeros(2),
        efd=np.asarray(0.0),
        tm=np.asarray(0.0),
    )
    pr = {k: (np.asarray(val) if np.ndim(val) else float(val)) for k, val in params.items()}

    # power flow, then Kundur §3.6.5: delta from E_q = V_t + (Ra + j Lq) I
    vt, ig, il = _power_flow(pr, p, v)
    lad, laq, ll, ra = pr["Lad"], pr["Laq"], pr["Ll"], pr["Ra"]
    delta = float(np.angle(vt + complex(ra, ll + laq) * ig))
    rot = np.exp(1j * (delta - np.pi / 2))
    vdq, idq = vt / rot, ig / rot
    v_d, v_q, i_d, i_q = vdq.real, vdq.imag, idq.real, idq.imag
    psi_d, psi_q = v_q + ra * i_q, -(v_d + ra * i_d)
    i_fd = (psi_d + (ll + lad) * i_d) / lad
    psi_fd = (pr["Lfd"] + lad) * i_fd - lad * i_d
    psi_1q = -laq * i_q
    te = psi_d * i_q - psi_q * i_d
    vg = vt - complex(r_line, x_line) * il
    x0 = np.array([psi_d, psi_q, psi_fd, psi_1q, delta, 1.0, il.real, il.imag])
    z0 = np.array([i_d, i_q, i_fd, 0.0, v_d, v_q, vt.real, vt.imag, vg.real, vg.imag, te])
    params["efd"] = np.asarray(pr["Rfd"] * i_fd)
    params["tm"] = np.asarray(te)

    # joint Newton on (x, z, efd, tm): f = 0, g = 0, |V_t|^2 = v^2, P_t = p
    base = {k: jnp.asarray(val) for k, val in params.items()}

    def residual(w):
        q = dict(base, efd=w[19], tm=w[20])
        xx, zz = w[:8], w[8:19]
        out = _outputs(xx, zz, q)
        return jnp.concatenate(
            [
                _f(xx, zz, q) / OMEGA_B,
                _g(xx, zz, q),
                jnp.stack([zz[6] ** 2 + zz[7] ** 2 - v**2, out[6] - p]),
            ]
        )

    res_fn, jac_fn = jax.jit(residual), jax.jit(jax.jacfwd(residual))
    w = jnp.asarray(np.concatenate([x0, z0, [params["efd"], params["tm"]]]))
    for _ in range(10):
        step = jnp.linalg.solve(jac_fn(w), res_fn(w))
        w = w - step
        if float(jnp.max(jnp.abs(step))) < 1e-15:
            break
    solved = np.asarray(w)
    x0, z0 = solved[:8], solved[8:19]
    params["efd"], params["tm"] = np.asarray(solved[19]), np.asarray(solved[20])
    p_dev = {k: jnp.asarray(val) for k, val in params.items()}
    f_res = float(np.max(np.abs(np.asarray(_f(x0, z0, p_dev)))))
    g_res = float(np.max(np.abs(np.asarray(_g(x0, z0, p_dev)))))
    if not (f_res <= INIT_TOL and g_res <= INIT_TOL):
        raise RuntimeError(f"emt_sm: no equilibrium: |f| = {f_res:.2e}, |g| = {g_res:.2e}")

    scale = np.zeros(8)
    scale[4], scale[5] = 0.05, 1e-3  # rotor angle (rad), speed (pu)
    return DAESystem(
        name="emt_sm",
        state_names=STATE_NAMES,
        alg_names=ALG_NAMES,
        f=_f,
        g=_g,
        x0=x0,
        z0=z0,
        params={k: np.asarray(val, dtype=np.float64) for k, val in params.items()},
        output_names=OUTPUT_NAMES,
        outputs=_outputs,
        perturbation_scale=scale,
        names={
            "bus": ("term", "grid"),
            "branch": ("line",),
            "generator": ("gen",),
            "load": ("term",),
            "source": ("grid",),
        },
        description=(
            "EMT synchronous machine (stator and field/damper flux dynamics, dq frame) with a "
            "local load and an RL line to an infinite-bus source that is switched off"
        ),
        info={
            "n_bus": 2,
            "f_hz": F_HZ,
            "s_base_mva": 555.0,
            "machine_pu": dict(MACHINE),
            "network_pu": {
                "r_line": r_line,
                "x_line": x_line,
                "load_g": load_g,
                "grid_g": grid_g,
                "r_source": r_source,
            },
            "operating_point": {"p": p, "v": v, "v_source": v_source},
            "efd": float(params["efd"]),
            "tm": float(params["tm"]),
            "switch_time_s": SWITCH_TIME,
            "event_names": tuple(emt_sm_events()),
            "init_max_abs_f": f_res,
            "init_max_abs_g": g_res,
            "build_seconds": time.perf_counter() - start,
            "sources": "Kundur 1994 §3.4 (eqs. 3.117-3.135), Examples 3.1-3.2 machine data, "
            "§3.6.5 initialization; RAPTOR paper (Ellinas et al.) §IV-D.1 EMT SM benchmark",
        },
    )
