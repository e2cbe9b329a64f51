"""Build a dq-frame block network from a solved power flow, initialize every block from it and
assemble the platform DAE at the network's joint equilibrium.

Blocks made from a solved ``models.grid.Grid`` (its generators are the devices, in order):

* one ``node`` per bus. Its capacitance ``b`` is the pi-model charging of its branches (b/2 at
  each end; at a tap end divided by |tap|^2, as MATPOWER places it), its capacitive bus shunt and
  the capacitive part of its load (inductive shunts, including negative branch charging such
  as transformer magnetizing, join the bus's ``load_rl`` block). A bus with less than
  ``node_b_min`` gets ``node_b_min``: with
  dynamic branch currents a node needs a capacitance, or KCL would constrain differential states
  (index 2). This floor is the one modelling addition; it is documented, reported in
  ``info["nodes_at_floor"]`` and settable (``node_b_min``). With ``floor_damping`` (default) such a
  bus is a ``node_rc``: the floor capacitance sits behind a resistor rs = sqrt(x_par / b)
  (x_par: its branches' reactances in parallel), which damps the floor's resonance with those
  reactances (ratio ~0.5) instead of leaving a 5 kHz ring that a lossless transformer would keep
  for seconds (IEEE 39: 32,000 rad/s decaying at 2.9 /s without it);
* one ``line`` per branch (series R-L behind its tap, current dynamic; R at least X / ``q_max``);
* one ``load`` (conductance) or ``load_rl`` (series R-L to ground, R at least X / ``q_max``) per
  loaded bus, from P + jQ at the power-flow voltage (constant impedance); an inductive bus shunt
  joins the load;
* the devices given (``DeviceSpec``): synchronous machines, grid-forming and grid-following
  inverters, an infinite bus. The infinite bus, or else the machine named ``reference``, sets
  the common frame (its speed is every block's ``w``).

Every device is initialized from its power-flow terminal voltage and current (``init_*`` in
``models.dq.components``); its set-points become exogenous inputs ``<device>.<port>``. Then one
joint solve of f = 0, g = 0 over all states, algebraic variables and interconnection unknowns
(``models.dq.equilibrium``) gives the network's true equilibrium.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

import models.jaxconfig  # noqa: F401
from models.dae import DAESystem
from models.dq import components as comp
from models.dq.blocks import Assembled, Block, Kind, Wiring, build_layout
from models.dq.equilibrium import solve_equilibrium
from models.grid import Grid, load_power

NODE_B_MIN = 0.01
"""Default smallest node capacitance (pu susceptance on the system base at nominal frequency)."""
Q_MAX = 200.0
"""Largest X/R of a branch or inductive load: MATPOWER's lossless transformers and shunt reactors
get R = X / Q_MAX, as real ones have. Without it a loop of lossless inductors keeps an undamped
dc-offset mode at +-j omega_b (seen on IEEE 118: real part 3e-13)."""


@dataclass(frozen=True)
class DeviceSpec:
    """A device at a bus: ``kind`` is ``sm``, ``gfm``, ``gfl`` or ``infinite_bus``; ``params``
    are the kind's parameters (rating ratio ``S`` included; the infinite bus's angle is set by
    its initialization)."""

    name: str
    kind: str
    params: Mapping[str, float]
    reference: bool = False


_INIT = {
    "sm": comp.init_sm,
    "gfm": comp.init_gfm,
    "gfl": comp.init_gfl,
    "infinite_bus": comp.init_infinite_bus,
}
_EXO_PORTS = {
    "sm": ("V_ref", "P_ref"),
    "gfm": ("P_set", "V_set"),
    "gfl": ("P_ref", "Q_ref"),
    "infinite_bus": ("E",),
}


@dataclass
class _Builder:
    blocks: list[Block] = field(default_factory=list)
    wiring: Wiring = field(default_factory=Wiring)
    x0: dict[str, float] = field(default_factory=dict)
    z0: dict[str, float] = field(default_factory=dict)

    def add(
        self, name: str, kind: Kind, params: Mapping[str, float], elements=None, x=None, z=None
    ):
        self.blocks.append(Block(name, kind, dict(params), dict(elements or {})))
        for key, value in (x or {}).items():
            if key in kind.states:
                self.x0[f"{name}.{key}"] = float(value)
        for key, value in (z or {}).items():
            self.z0[f"{name}.{key}"] = float(value)


def _node_shunts(data: Grid, node_b_min: float):
    n = data.n_bus
    b = np.zeros(n)
    g = np.array(data.shunt.real, dtype=float)
    shunt_b = np.array(data.shunt.imag, dtype=float)
    tap2 = np.abs(data.branch_tap) ** 2
    on = data.status > 0
    inductive = np.zeros(n)  # negative branch "charging" (transformer magnetizing) is inductive
    for target, scale in ((data.branch_from, 1 / tap2), (data.branch_to, 1.0)):
        part = data.branch_b / 2 * scale
        np.add.at(b, target[on], np.maximum(part[on], 0.0))
        np.add.at(inductive, target[on], np.minimum(part[on], 0.0))
    if data.branch_g is not None:
        np.add.at(g, data.branch_from[on], data.branch_g[on] / 2 / tap2[on])
        np.add.at(g, data.branch_to[on], data.branch_g[on] / 2)
    vm2 = np.abs(data.voltage) ** 2
    load = load_power(data, np.sqrt(vm2))  # as constant impedance at the solved voltage
    load_g = load.real / vm2
    load_b = -load.imag / vm2 + np.minimum(shunt_b, 0.0) + inductive
    b += np.maximum(shunt_b, 0.0) + np.maximum(load_b, 0.0)
    load_b = np.minimum(load_b, 0.0)
    at_floor = b < node_b_min
    return np.maximum(b, node_b_min), g, load_g, load_b, at_floor


def _parallel_reactance(data: Grid) -> np.ndarray:
    """Per bus, the parallel combination of its in-service branches' series reactances (pu)."""
    inv = np.zeros(data.n_bus)
    on = data.status > 0
    for ends in (data.branch_from, data.branch_to):
        np.add.at(inv, ends[on], 1.0 / np.abs(data.branch_x[on]))
    with np.errstate(divide="ignore"):
        return np.where(inv > 0, 1.0 / inv, 1.0)


