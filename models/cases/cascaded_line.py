"""Cascaded M-section line: a stiff RMS benchmark with modes up to about 7 kHz (10 sections).

An ideal voltage source (``v_source``, pu, at angle 0) feeds a constant-impedance load
(``load_g + j load_b``, pu) through M identical pi-sections of a line with total series impedance
R + jX and total charging B (pu on 100 MVA at 60 Hz), as in the RAPTOR paper's cascaded M-section
line benchmark (Ellinas et al., §IV-B.1). The line is modelled by its dynamic phasors in a dq frame
rotating at omega_b = 2 pi 60 rad/s (P. Kundur, Power System Stability and Control, 1994, §6.4;
T. Demiray, "Simulation of power system dynamics using dynamic phasor models", ETH Zürich
dissertation, 2008, Ch. 3), with section values Rs = R/M, Xs = X/M, Bs = B/M (Xs = omega_b Ls,
Bs = omega_b Cs):

    (Xs / omega_b) d i_k/dt = v_{k-1} - v_k - (Rs + j Xs) i_k                    k = 1..M
    (Bk / omega_b) d v_k/dt = i_k - i_{k+1} - j Bk v_k   (- i_load at k = M)      k = 1..M
    0 = i_load - (load_g + j load_b) v_M                                          (algebraic)

with v_0 = v_source, i_{M+1} = 0, Bk = Bs for inner nodes and Bs / 2 at the receiving end (the
sending-end half-shunt sits on the ideal source). Complex quantities are split into d (real) and
q (imaginary) parts. The section LC resonances reach about 2 M omega_b / (2 pi sqrt(X B)) Hz: with
the defaults (X = 0.1, B = 0.3 pu) about 7 kHz at M = 10, the paper's range.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

import models.jaxconfig  # noqa: F401
from models.dae import DAESystem

F_HZ = 60.0
DEFAULT_SECTIONS = 10
LINE = {"R": 0.01, "X": 0.1, "B": 0.3}
"""Total line data (pu on 100 MVA, 60 Hz): roughly a 150-200 km 230 kV overhead line."""
LOAD = {"P": 0.9, "Q": 0.3}
"""Load drawn at 1 pu voltage (pu), represented as an admittance."""


def build_cascaded_line(
    sections: int = DEFAULT_SECTIONS,
    *,
    r: float = LINE["R"],
    x: float = LINE["X"],
    b: float = LINE["B"],
    load_p: float = LOAD["P"],
    load_q: float = LOAD["Q"],
    v_source: float = 1.0,
) -> DAESystem:
    """The cascaded line with ``sections`` pi-sections at its steady state."""
    start = time.perf_counter()
    if not isinstance(sections, int) or sections < 1:
        raise ValueError(f"sections must be a positive integer, got {sections!r}")
    for field, value in (("x", x), ("b", b), ("v_source", v_source)):
        if not value > 0:
            raise ValueError(f"cascaded line: field {field!r} must be > 0, got {value!r}")
    if r < 0:
        raise ValueError(f"cascaded line: field 'r' must be >= 0, got {r!r}")
    m = sections
    omega_b = 2.0 * np.pi * F_HZ
    b_node = np.full(m, b / m)
    b_node[-1] = 0.5 * b / m
    params = {
        "sec_r": np.full(m, r / m),
        "sec_x": np.full(m, x / m),
        "node_b": b_node,
        "load_g": np.array([load_p]),
        "load_b": np.array([-load_q]),
        "v_source": np.asarray(v_source, dtype=np.float64),
    }

    def unpack(x_):
        s = x_.reshape(m, 4).T  # per section k: i_d, i_q, v_d, v_q
        return s[0] + 1j * s[1], s[2] + 1j * s[3]

    def f(x_, z, p):
        i, v = unpack(x_)
        i_load = z[0] + 1j * z[1]
        v_prev = jnp.concatenate([jnp.asarray(p["v_source"] + 0j)[None], v[:-1]])
        i_next = jnp.concatenate([i[1:], i_load[None]])
        di = omega_b / p["sec_x"] * (v_prev - v - (p["sec_r"] + 1j * p["sec_x"]) * i)
        dv = omega_b / p["node_b"] * (i - i_next - 1j * p["node_b"] * v)
        return jnp.stack([di.real, di.imag, dv.real, dv.imag], axis=1).ravel()

    def g(x_, z, p):
        _, v = unpack(x_)
        res = z[0] + 1j * z[1] - (p["load_g"][0] + 1j * p["load_b"][0]) * v[-1]
        return jnp.stack([res.real, res.imag])

    def outputs(x_, z, p):
        i, v = unpack(x_)
        return jnp.concatenate(
            [jnp.abs(v), jnp.angle(v), jnp.abs(i), jnp.max(jnp.abs(g(x_, z, p)))[None]]
        )

    # steady state: the system is linear, so one solve of the stacked Jacobian gives it
    p_dev = {k: jnp.asarray(val) for k, val in params.items()}
    n_x = 4 * m

    def stacked(w):
        return jnp.concatenate([f(w[:n_x], w[n_x:], p_dev), g(w[:n_x], w[n_x:], p_dev)])

    w0 = jnp.zeros(n_x + 2)
    jac = jax.jacfwd(stacked)(w0)
    w = np.asarray(w0 - jnp.linalg.solve(jac, stacked(w0)))
    x0, z0 = w[:n_x], w[n_x:]
    f_res = float(np.max(np.abs(np.asarray(f(x0, z0, p_dev)))))
    g_res = float(np.max(np.abs(np.asarray(g(x0, z0, p_dev)))))
    scale_f = omega_b / min(x / m, b / (2 * m))
    if not (f_res <= 1e-8 * scale_f and g_res <= 1e-8):
        raise RuntimeError(f"steady state not found: |f| = {f_res:.2e}, |g| = {g_res:.2e}")

    nodes = tuple(f"n{k}" for k in range(1, m + 1))
    state_names = tuple(f"{s}[{k}]" for k in range(1, m + 1) for s in ("i_d", "i_q", "v_d", "v_q"))
    return DAESystem(
        name="cascaded_line",
        state_names=state_names,
        alg_names=("i_load_d", "i_load_q"),
        f=f,
        g=g,
        x0=x0,
        z0=z0,
        params={k: np.asarray(val, dtype=np.float64) for k, val in params.items()},
        output_names=tuple(f"V[{n}]" for n in nodes)
        + tuple(f"theta[{n}]" for n in nodes)
        + tuple(f"I[sec{k}]" for k in range(1, m + 1))
        + ("kcl_max",),
        outputs=outputs,
        perturbation_scale=np.full(n_x, 0.01),
        names={"bus": ("n0",) + nodes, "load": (nodes[-1],), "source": ("n0",)},
        description=(
            f"cascaded {m}-section pi line (dynamic phasors, dq at {F_HZ:g} Hz) from an ideal "
            "source to a constant-impedance load"
        ),
        info={
            "n_bus": m + 1,
            "sections": m,
            "f_hz": F_HZ,
            "line_pu": {"R": r, "X": x, "B": b},
            "load_pu": {"P": load_p, "Q": load_q},
            "highest_lc_mode_hz": float(2 * m * F_HZ / np.sqrt(x * b)),
            "init_max_abs_f": f_res,
            "init_max_abs_g": g_res,
            "build_seconds": time.perf_counter() - start,
            "sources": "RAPTOR paper (Ellinas et al.) cascaded M-section line benchmark; "
            "line data typical of a 230 kV overhead line (Kundur 1994, Table 6.1 ranges)",
        },
    )
