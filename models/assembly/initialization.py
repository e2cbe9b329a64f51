"""Initial states and parameters of an assembled network from its solved grid.

Each machine from its terminal voltage and power (``DeviceModel.init``), then its exciter from
the machine's field voltage (and the machine signals it reads, ``DeviceModel.inputs``), its
governor from the machine's torque and its stabilizer from the machine signals; each converter
from its terminal voltage and power (its currents Ip, Iq and the commands that hold them), its
electrical control from those commands (and the references Pref, Qref that hold them), its plant
control from those references and the network's solution; each bus device
from its bus voltage and requested power, the static load of its bus taking the difference (so
the power flow is reproduced exactly). The orchestrator (``models.assembly.assemble``) then
polishes the algebraic variables by Newton and recomputes the AVR references at the polished
voltages (``avr_references``).

Parameters: ``<prefix><name>`` arrays per model (``DeviceModel.param_prefix``); per generator
``gen_status``, ``gen_scale`` (MBASE / SBASE), ``gen_inertia`` (H MBASE / SBASE), ``efd`` and
``tm`` (held field voltage and torque of a slot without exciter or governor), ``vref`` and
``pref`` where some generator has an exciter or a governor; where some slot holds a converter,
``conv_ipcmd``, ``conv_iqcmd`` (held commands without an electrical control) and ``conv_pref``,
``conv_qref`` (held references without a plant control); per bus ``shunt_g``, ``shunt_b``,
``fault_g``, ``fault_b`` and ``bus_isolated`` (1 grounds a de-energized bus through 1 pu, see
``models.disturbances.BranchTrip``); per load bus the ZIP parts ``load_*``; the branch arrays of
``models.network``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from models.assembly.devices import BusDevice
from models.assembly.equations import plant_inputs
from models.assembly.layout import DeviceGroup, Layout
from models.components.loads import zip_parameters
from models.devices.base import InitialValueError, to_machine_frame
from models.grid import Grid
from models.network import Topology


@dataclass(frozen=True)
class Initial:
    """The initial point before the algebraic polish: states, parameters, the machines'
    currents (pu on MBASE) and field voltages, and the buses that carry a static load."""

    x0: np.ndarray
    params: dict[str, np.ndarray]
    id0: np.ndarray
    iq0: np.ndarray
    efd0: np.ndarray
    load_buses: np.ndarray

    def z_start(self, grid: Grid) -> np.ndarray:
        """z at the power flow: bus voltages, then the machines' currents."""
        return np.concatenate([grid.voltage.real, grid.voltage.imag, self.id0, self.iq0])


def initialize(grid: Grid, lay: Layout, bus_devices: Sequence[BusDevice]) -> Initial:
    """Initial states and parameters (see the module docstring)."""
    groups, ng, nb = lay.groups, lay.n_gen, grid.n_bus
    omega_s = 2.0 * np.pi * grid.f_hz
    scale = grid.gen_mbase / grid.sbase
    v_gen = grid.voltage[grid.gen_bus]
    s_mach = grid.gen_s / scale
    params: dict[str, np.ndarray] = {}
    x0 = np.zeros(len(lay.state_names))
    id0, iq0, efd0, tm0 = np.zeros(ng), np.zeros(ng), np.zeros(ng), np.zeros(ng)
    vref, pref = np.zeros(ng), np.zeros(ng)
    for grp in groups["machine"]:
        init = grp.model.init(v_gen[grp.members], s_mach[grp.members], grp.params)
        _place(grp, init, params, x0, ("Id", "Iq", "efd", "tm"))
        id0[grp.members], iq0[grp.members] = init["Id"], init["Iq"]
        efd0[grp.members], tm0[grp.members] = init["efd"], init["tm"]
    sig0 = _machine_signals(lay, x0, v_gen, id0, iq0, efd0, tm0) if lay.needs_signals() else {}
    for grp in groups["exciter"]:
        k = grp.members
        extra = ({n: sig0[n][k] for n in grp.model.inputs},) if grp.model.inputs else ()
        init = grp.model.init(efd0[k], np.abs(v_gen[k]), grp.params, *extra)
        _place(grp, init, params, x0, ("vref",))
        vref[k] = init["vref"]
    for grp in groups["governor"]:
        init = _named(grp, lambda g=grp: g.model.init(tm0[g.members], g.params))
        _place(grp, init, params, x0, ("pref",))
        pref[grp.members] = init["pref"]
    for grp in groups["stabilizer"]:
        init = grp.model.init({n: v[grp.members] for n, v in sig0.items()}, grp.params)
        _place(grp, init, params, x0, ())
    if lay.has_converters():
        params.update(_initialize_converters(grid, lay, params, x0, id0, iq0, scale))
    injected = np.zeros(len(bus_devices), dtype=complex)
    for grp in groups["bus"]:
        k = grp.members
        requested = np.array([bus_devices[i].s for i in k], dtype=complex)
        init = grp.model.init(grid.voltage[lay.bus_of[k]], requested, grp.params, omega_s)
        _place(grp, init, params, x0, ("power",))
        injected[k] = init["power"]
    params.update(
        gen_status=np.ones(ng), gen_scale=scale, efd=efd0, tm=tm0,
        shunt_g=grid.shunt.real.copy(), shunt_b=grid.shunt.imag.copy(),
        fault_g=np.zeros(nb), fault_b=np.zeros(nb), bus_isolated=np.zeros(nb),
    )  # fmt: skip
    if groups["exciter"]:  # set-points exist only where a controller reads them
        params["vref"] = vref
    if groups["governor"]:
        params["pref"] = pref
    params.update(grid.branch_parameters())
    load_buses, load_params = _static_loads(grid, lay.bus_of, injected)
    params.update(load_params)
    inertia = np.zeros(ng)
    for grp in groups["machine"]:
        inertia[grp.members] = grp.params["H"] * scale[grp.members]
    params["gen_inertia"] = inertia
    params = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    return Initial(x0, params, id0, iq0, efd0, load_buses)