def build_dq_network(
    name: str,
    data: Grid,
    devices: Sequence[DeviceSpec],
    *,
    ports: str = "explicit",
    node_b_min: float = NODE_B_MIN,
    q_max: float = Q_MAX,
    floor_damping: bool = True,
    description: str = "",
    info: Mapping | None = None,
) -> DAESystem:
    """The DAE of the solved grid ``data`` with ``devices`` (one per generator of the grid, in
    order), at its joint equilibrium."""
    start = time.perf_counter()
    if not data.solved:
        raise ValueError(f"{data.name}: the grid must be solved (models.powerflow)")
    if len(devices) != len(data.gen_bus):
        raise ValueError(f"{len(devices)} devices but the power flow has {len(data.gen_bus)}")
    if not node_b_min > 0:
        raise ValueError(
            f"node_b_min must be > 0 (index-1 nodes need a capacitance), got {node_b_min}"
        )
    refs = [d for d in devices if d.kind == "infinite_bus" or d.reference]
    if len(refs) != 1 or refs[0].kind not in ("sm", "infinite_bus"):
        raise ValueError(
            "exactly one frequency reference is needed: an infinite bus, or one synchronous "
            f"machine with reference=True; got {[d.name for d in refs]}"
        )
    reference = refs[0].name
    bld = _Builder()
    b_node, g_node, load_g, load_b, at_floor = _node_shunts(data, node_b_min)
    nodes = list(data.bus_names)

    x_par = _parallel_reactance(data)
    for k, bus in enumerate(data.bus_names):
        v = data.voltage[k]
        params = {"b": b_node[k], "g_sh": g_node[k], "fault_g": 0.0, "fault_b": 0.0}
        if at_floor[k] and floor_damping:
            params["rs"] = float(np.sqrt(x_par[k] / b_node[k]))
            v_c = v / (1.0 + 1j * b_node[k] * params["rs"])
            bld.add(
                nodes[k], comp.NODE_RC, params, {"bus": bus}, {"vc_D": v_c.real, "vc_Q": v_c.imag}
            )
        else:
            bld.add(nodes[k], comp.NODE, params, {"bus": bus}, {"v_D": v.real, "v_Q": v.imag})
        bld.wiring.connect(nodes[k], "w", reference, "omega")

    branch_r = np.maximum(data.branch_r, data.branch_x / q_max)
    for k, br in enumerate(data.branch_names):
        f, t = int(data.branch_from[k]), int(data.branch_to[k])
        ratio = data.branch_tap[k] * np.exp(1j * data.branch_shift[k])
        status = float(data.status[k])
        v_f, v_t = data.voltage[f], data.voltage[t]
        i = status * (v_f / ratio - v_t) / complex(branch_r[k], data.branch_x[k])
        params = {
            "r": branch_r[k], "x": data.branch_x[k], "tap": data.branch_tap[k],
            "shift": data.branch_shift[k], "status": status,
        }  # fmt: skip
        bld.add(br, comp.LINE, params, {"branch": br}, {"i_D": i.real, "i_Q": i.imag})
        bld.wiring.connect_pair(br, "v1", nodes[f], "v")
        bld.wiring.connect_pair(br, "v2", nodes[t], "v")
        bld.wiring.connect(br, "w", reference, "omega")
        bld.wiring.connect_pair(nodes[f], "i", br, "i1")
        bld.wiring.connect_pair(nodes[t], "i", br, "i2")

    for k, bus in enumerate(data.bus_names):
        if load_g[k] == 0.0 and load_b[k] == 0.0:
            continue
        lname = f"load_{bus}"
        params = {"g": load_g[k], "b": load_b[k]}
        if load_b[k] < 0.0:
            y2 = load_g[k] ** 2 + load_b[k] ** 2
            x_l = -load_b[k] / y2
            il = data.voltage[k] / complex(max(load_g[k] / y2, x_l / q_max), x_l)
            params["q_max"] = q_max
            bld.add(lname, comp.LOAD_RL, params, {"load": bus}, {"iL_D": il.real, "iL_Q": il.imag})
            bld.wiring.connect(lname, "w", reference, "omega")
        else:
            bld.add(lname, comp.LOAD, params, {"load": bus})
        bld.wiring.connect_pair(lname, "v", nodes[k], "v")
        bld.wiring.connect_pair(nodes[k], "i", lname, "i")

    for k, dev in enumerate(devices):
        at = int(data.gen_bus[k])
        v = data.voltage[at]
        i_sys = np.conj(data.gen_s[k] / v)
        params = dict(dev.params)
        if dev.kind not in _INIT:
            raise ValueError(
                f"device {dev.name!r}: unknown kind {dev.kind!r}; valid: {list(_INIT)}"
            )
        x, z, exo = _INIT[dev.kind](params, complex(v), complex(i_sys))
        if dev.kind == "sm":
            kind = comp.SM_REF if dev.reference else comp.SM
            params["delta_ref"] = x["delta"]
        else:
            kind = {"gfm": comp.GFM, "gfl": comp.GFL, "infinite_bus": comp.INFINITE_BUS}[dev.kind]
        params = {p: params[p] for p in kind.params}
        elements = {"source": dev.name} if dev.kind == "infinite_bus" else {}
        bld.add(dev.name, kind, params, elements, x, z)
        bld.wiring.connect_pair(dev.name, "v", nodes[at], "v")
        bld.wiring.connect_pair(nodes[at], "i", dev.name, "i")
        if "w" in kind.inputs:
            bld.wiring.connect(dev.name, "w", reference, "omega")
        for port in _EXO_PORTS[dev.kind]:
            bld.wiring.exogenous(dev.name, port, f"{dev.name}.{port}", exo[port])

    layout = build_layout(bld.blocks, bld.wiring, ports)
    net = Assembled(layout)
    params = net.params()
    x_guess = np.array([bld.x0.get(s, 0.0) for s in layout.state_names])
    zc_guess = np.array([bld.z0.get(s, 0.0) for s in layout.comp_alg_names])
    p_dev = {k: jnp.asarray(v) for k, v in params.items()}
    _, residual = jax.jit(net.ports)(
        x_guess, np.concatenate([zc_guess, np.zeros(net.n_unknown)]), p_dev
    )
    z_guess = np.concatenate([zc_guess, -np.asarray(residual)])  # the wired values
    eq = solve_equilibrium(net.f, net.g, x_guess, z_guess, params)

    return _system(
        name, net, eq, params, data, nodes, devices, reference, at_floor,
        node_b_min, q_max, description, {**(info or {}), "floor_damping": floor_damping},
        time.perf_counter() - start,
    )  # fmt: skip


