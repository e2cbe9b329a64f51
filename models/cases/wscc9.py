"""WSCC / IEEE 3-machine 9-bus system as a semi-explicit index-1 DAE.

Static data and operating point: MATPOWER ``case9`` through ``pandapower.networks.case9()``
(``models.powerflow``), 100 MVA, 60 Hz. Dynamic data: ``models/data/wscc9_dynamic.json``
(Sauer & Pai 1998, Example 7.1): two-axis machines (``synchronous_two_axis``) with IEEE DC1A
exciters (``exciter_ieee_dc1a``) on generator buses 1, 2, 3; constant-impedance loads at the
load buses (``loads``); network KCL over the branch list (``models.network``).

Variables (all pu on 100 MVA unless stated):

* x, per machine k in bus order: [delta (rad), omega, Eq_p, Ed_p, Efd, RF, VR], i.e.
  ``x.reshape(n_gen, 7)``;
* z = [Vr of every bus, Vi of every bus, Id of every machine, Iq of every machine];
* g = [Re KCL of every bus, Im KCL of every bus, d-stator of every machine, q-stator ...].

The initial point follows Sauer & Pai §7.6 from the power flow (machines, then exciters), after
which z is polished by Newton on g at x0; TM (``tm``) and Vref (``vref``) are parameters. A
generator trip sets ``gen_status`` 1 -> 0: its stator equations become Id = Iq = 0.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path

import jax.numpy as jnp
import numpy as np

import models.jaxconfig  # noqa: F401
from models.cases.equilibrium import network_alg_names, network_output_names, newton_z
from models.components import exciter_ieee_dc1a as exc
from models.components import synchronous_two_axis as sm
from models.components.loads import constant_impedance
from models.dae import DAESystem
from models.network import Topology, branch_parameters, current_mismatch
from models.powerflow import PowerFlowCase, case9_power_flow

DATA_PATH = Path(__file__).resolve().parent.parent / "data" / "wscc9_dynamic.json"
GEN_STATES = sm.STATES + exc.STATES
"""Differential states of one machine with its exciter, in the order used in x."""
INIT_TOL = 1e-8
"""Largest accepted |f| and |g| at the initial point."""


def load_dynamic_data(path: Path | str = DATA_PATH) -> dict:
    """The raw dynamic-data document (JSON)."""
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def validate_dynamic_data(data: Mapping) -> dict[int, dict[str, dict[str, float]]]:
    """Validated machine and exciter fields per generator bus number.

    A missing or non-physical value raises ``ValueError`` naming the device and the field.
    """
    if not isinstance(data, Mapping) or not isinstance(data.get("generators"), list):
        raise ValueError("dynamic data: 'generators' must be a list of generator entries")
    if not str(data.get("source", "")).strip():
        raise ValueError("dynamic data: field 'source' (the data's reference) is missing")
    out: dict[int, dict[str, dict[str, float]]] = {}
    for k, entry in enumerate(data["generators"]):
        bus = entry.get("bus") if isinstance(entry, Mapping) else None
        if isinstance(bus, bool) or not isinstance(bus, int):
            raise ValueError(f"generator entry {k}: field 'bus' must be an integer bus number")
        device = f"generator at bus {bus} (gen{bus})"
        if bus in out:
            raise ValueError(f"{device}: listed twice")
        machine, exciter = entry.get("machine"), entry.get("exciter")
        if not isinstance(machine, Mapping) or machine.get("model") != "two_axis":
            raise ValueError(f"{device}: field 'machine' must have model 'two_axis'")
        if not isinstance(exciter, Mapping) or exciter.get("model") != "ieee_dc1a":
            raise ValueError(f"{device}: field 'exciter' must have model 'ieee_dc1a'")
        out[bus] = {
            "machine": sm.validate_two_axis(f"{device}, machine", machine),
            "exciter": exc.validate_dc1a(f"{device}, exciter", exciter),
        }
    return out


def _dynamic_params(pf: PowerFlowCase, data: Mapping) -> tuple[dict[str, np.ndarray], list[int]]:
    devices = validate_dynamic_data(data)
    gen_numbers = [int(pf.bus_numbers[i]) for i in pf.gen_bus]
    if sorted(devices) != sorted(gen_numbers) or len(set(gen_numbers)) != len(gen_numbers):
        raise ValueError(
            f"dynamic data covers generator buses {sorted(devices)} but the power flow has "
            f"generators at buses {gen_numbers}"
        )
    for field, value in (("system_base_mva", pf.base_mva), ("frequency_hz", pf.f_hz)):
        if field in data and float(data[field]) != value:
            raise ValueError(f"dynamic data: {field} = {data[field]} but the case has {value}")
    params = {
        name: np.array([devices[b]["machine"][name] for b in gen_numbers], dtype=np.float64)
        for name in sm.PARAMS
    }
    for name in exc.PARAMS:
        params[f"exc_{name}"] = np.array(
            [devices[b]["exciter"][name] for b in gen_numbers], dtype=np.float64
        )
    return params, gen_numbers


def _exciter_view(p: Mapping) -> dict:
    return {name: p[f"exc_{name}"] for name in exc.PARAMS}


def build_wscc9(data: Mapping | None = None, power_flow: PowerFlowCase | None = None) -> DAESystem:
    """The WSCC 9-bus DAE at its power-flow equilibrium.

    ``data`` defaults to ``models/data/wscc9_dynamic.json`` (a modified copy may be passed, e.g.
    in tests); ``power_flow`` defaults to ``case9_power_flow()``.
    """
    data = load_dynamic_data() if data is None else copy.deepcopy(dict(data))
    pf = case9_power_flow() if power_flow is None else power_flow
    params, gen_numbers = _dynamic_params(pf, data)
    n_bus, n_gen = pf.n_bus, len(gen_numbers)
    omega_s = 2.0 * np.pi * pf.f_hz
    topo = Topology(n_bus, pf.branch_from, pf.branch_to)
    gen_bus = np.asarray(pf.gen_bus)
    load_bus = pf.load_buses
    n_load = int(load_bus.size)

    bus_names = tuple(f"bus{int(b)}" for b in pf.bus_numbers)
    gen_names = tuple(f"gen{b}" for b in gen_numbers)
    branch_names = tuple(
        f"br_{int(pf.bus_numbers[f])}_{int(pf.bus_numbers[t])}"
        for f, t in zip(pf.branch_from, pf.branch_to, strict=True)
    )
    if len(set(branch_names)) != len(branch_names):  # parallel branches: number the repeats
        seen: dict[str, int] = {}
        named = []
        for name in branch_names:
            seen[name] = seen.get(name, 0) + 1
            named.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
        branch_names = tuple(named)
    load_names = tuple(bus_names[i] for i in load_bus)

    load_g, load_b = constant_impedance(pf.load_p[load_bus], pf.load_q[load_bus], pf.vm[load_bus])
    params.update(
        branch_parameters(
            pf.branch_r, pf.branch_x, pf.branch_b, pf.branch_tap, pf.branch_shift, pf.branch_status
        )
    )
    params.update(
        load_g=load_g,
        load_b=load_b,
        shunt_g=pf.shunt_g.astype(np.float64),
        shunt_b=pf.shunt_b.astype(np.float64),
        fault_g=np.zeros(n_bus),
        fault_b=np.zeros(n_bus),
        gen_status=np.ones(n_gen),
    )

    # --- initialization twins (Sauer & Pai §7.6) ----------------------------------------------
    v_gen = pf.voltage[gen_bus]
    m0 = sm.init_two_axis(v_gen, pf.gen_p + 1j * pf.gen_q, params)
    e0 = exc.init_dc1a(m0["Efd"], np.abs(v_gen), _exciter_view(params))
    params["tm"] = m0["tm"]
    params["vref"] = e0["vref"]
    x0 = np.stack([m0[s] for s in sm.STATES] + [e0[s] for s in exc.STATES], axis=1).ravel()
    z_pf = np.concatenate([pf.voltage.real, pf.voltage.imag, m0["Id"], m0["Iq"]])

    # --- model functions ------------------------------------------------------------------------
    def unpack(x, z):
        states = x.reshape(n_gen, len(GEN_STATES)).T
        vr, vi = z[:n_bus], z[n_bus : 2 * n_bus]
        id_, iq = z[2 * n_bus : 2 * n_bus + n_gen], z[2 * n_bus + n_gen :]
        return states, vr, vi, id_, iq

    def f(x, z, p):
        (delta, omega, eq_p, ed_p, efd, rf, vr_exc), vr, vi, id_, iq = unpack(x, z)
        vt = jnp.sqrt(vr[gen_bus] ** 2 + vi[gen_bus] ** 2)
        dm = sm.two_axis_derivatives(delta, omega, eq_p, ed_p, id_, iq, efd, p["tm"], p, omega_s)
        de = exc.dc1a_derivatives(efd, rf, vr_exc, vt, p["vref"], _exciter_view(p))
        return jnp.stack(dm + de, axis=1).ravel()

    def kcl(x, z, p):
        (delta, _, eq_p, ed_p, *_), vr, vi, id_, iq = unpack(x, z)
        ir, ii = sm.to_network_frame(id_, iq, delta)
        injection = (
            jnp.zeros(n_bus, dtype=jnp.complex128).at[gen_bus].add(p["gen_status"] * (ir + 1j * ii))
        )
        y_load = (
            jnp.zeros(n_bus, dtype=jnp.complex128).at[load_bus].add(p["load_g"] + 1j * p["load_b"])
        )
        y_shunt = y_load + p["shunt_g"] + p["fault_g"] + 1j * (p["shunt_b"] + p["fault_b"])
        return current_mismatch(topo, vr + 1j * vi, injection, y_shunt, p)

    def g(x, z, p):
        (delta, _, eq_p, ed_p, *_), vr, vi, id_, iq = unpack(x, z)
        vd, vq = sm.to_machine_frame(vr[gen_bus], vi[gen_bus], delta)
        res_d, res_q = sm.two_axis_stator(eq_p, ed_p, vd, vq, id_, iq, p)
        on = p["gen_status"]  # a tripped machine (0) carries no stator current
        mismatch = kcl(x, z, p)
        return jnp.concatenate(
            [mismatch.real, mismatch.imag, on * res_d + (1 - on) * id_, on * res_q + (1 - on) * iq]
        )

    def outputs(x, z, p):
        (delta, omega, *_), vr, vi, id_, iq = unpack(x, z)
        ir, ii = sm.to_network_frame(id_, iq, delta)
        pe = p["gen_status"] * (vr[gen_bus] * ir + vi[gen_bus] * ii)
        kcl_max = jnp.max(jnp.abs(kcl(x, z, p)))
        return jnp.concatenate(
            [jnp.sqrt(vr**2 + vi**2), jnp.arctan2(vi, vr), omega, delta, pe, kcl_max[None]]
        )

    # --- polish z at x0 and check the equilibrium -----------------------------------------------
    p_dev = {k: jnp.asarray(v) for k, v in params.items()}
    g_res_pf = float(np.max(np.abs(np.asarray(g(x0, z_pf, p_dev)))))
    if not g_res_pf <= 1e-6:
        raise RuntimeError(
            f"the network model does not reproduce the power flow (|g| = {g_res_pf:.2e})"
        )
    z0 = _newton(g, x0, z_pf, p_dev)
    f_res = float(np.max(np.abs(np.asarray(f(x0, z0, p_dev)))))
    g_res = float(np.max(np.abs(np.asarray(g(x0, z0, p_dev)))))
    if not (f_res <= INIT_TOL and g_res <= INIT_TOL):
        raise RuntimeError(
            f"initial point is not an equilibrium: |f| = {f_res:.2e}, |g| = {g_res:.2e}"
        )

    state_names = tuple(f"{s}[{gname}]" for gname in gen_names for s in GEN_STATES)
    alg_names = network_alg_names(bus_names, gen_names)
    output_names = network_output_names(bus_names, gen_names) + ("kcl_max",)
    scale_per_gen = {"delta": 0.05, "omega": 1e-3}
    perturbation_scale = np.array(
        [scale_per_gen.get(s, 0.0) for _ in gen_names for s in GEN_STATES], dtype=np.float64
    )
    return DAESystem(
        name="wscc9",
        state_names=state_names,
        alg_names=alg_names,
        f=f,
        g=g,
        x0=x0,
        z0=z0,
        params={k: np.asarray(v, dtype=np.float64) for k, v in params.items()},
        output_names=output_names,
        outputs=outputs,
        perturbation_scale=perturbation_scale,
        names={
            "bus": bus_names,
            "branch": branch_names,
            "generator": gen_names,
            "load": load_names,
        },
        controller_states=tuple(f"{s}[{gname}]" for gname in gen_names for s in exc.STATES),
        description=(
            "WSCC 3-machine 9-bus system: two-axis machines with IEEE DC1A exciters (no limits), "
            "constant-impedance loads, MATPOWER case9 power flow via pandapower"
        ),
        info={
            "n_bus": n_bus,
            "n_branch": topo.n_branch,
            "n_gen": n_gen,
            "n_load": n_load,
            "f_hz": float(pf.f_hz),
            "s_base_mva": float(pf.base_mva),
            "sources": (
                "network and operating point: MATPOWER case9 via pandapower.networks.case9() "
                "(generator voltages 1.0 pu); machines and exciters: P. W. Sauer and M. A. Pai, "
                "Power System Dynamics and Stability, Prentice Hall, 1998, Ch. 7 and Example 7.1 "
                "(two-axis model, IEEE DC1A exciter without VR limits)"
            ),
            "init_max_abs_f": f_res,
            "init_max_abs_g": g_res,
        },
    )


def _newton(g, x, z, p, max_iter: int = 20, tol: float = 1e-14) -> np.ndarray:
    """Newton on 0 = g(x, z, p) for z (dense g_z: 2 n_bus + 2 n_gen unknowns, fine at 9 buses)."""
    return newton_z(g, x, z, p, max_iter, tol)