def _initialize_converters(grid: Grid, lay: Layout, params: dict, x0, id0, iq0, scale) -> dict:
    """Converters, then their electrical and plant controls (module docstring); fills ``id0``,
    ``iq0`` with the converters' currents and returns the per-generator ``conv_*`` parameters."""
    ng, groups = lay.n_gen, lay.groups
    v_gen = grid.voltage[grid.gen_bus]
    vt = np.abs(v_gen)
    s_mach = grid.gen_s / scale
    held = {k: np.zeros(ng) for k in ("conv_ipcmd", "conv_iqcmd", "conv_pref", "conv_qref")}
    for grp in groups["converter"]:
        k = grp.members
        extra = ({"fn": grid.f_hz},) if grp.model.inputs else ()  # e.g. PVD1's frequency
        init = _named(
            grp, lambda g=grp, k=k, e=extra: g.model.init(v_gen[k], s_mach[k], g.params, *e)
        )
        _place(grp, init, params, x0, ("Ipout", "Iqout", "ipcmd", "iqcmd"))
        id0[k], iq0[k] = init["Ipout"], init["Iqout"]
        held["conv_ipcmd"][k], held["conv_iqcmd"][k] = init["ipcmd"], init["iqcmd"]
    for grp in groups["electrical"]:
        k = grp.members
        sig = {"vt": vt[k], "pe": vt[k] * id0[k], "qe": vt[k] * iq0[k],
               "ipcmd": held["conv_ipcmd"][k], "iqcmd": held["conv_iqcmd"][k]}  # fmt: skip
        init = grp.model.init(sig, grp.params)
        _place(grp, init, params, x0, ("pref", "qref"))
        held["conv_pref"][k], held["conv_qref"][k] = init["pref"], init["qref"]
    if groups["plant"]:
        topo = Topology(grid.n_bus, grid.branch_from, grid.branch_to)
        network = {**grid.branch_parameters(), "gen_scale": scale}
        for grp in groups["plant"]:
            k = grp.members
            sig = {n: np.asarray(v) for n, v in
                   plant_inputs(lay, grp, grid.voltage, network, topo).items()}  # fmt: skip
            init = grp.model.init(sig, held["conv_pref"][k], held["conv_qref"][k], grp.params)
            _place(grp, init, params, x0, ())
    return held


def _machine_signals(lay: Layout, x0, v_gen, id0, iq0, efd0, tm0) -> dict[str, np.ndarray]:
    """The machine signals at the initial point (speed 1 pu, LadIfd = Efd where a model has no
    field current of its own)."""
    ng = lay.n_gen
    delta0 = np.zeros(ng)
    ifd0 = efd0.copy()
    for grp in lay.groups["machine"]:
        xs = grp.states(x0)
        delta0[grp.members] = xs[grp.model.states.index("delta")]
        if grp.model.field_current is not None:
            ifd0[grp.members] = np.asarray(
                grp.model.field_current(xs, id0[grp.members], iq0[grp.members], grp.params)
            )
    vd0, vq0 = (np.asarray(a) for a in to_machine_frame(v_gen.real, v_gen.imag, delta0))
    return {"omega": np.ones(ng), "vt": np.abs(v_gen), "vd": vd0, "vq": vq0, "Id": id0,
            "Iq": iq0, "ifd": ifd0, "pe": vd0 * id0 + vq0 * iq0, "tm": tm0}  # fmt: skip