def _system(
    name, net, eq, params, data, nodes, devices, reference, at_floor, node_b_min, q_max,
    description, info, seconds,
) -> DAESystem:  # fmt: skip
    lay = net.layout
    out_index = {n: i for i, n in enumerate(lay.output_names)}
    bus_v = np.array([[out_index[f"{n}.v_D"], out_index[f"{n}.v_Q"]] for n in nodes])
    dev_names = tuple(d.name for d in devices)
    dev_i = np.array([[out_index[f"{d}.i_D"], out_index[f"{d}.i_Q"]] for d in dev_names])
    node_of = {d.name: nodes[int(data.gen_bus[k])] for k, d in enumerate(devices)}
    dev_v = np.array(
        [[out_index[f"{node_of[d]}.v_D"], out_index[f"{node_of[d]}.v_Q"]] for d in dev_names]
    )
    dev_w = np.array([out_index[f"{d}.omega"] for d in dev_names])
    bus_labels = tuple(data.bus_names)
    output_names = (
        tuple(f"V[{b}]" for b in bus_labels)
        + tuple(f"theta[{b}]" for b in bus_labels)
        + tuple(f"omega[{d}]" for d in dev_names)
        + tuple(f"Pe[{d}]" for d in dev_names)
        + ("kcl_max",)
    )

    def outputs(x, z, p):
        y = net.block_outputs(x, z, p)
        v = y[bus_v[:, 0]] + 1j * y[bus_v[:, 1]]
        vd = y[dev_v[:, 0]] + 1j * y[dev_v[:, 1]]
        idev = y[dev_i[:, 0]] + 1j * y[dev_i[:, 1]]
        residual = jnp.max(jnp.abs(net.g(x, z, p)))
        return jnp.concatenate(
            [jnp.abs(v), jnp.angle(v), y[dev_w], jnp.real(vd * jnp.conj(idev)), residual[None]]
        )

    y_eq = np.asarray(
        jax.jit(net.block_outputs)(eq.x, eq.z, {k: jnp.asarray(a) for k, a in params.items()})
    )
    v_eq = y_eq[bus_v[:, 0]] + 1j * y_eq[bus_v[:, 1]]
    scale = np.zeros(lay.n_x)
    controller = []
    for group in lay.groups:
        for j, state in enumerate(group.kind.states):
            if state in group.kind.perturbation:
                scale[group.x_index[:, j]] = group.kind.perturbation[state]
            if state in group.kind.controller_states:
                controller += [f"{b.name}.{state}" for b in group.blocks]
    kinds: dict[str, int] = {}
    for group in lay.groups:
        kinds[group.kind.name] = len(group.blocks)
    names = {k: v for k, v in lay.element_names.items()}
    names["bus"] = bus_labels
    names["generator"] = dev_names
    names["input"] = lay.exo_names
    info.update(
        n_bus=len(bus_labels),
        f_hz=data.f_hz,
        s_base_mva=data.sbase,
        blocks=kinds,
        reference=reference,
        ports=lay.ports,
        interconnection_slots=lay.n_slots,
        interconnection_unknowns=int(lay.unknown_slots.size),
        node_b_min=node_b_min,
        nodes_at_floor=int(np.count_nonzero(at_floor)),
        q_max=q_max,
        branches_given_resistance=int(np.count_nonzero(data.branch_r < data.branch_x / q_max)),
        equilibrium=eq.report,
        init_max_abs_f=eq.max_f,
        init_max_abs_g=eq.max_g,
        pf_max_voltage_deviation=float(np.max(np.abs(v_eq - data.voltage))),
        build_seconds=seconds,
        power_flow=data.info.get("sources", ""),
        exogenous_inputs=dict(zip(lay.exo_names, lay.exo_values.tolist(), strict=True)),
    )  # fmt: skip
    return DAESystem(
        name=name,
        state_names=lay.state_names,
        alg_names=lay.comp_alg_names + tuple(f"u:{lay.slot_names[s]}" for s in lay.unknown_slots),
        f=net.f,
        g=net.g,
        x0=eq.x,
        z0=eq.z,
        params=params,
        output_names=output_names,
        outputs=outputs,
        perturbation_scale=scale,
        names=names,
        controller_states=tuple(controller),
        description=description,
        info=info,
    )
