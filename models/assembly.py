"""One generic assembler: a network plus device instances become a ``DAESystem``.

Each generator slot holds a machine model and optionally an exciter and a governor
(``models.devices``; PowerSimulationsDynamics.jl organizes a dynamic generator the same way).
Instances of one model are evaluated together (vectorized over their parameter arrays), so the
traced equations grow with the number of *models*, not of devices. Layout (the one the MATPOWER
builders use, so disturbances, names and outputs work unchanged):

* x: per machine model, its instances' states (instance-major); then exciters; then governors;
* z: bus voltages Vr, Vi (pu, system base), then machine currents Id, Iq (pu on MBASE);
* parameters: ``<MODEL>_<name>`` arrays per model; per generator ``gen_status``, ``gen_scale``
  (MBASE / SBASE), ``vref``, ``pref``, ``efd0``, ``tm0``; per bus ``shunt_g``, ``shunt_b``,
  ``fault_g``, ``fault_b``; per load bus the ZIP parts ``load_*``; branch arrays of
  ``models.network``.

Initialization: each machine from its terminal voltage and power (``DeviceModel.init``), then its
exciter from the machine's field voltage and its governor from the machine's torque; the
algebraic variables are polished by Newton and the point checked to 1e-8
(``models.cases.equilibrium.checked_equilibrium``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import jax.numpy as jnp
import numpy as np

import models.jaxconfig  # noqa: F401
from models.cases.equilibrium import (
    checked_equilibrium,
    network_alg_names,
    network_output_names,
)
from models.components.loads import zip_current
from models.components.synchronous_two_axis import to_machine_frame, to_network_frame
from models.dae import DAESystem
from models.devices.base import DeviceModel
from models.network import Topology, branch_parameters, current_mismatch

PERTURBATION = {"delta": 0.05, "omega": 1e-3}
"""Typical initial-state perturbation per state name (rad, pu)."""


@dataclass(frozen=True)
class Device:
    """One instance: its model, parameter values (``model.params`` plus any the network
    supplies, e.g. ``ra``) and where it was defined (for error messages)."""

    model: DeviceModel
    params: Mapping[str, float]
    where: str


@dataclass(frozen=True)
class GeneratorSlot:
    machine: Device
    exciter: Device | None = None
    governor: Device | None = None


@dataclass(frozen=True)
class Grid:
    """The static network and its solved operating point (pu on ``sbase``; 0-based buses).

    Loads are ZIP parts per load bus: constant admittance ``load_y`` (P - jQ at 1 pu, consumed),
    constant current ``load_i`` and constant power ``load_s`` (P + jQ, consumed)."""

    name: str
    sbase: float
    f_hz: float
    bus_names: tuple[str, ...]
    branch_names: tuple[str, ...]
    branch_from: np.ndarray
    branch_to: np.ndarray
    branch_r: np.ndarray
    branch_x: np.ndarray
    branch_b: np.ndarray
    branch_tap: np.ndarray
    branch_shift: np.ndarray
    shunt: np.ndarray
    load_bus: np.ndarray
    load_s: np.ndarray
    load_i: np.ndarray
    load_y: np.ndarray
    gen_bus: np.ndarray
    gen_names: tuple[str, ...]
    gen_mbase: np.ndarray
    voltage: np.ndarray
    gen_s: np.ndarray
    """Generated power of each machine (pu on ``sbase``)."""
    info: Mapping = field(default_factory=dict)


@dataclass
class _Group:
    model: DeviceModel
    gens: np.ndarray
    params: dict[str, np.ndarray]
    offset: int = 0

    @property
    def size(self) -> int:
        return int(self.gens.size) * len(self.model.states)


def _groups(slots: Sequence[GeneratorSlot], role: str) -> list[_Group]:
    by_model: dict[str, list[tuple[int, Device]]] = {}
    for k, slot in enumerate(slots):
        device = getattr(slot, role)
        if device is not None:
            by_model.setdefault(device.model.name, []).append((k, device))
    groups = []
    for name in sorted(by_model):
        members = by_model[name]
        model = members[0][1].model
        keys = sorted({key for _, d in members for key in d.params})
        params = {key: np.array([float(d.params[key]) for _, d in members]) for key in keys}
        groups.append(_Group(model, np.array([k for k, _ in members], dtype=np.int64), params))
    return groups


def _check_params(group: _Group, slots, role: str) -> None:
    problems = group.model.check(group.params)
    if problems:
        lines = []
        for name, i, reason in problems:
            device = getattr(slots[int(group.gens[i])], role)
            lines.append(
                f"{device.where}: {group.model.name} {name} = "
                f"{group.params.get(name, np.full(1, np.nan))[i]:g} {reason}"
            )
        raise ValueError("; ".join(lines))


def check_parameters(
    slots: Sequence[GeneratorSlot], role: str, groups: list[_Group] | None = None
) -> None:
    """Raise ``ValueError`` naming each device (``Device.where``) whose parameter values its
    model cannot use, or a device placed in the wrong role."""
    for grp in _groups(slots, role) if groups is None else groups:
        if grp.model.role != role:
            raise ValueError(f"{grp.model.name} is a {grp.model.role}, not a {role}")
        _check_params(grp, slots, role)


def _view(p: Mapping, model: str, keys) -> dict:
    return {k: p[f"{model}_{k}"] for k in keys}


def assemble(grid: Grid, slots: Sequence[GeneratorSlot], description: str = "") -> DAESystem:
    """The DAE of ``grid`` with one slot per generator (``grid.gen_names`` order)."""
    start = time.perf_counter()
    ng, nb = len(slots), len(grid.bus_names)
    if ng != grid.gen_bus.size:
        raise ValueError(f"{ng} generator slots for {grid.gen_bus.size} generators")
    roles = ("machine", "exciter", "governor")
    groups = {role: _groups(slots, role) for role in roles}
    for role in roles:
        check_parameters(slots, role, groups[role])
    omega_s = 2.0 * np.pi * grid.f_hz
    scale = grid.gen_mbase / grid.sbase
    v_gen = grid.voltage[grid.gen_bus]
    s_mach = grid.gen_s / scale

    params: dict[str, np.ndarray] = {}
    x_parts: list[np.ndarray] = []
    state_names: list[str] = []
    controller: list[str] = []
    id0, iq0 = np.zeros(ng), np.zeros(ng)
    efd0, tm0 = np.zeros(ng), np.zeros(ng)
    offset = 0
    for grp in groups["machine"]:
        init = grp.model.init(v_gen[grp.gens], s_mach[grp.gens], grp.params)
        _place(grp, init, params, x_parts, state_names, grid.gen_names, offset)
        offset += grp.size
        id0[grp.gens], iq0[grp.gens] = init["Id"], init["Iq"]
        efd0[grp.gens], tm0[grp.gens] = init["efd"], init["tm"]
    vref, pref = np.zeros(ng), np.zeros(ng)
    for role in ("exciter", "governor"):
        for grp in groups[role]:
            if role == "exciter":
                init = grp.model.init(efd0[grp.gens], np.abs(v_gen[grp.gens]), grp.params)
                vref[grp.gens] = init["vref"]
            else:
                init = grp.model.init(tm0[grp.gens], grp.params)
                pref[grp.gens] = init["pref"]
            names = _place(grp, init, params, x_parts, state_names, grid.gen_names, offset)
            controller += names
            offset += grp.size
    params.update(
        gen_status=np.ones(ng), gen_scale=scale, vref=vref, pref=pref, efd0=efd0, tm0=tm0,
        shunt_g=grid.shunt.real.copy(), shunt_b=grid.shunt.imag.copy(),
        fault_g=np.zeros(nb), fault_b=np.zeros(nb),
    )  # fmt: skip
    params.update(
        branch_parameters(grid.branch_r, grid.branch_x, grid.branch_b, grid.branch_tap,
                          grid.branch_shift, np.ones(grid.branch_r.size))
    )  # fmt: skip
    load_buses = np.unique(grid.load_bus)
    pos = np.searchsorted(load_buses, grid.load_bus)

    def per_bus(values: np.ndarray) -> np.ndarray:
        return np.bincount(pos, values, load_buses.size)

    params.update(
        load_g=per_bus(grid.load_y.real), load_b=per_bus(-grid.load_y.imag),
        load_ip=per_bus(grid.load_i.real), load_iq=per_bus(grid.load_i.imag),
        load_pp=per_bus(grid.load_s.real), load_pq=per_bus(grid.load_s.imag),
    )  # fmt: skip
    params = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    topo = Topology(nb, grid.branch_from, grid.branch_to)
    gen_bus = grid.gen_bus
    n_x = offset

    def states_of(x, grp: _Group):
        block = x[grp.offset : grp.offset + grp.size].reshape(grp.gens.size, -1)
        return tuple(block[:, k] for k in range(len(grp.model.states)))

    def machine_signals(x, p):
        omega = jnp.ones(ng)
        delta = jnp.zeros(ng)
        for grp in groups["machine"]:
            xs = states_of(x, grp)
            delta = delta.at[grp.gens].set(xs[grp.model.states.index("delta")])
            omega = omega.at[grp.gens].set(xs[grp.model.states.index("omega")])
        return delta, omega

    def f(x, z, p):
        vr, vi = z[:nb], z[nb : 2 * nb]
        id_, iq = z[2 * nb : 2 * nb + ng], z[2 * nb + ng :]
        vt = jnp.sqrt(vr[gen_bus] ** 2 + vi[gen_bus] ** 2)
        _, omega = machine_signals(x, p)
        efd, tm = p["efd0"], p["tm0"]
        for grp in groups["exciter"]:
            view = _view(p, grp.model.name, grp.params)
            efd = efd.at[grp.gens].set(grp.model.output(states_of(x, grp), vt[grp.gens], view))
        for grp in groups["governor"]:
            view = _view(p, grp.model.name, grp.params)
            tm = tm.at[grp.gens].set(grp.model.output(states_of(x, grp), omega[grp.gens], view))
        out = []
        for grp in groups["machine"]:
            k = grp.gens
            view = _view(p, grp.model.name, grp.params)
            d = grp.model.derivatives(
                states_of(x, grp), id_[k], iq[k], efd[k], tm[k], view, omega_s
            )
            out.append(jnp.stack(d, axis=1).ravel())
        for grp in groups["exciter"]:
            k = grp.gens
            view = _view(p, grp.model.name, grp.params)
            d = grp.model.derivatives(states_of(x, grp), vt[k], p["vref"][k], 0.0 * vt[k], view)
            out.append(jnp.stack(d, axis=1).ravel())
        for grp in groups["governor"]:
            k = grp.gens
            view = _view(p, grp.model.name, grp.params)
            d = grp.model.derivatives(states_of(x, grp), omega[k], p["pref"][k], view)
            out.append(jnp.stack(d, axis=1).ravel())
        return jnp.concatenate(out)

    def injections(x, z, p):
        """Machine currents into the network (complex pu, system base) and delta."""
        id_, iq = z[2 * nb : 2 * nb + ng], z[2 * nb + ng :]
        delta, _ = machine_signals(x, p)
        gr, gi = to_network_frame(id_, iq, delta)
        return p["gen_status"] * p["gen_scale"] * (gr + 1j * gi), delta

    def kcl(x, z, p):
        v = z[:nb] + 1j * z[nb : 2 * nb]
        i_gen, _ = injections(x, z, p)
        i_load = zip_current(v[load_buses], p["load_g"], p["load_b"], p["load_ip"],
                             p["load_iq"], p["load_pp"], p["load_pq"])  # fmt: skip
        injection = (
            jnp.zeros(nb, dtype=jnp.complex128).at[gen_bus].add(i_gen).at[load_buses].add(-i_load)
        )
        y_shunt = p["shunt_g"] + p["fault_g"] + 1j * (p["shunt_b"] + p["fault_b"])
        return current_mismatch(topo, v, injection, y_shunt, p)

    def g(x, z, p):
        vr, vi = z[:nb], z[nb : 2 * nb]
        id_, iq = z[2 * nb : 2 * nb + ng], z[2 * nb + ng :]
        delta, _ = machine_signals(x, p)
        vd, vq = to_machine_frame(vr[gen_bus], vi[gen_bus], delta)
        res_d, res_q = jnp.zeros(ng), jnp.zeros(ng)
        for grp in groups["machine"]:
            k = grp.gens
            view = _view(p, grp.model.name, grp.params)
            rd, rq = grp.model.stator(states_of(x, grp), vd[k], vq[k], id_[k], iq[k], view)
            res_d, res_q = res_d.at[k].set(rd), res_q.at[k].set(rq)
        on = p["gen_status"]
        mismatch = kcl(x, z, p)
        return jnp.concatenate(
            [mismatch.real, mismatch.imag, on * res_d + (1 - on) * id_, on * res_q + (1 - on) * iq]
        )

    def outputs(x, z, p):
        vr, vi = z[:nb], z[nb : 2 * nb]
        i_gen, delta = injections(x, z, p)
        _, omega = machine_signals(x, p)
        pe = vr[gen_bus] * i_gen.real + vi[gen_bus] * i_gen.imag
        weight = p["gen_status"] * p["gen_inertia"]
        coi = jnp.sum(weight * omega) / jnp.sum(weight)
        kcl_max = jnp.max(jnp.abs(kcl(x, z, p)))
        return jnp.concatenate(
            [jnp.sqrt(vr**2 + vi**2), jnp.arctan2(vi, vr), omega, delta, pe, coi[None],
             kcl_max[None]]
        )  # fmt: skip

    inertia = np.zeros(ng)
    for grp in groups["machine"]:
        inertia[grp.gens] = grp.params["H"] * scale[grp.gens]
    params["gen_inertia"] = inertia
    x0 = np.concatenate(x_parts) if x_parts else np.zeros(0)
    assert x0.size == n_x
    z_pf = np.concatenate([grid.voltage.real, grid.voltage.imag, id0, iq0])
    z0, f_res, g_res = checked_equilibrium(f, g, x0, z_pf, params)
    perturbation = np.array([PERTURBATION.get(n.split("[")[0], 0.0) for n in state_names])
    return DAESystem(
        name=grid.name,
        state_names=tuple(state_names),
        alg_names=network_alg_names(grid.bus_names, grid.gen_names),
        f=f,
        g=g,
        x0=x0,
        z0=z0,
        params=params,
        output_names=network_output_names(grid.bus_names, grid.gen_names)
        + ("omega_coi", "kcl_max"),
        outputs=outputs,
        perturbation_scale=perturbation,
        names={
            "bus": grid.bus_names,
            "branch": grid.branch_names,
            "generator": grid.gen_names,
            "load": tuple(grid.bus_names[i] for i in load_buses),
        },
        controller_states=tuple(controller),
        description=description,
        info={
            **grid.info,
            "n_bus": nb,
            "n_branch": topo.n_branch,
            "branch_from": tuple(int(i) for i in topo.from_bus),
            "branch_to": tuple(int(i) for i in topo.to_bus),
            "n_gen": ng,
            "n_load": int(load_buses.size),
            "f_hz": float(grid.f_hz),
            "s_base_mva": float(grid.sbase),
            "generator_mva": {
                n: float(m) for n, m in zip(grid.gen_names, grid.gen_mbase, strict=True)
            },
            "generator_models": {
                grid.gen_names[k]: "+".join(
                    d.model.name for d in (s.machine, s.exciter, s.governor) if d is not None
                )
                for k, s in enumerate(slots)
            },
            "init_max_abs_f": f_res,
            "init_max_abs_g": g_res,
            "build_seconds": time.perf_counter() - start,
        },
    )


def _place(
    grp: _Group,
    init: Mapping,
    params: dict,
    x_parts: list,
    state_names: list,
    gen_names: Sequence[str],
    offset: int,
) -> list[str]:
    """Store a group's initial states (instance-major) and parameters; returns its state names."""
    grp.offset = offset
    model = grp.model
    block = np.stack([np.asarray(init[s], dtype=float) for s in model.states], axis=1)
    x_parts.append(block.ravel())
    extra = {
        k: v
        for k, v in init.items()
        if k not in model.states and k not in ("Id", "Iq", "efd", "tm", "vref", "pref")
    }
    for key, value in {**grp.params, **extra}.items():
        params[f"{model.name}_{key}"] = np.asarray(value, dtype=float)
    for key in extra:
        grp.params.setdefault(key, np.asarray(extra[key], dtype=float))
    names = [f"{s}[{gen_names[k]}]" for k in grp.gens for s in model.states]
    state_names.extend(names)
    return names