def avr_references(
    lay: Layout, initial: Initial, signals: Callable
) -> Callable[[np.ndarray], dict[str, np.ndarray]]:
    """The AVR references at polished terminal voltages z0 (a regulator with KA / TA = 1e4 1/s
    turns the power flow's ~1e-11 pu voltage tolerance into |f| ~ 1e-7); ``signals`` is the
    equations' ``signals(x, z, p, omega, tm)``."""

    def update(z0: np.ndarray) -> dict[str, np.ndarray]:
        if not lay.groups["exciter"]:
            return {}
        params, ng = initial.params, lay.n_gen
        n_bus = (z0.size - 2 * ng) // 2
        vt = np.hypot(z0[:n_bus], z0[n_bus : 2 * n_bus])[lay.gen_bus]
        new = params["vref"].copy()
        sig: Mapping[str, np.ndarray] = {}
        if lay.has_inputs():
            p_dev = {k: jnp.asarray(v) for k, v in params.items()}
            sig = {k: np.asarray(v) for k, v in
                   signals(initial.x0, z0, p_dev, np.ones(ng), params["tm"]).items()}  # fmt: skip
        for grp in lay.groups["exciter"]:
            k = grp.members
            extra = ({n: sig[n][k] for n in grp.model.inputs},) if grp.model.inputs else ()
            new[k] = grp.model.init(initial.efd0[k], vt[k], grp.params, *extra)["vref"]
        return {"vref": new}

    return update


def _static_loads(grid: Grid, bus_of: np.ndarray, injected: np.ndarray):
    """Load buses and ``load_*`` parameters per load bus: the grid's load entries with each bus
    device's injection added to the constant-power part of its bus (a new entry where the bus
    has none), split by ``grid.load_fractions`` where given."""
    entry_bus = np.asarray(grid.load_bus, dtype=np.int64)
    load_s = np.asarray(grid.load_s, dtype=complex).copy()
    load_i = np.asarray(grid.load_i, dtype=complex)
    load_y = np.asarray(grid.load_y, dtype=complex)
    for bus, s in zip(bus_of, injected, strict=True):
        hits = np.flatnonzero(entry_bus == bus)
        if hits.size == 0:
            entry_bus = np.append(entry_bus, bus)
            load_s, load_i, load_y = (np.append(a, 0j) for a in (load_s, load_i, load_y))
            hits = np.array([entry_bus.size - 1])
        load_s[hits[0]] += s
    buses = np.unique(entry_bus)
    pos = np.searchsorted(buses, entry_bus)

    def per_bus(values: np.ndarray) -> np.ndarray:
        return np.bincount(pos, values, buses.size)

    if grid.load_fractions is None:
        parts = {
            "load_g": load_y.real, "load_b": -load_y.imag, "load_ip": load_i.real,
            "load_iq": load_i.imag, "load_pp": load_s.real, "load_pq": load_s.imag,
        }  # fmt: skip
    else:
        vm = np.abs(grid.voltage)
        split = zip_parameters(load_s.real, load_s.imag, vm[entry_bus], *grid.load_fractions)
        parts = {
            "load_g": split["load_g"] + load_y.real, "load_b": split["load_b"] - load_y.imag,
            "load_ip": split["load_ip"] + load_i.real, "load_iq": split["load_iq"] + load_i.imag,
            "load_pp": split["load_pp"], "load_pq": split["load_pq"],
        }  # fmt: skip
    return buses, {k: per_bus(v) for k, v in parts.items()}


def _named(grp: DeviceGroup, start):
    """``start()`` (a group's initialization), an ``InitialValueError`` turned into a
    ``ValueError`` naming each refused instance's record (``Device.where``) and value."""
    try:
        return start()
    except InitialValueError as exc:
        raise ValueError(
            "; ".join(f"{grp.where[i]}: {exc.model} {text}" for i, text in exc.problems)
        ) from None


def _place(grp: DeviceGroup, init: Mapping, params: dict, x0: np.ndarray, interface) -> None:
    """Store a group's initial states at its positions and its parameters (with the values its
    initialization derives, e.g. a saturation coefficient or a set-point)."""
    model = grp.model
    for k, s in enumerate(model.states):
        x0[grp.pos[:, k]] = np.asarray(init[s], dtype=float)
    extra = {k: v for k, v in init.items() if k not in model.states and k not in interface}
    for key in extra:
        grp.params.setdefault(key, np.asarray(extra[key], dtype=float))
    for key in grp.params:
        name = f"{model.param_prefix}{key}"
        if name in params:
            raise ValueError(f"parameter {name!r} of {model.name} is taken by another model")
        params[name] = np.asarray(grp.params[key], dtype=float)
