"""One generic assembler: a network plus device instances become a ``DAESystem``.

Each generator slot holds a machine model and optionally an exciter, a governor and a stabilizer
(whose output VOTHSG adds to the exciter's voltage error); bus devices
(induction motors, grid-following inverters) connect to a bus (``models.devices``;
PowerSimulationsDynamics.jl organizes dynamic devices the same way). Instances of one model are
evaluated together (vectorized over their parameter arrays), so the traced equations grow with
the number of *models*, not of devices. Every case goes through here: the MATPOWER cases
(``models.cases.matpower``), wscc9 (``models.cases.wscc9``) and PSS/E cases (``models.psse``).

Layout (disturbances, names and outputs rely on it):

* x: per generator slot in order, its machine's states, then its exciter's, its governor's and
  its stabilizer's;
  then per bus device in order, its states (``<state>[<generator or device name>]``);
* z: bus voltages Vr, Vi (pu, system base), then machine currents Id, Iq (pu on MBASE);
* outputs: bus V and theta, machine omega, delta and Pe, the bus devices' measures (per model in
  name order, e.g. ``P[inv9]``, ``Q[inv9]``, ``slip[mot4]``), ``omega_coi``, ``kcl_max``;
* parameters: ``<prefix><name>`` arrays per model (``DeviceModel.param_prefix``); per generator
  ``gen_status``, ``gen_scale`` (MBASE / SBASE), ``gen_inertia`` (H MBASE / SBASE), ``efd`` and
  ``tm`` (held field voltage and torque of a slot without exciter or governor), ``vref`` and
  ``pref`` where some generator has an exciter or a governor; per bus ``shunt_g``, ``shunt_b``,
  ``fault_g``, ``fault_b`` and ``bus_isolated`` (1 grounds a de-energized bus through 1 pu, see
  ``models.disturbances.BranchTrip``); per load bus the ZIP parts ``load_*``; branch arrays of
  ``models.network``.

Initialization: each machine from its terminal voltage and power (``DeviceModel.init``), then its
exciter from the machine's field voltage (and the machine signals it reads, ``DeviceModel.inputs``),
its governor from the machine's torque and its stabilizer from the machine signals; each bus
device from its bus voltage and requested power, the static load of its bus taking the difference
(so the power flow is reproduced exactly); the algebraic variables are polished by Newton, the
AVR references recomputed at the polished voltages, and the point checked to 1e-8
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
from models.components.loads import zip_current, zip_parameters
from models.dae import DAESystem
from models.devices.base import DeviceModel, to_machine_frame, to_network_frame
from models.network import BRANCH_G, Topology, branch_parameters, current_mismatch

PERTURBATION = {"delta": 0.05, "omega": 1e-3, "s": 1e-3}
"""Typical initial-state perturbation per state name (rad, pu, pu slip); all other states 0."""
GENERATOR_ROLES = ("machine", "exciter", "governor", "stabilizer")


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
    stabilizer: Device | None = None


@dataclass(frozen=True)
class BusDevice:
    """A device of role ``bus`` at ``bus`` (0-based), named ``name``, asked to inject ``s``
    (complex pu, system base; a motor's consumption is a negative injection) at the power flow."""

    name: str
    bus: int
    device: Device
    s: complex


@dataclass(frozen=True)
class Grid:
    """The static network and its solved operating point (pu on ``sbase``; 0-based buses).

    Loads are ZIP parts per load entry: constant admittance ``load_y`` (P - jQ at 1 pu, consumed),
    constant current ``load_i`` and constant power ``load_s`` (P + jQ, consumed). With
    ``load_fractions`` (cz, ci, cp) the constant-power part left after the bus devices took
    theirs is split into Z, I and P parts at the solved magnitudes ``vm``
    (``models.components.loads.zip_parameters``).
    """

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
    branch_status: np.ndarray | None = None
    """1 in service, 0 out (default: all in service)."""
    branch_g: np.ndarray | None = None
    """Series conductance where the case gives one apart from r (``models.network.BRANCH_G``)."""
    vm: np.ndarray | None = None
    """Solved voltage magnitudes (default: |voltage|)."""
    load_fractions: tuple[float, float, float] | None = None
    info: Mapping = field(default_factory=dict)


@dataclass
class _Group:
    """Instances of one model: ``members`` index the slots (generator roles) or bus devices,
    ``pos`` (instances x states) their positions in x."""

    model: DeviceModel
    members: np.ndarray
    params: dict[str, np.ndarray]
    where: list[str]
    pos: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    full: bool = False
    """The members are every slot (or bus device) in order: per-member arrays need no gather."""
    stride: int = 0
    """pos[i, k] = pos[0, 0] + i stride + k (states read by strided slices), 0 if irregular."""

    def take(self, values):
        return values if self.full else values[self.members]

    def put(self, base, values):
        return values if self.full else jnp.asarray(base).at[self.members].set(values)

    def states(self, x) -> tuple:
        n, ns = self.pos.shape
        if self.stride:
            first = int(self.pos[0, 0])
            return tuple(x[first + k : first + k + (n - 1) * self.stride + 1 : self.stride]
                         for k in range(ns))  # fmt: skip
        block = x[self.pos.T]
        return tuple(block[k] for k in range(ns))


def _groups(devices: Sequence[Device | None]) -> list[_Group]:
    by_model: dict[str, list[tuple[int, Device]]] = {}
    for k, device in enumerate(devices):
        if device is not None:
            by_model.setdefault(device.model.name, []).append((k, device))
    groups = []
    for name in sorted(by_model):
        members = by_model[name]
        model = members[0][1].model
        keys = sorted({key for _, d in members for key in d.params})
        params = {key: np.array([float(d.params[key]) for _, d in members]) for key in keys}
        groups.append(
            _Group(model, np.array([k for k, _ in members], dtype=np.int64), params,
                   [d.where for _, d in members])
        )  # fmt: skip
    return groups


def _check(groups: list[_Group], role: str) -> None:
    for grp in groups:
        if grp.model.role != role:
            raise ValueError(f"{grp.model.name} is a {grp.model.role}, not a {role}")
        problems = grp.model.check(grp.params)
        if problems:
            raise ValueError(
                "; ".join(
                    f"{grp.where[i]}: {grp.model.name} {name} = "
                    f"{grp.params.get(name, np.full(i + 1, np.nan))[i]:g} {reason}"
                    for name, i, reason in problems
                )
            )


def check_parameters(slots: Sequence[GeneratorSlot], role: str) -> None:
    """Raise ``ValueError`` naming each device (``Device.where``) whose parameter values its
    model cannot use, or a device placed in the wrong role."""
    _check(_groups([getattr(s, role) for s in slots]), role)


def check_slots(slots: Sequence[GeneratorSlot]) -> None:
    """Raise ``ValueError`` naming the device where a slot's devices do not fit together: a
    stabilizer without an exciter to add its signal to, an exciter reading the field current of
    a machine model without a field winding."""
    problems = []
    for slot in slots:
        if slot.stabilizer is not None and slot.exciter is None:
            problems.append(f"{slot.stabilizer.where}: {slot.stabilizer.model.name} stabilizer "
                            "needs an exciter on its machine (its output adds to the exciter's "
                            "voltage error)")  # fmt: skip
        if (slot.exciter is not None and "ifd" in slot.exciter.model.inputs
                and slot.machine.model.field_current is None):  # fmt: skip
            problems.append(f"{slot.exciter.where}: {slot.exciter.model.name} reads the field "
                            f"current, which the {slot.machine.model.name} machine model "
                            f"({slot.machine.where}) does not have")  # fmt: skip
    if problems:
        raise ValueError("; ".join(problems))


def _view(p: Mapping, grp: _Group) -> dict:
    prefix = grp.model.param_prefix
    return {k: p[f"{prefix}{k}"] for k in grp.params}


def assemble(
    grid: Grid,
    slots: Sequence[GeneratorSlot],
    description: str = "",
    bus_devices: Sequence[BusDevice] = (),
    *,
    element_kinds: Sequence[str] = (),
    started: float | None = None,
) -> DAESystem:
    """The DAE of ``grid`` with one slot per generator (``grid.gen_names`` order) and the bus
    devices; ``element_kinds`` lists bus-device kinds named even when absent (``names["motor"]
    = ()``); ``started`` the ``time.perf_counter()`` at which the case build began."""
    start = time.perf_counter() if started is None else started
    ng, nb = len(slots), len(grid.bus_names)
    if ng != grid.gen_bus.size:
        raise ValueError(f"{ng} generator slots for {grid.gen_bus.size} generators")
    groups = {role: _groups([getattr(s, role) for s in slots]) for role in GENERATOR_ROLES}
    groups["bus"] = _groups([b.device for b in bus_devices])
    for role, grps in groups.items():
        _check(grps, role)
    check_slots(slots)
    omega_s = 2.0 * np.pi * grid.f_hz
    scale = grid.gen_mbase / grid.sbase
    v_gen = grid.voltage[grid.gen_bus]
    s_mach = grid.gen_s / scale
    bus_of = np.array([b.bus for b in bus_devices], dtype=np.int64)
    dev_names = [b.name for b in bus_devices]

    # --- layout: generator-major, then bus devices ----------------------------------------------
    state_names: list[str] = []
    start_of: dict[tuple[str, int], int] = {}
    for k, slot in enumerate(slots):
        for role in GENERATOR_ROLES:
            device = getattr(slot, role)
            if device is not None:
                start_of[role, k] = len(state_names)
                state_names += [f"{s}[{grid.gen_names[k]}]" for s in device.model.states]
    for k, b in enumerate(bus_devices):
        start_of["bus", k] = len(state_names)
        state_names += [f"{s}[{b.name}]" for s in b.device.model.states]
    n_x = len(state_names)
    controller_set: set[int] = set()
    for role, grps in groups.items():
        for grp in grps:
            first = np.array([start_of[role, int(k)] for k in grp.members], dtype=np.int64)
            grp.pos = first[:, None] + np.arange(len(grp.model.states))[None, :]
            count = len(bus_devices) if role == "bus" else ng
            grp.full = np.array_equal(grp.members, np.arange(count))
            step = int(first[1] - first[0]) if first.size > 1 else 1
            grp.stride = (
                step
                if step >= 1 and np.array_equal(np.diff(first), [step] * (first.size - 1))
                else 0
            )
            for s in grp.model.controller_states:
                controller_set.update(int(i) for i in grp.pos[:, grp.model.states.index(s)])
    order = np.argsort(
        np.concatenate([g.pos.ravel() for r in (*GENERATOR_ROLES, "bus") for g in groups[r]])
        if n_x else np.zeros(0, dtype=np.int64)
    )  # fmt: skip
    permute = not np.array_equal(order, np.arange(n_x))

    # --- initialization --------------------------------------------------------------------------
    params: dict[str, np.ndarray] = {}
    x0 = np.zeros(n_x)
    id0, iq0 = np.zeros(ng), np.zeros(ng)
    efd0, tm0 = np.zeros(ng), np.zeros(ng)
    vref, pref = np.zeros(ng), np.zeros(ng)
    for grp in groups["machine"]:
        init = grp.model.init(v_gen[grp.members], s_mach[grp.members], grp.params)
        _place(grp, init, params, x0, ("Id", "Iq", "efd", "tm"))
        id0[grp.members], iq0[grp.members] = init["Id"], init["Iq"]
        efd0[grp.members], tm0[grp.members] = init["efd"], init["tm"]
    sig0: dict[str, np.ndarray] = {}
    if groups["stabilizer"] or any(g.model.inputs for g in groups["exciter"]):
        delta0 = np.zeros(ng)
        ifd0 = efd0.copy()  # LadIfd = Efd at equilibrium
        for grp in groups["machine"]:
            xs = grp.states(x0)
            delta0[grp.members] = xs[grp.model.states.index("delta")]
            if grp.model.field_current is not None:
                ifd0[grp.members] = np.asarray(
                    grp.model.field_current(xs, id0[grp.members], iq0[grp.members], grp.params)
                )
        vd0, vq0 = (np.asarray(a) for a in to_machine_frame(v_gen.real, v_gen.imag, delta0))
        sig0 = {"omega": np.ones(ng), "vt": np.abs(v_gen), "vd": vd0, "vq": vq0, "Id": id0,
                "Iq": iq0, "ifd": ifd0, "pe": vd0 * id0 + vq0 * iq0, "tm": tm0}  # fmt: skip
    for grp in groups["exciter"]:
        k = grp.members
        extra = ({n: sig0[n][k] for n in grp.model.inputs},) if grp.model.inputs else ()
        init = grp.model.init(efd0[k], np.abs(v_gen[k]), grp.params, *extra)
        _place(grp, init, params, x0, ("vref",))
        vref[grp.members] = init["vref"]
    for grp in groups["governor"]:
        init = grp.model.init(tm0[grp.members], grp.params)
        _place(grp, init, params, x0, ("pref",))
        pref[grp.members] = init["pref"]
    for grp in groups["stabilizer"]:
        init = grp.model.init({n: v[grp.members] for n, v in sig0.items()}, grp.params)
        _place(grp, init, params, x0, ())
    injected = np.zeros(len(bus_devices), dtype=complex)
    for grp in groups["bus"]:
        k = grp.members
        requested = np.array([bus_devices[i].s for i in k], dtype=complex)
        init = grp.model.init(grid.voltage[bus_of[k]], requested, grp.params, omega_s)
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
    status = np.ones(grid.branch_r.size) if grid.branch_status is None else grid.branch_status
    params.update(
        branch_parameters(grid.branch_r, grid.branch_x, grid.branch_b, grid.branch_tap,
                          grid.branch_shift, status)
    )  # fmt: skip
    if grid.branch_g is not None:
        params[BRANCH_G] = np.asarray(grid.branch_g, dtype=np.float64)
    load_bus, load_params = _static_loads(grid, bus_of, injected)
    params.update(load_params)
    inertia = np.zeros(ng)
    for grp in groups["machine"]:
        inertia[grp.members] = grp.params["H"] * scale[grp.members]
    params["gen_inertia"] = inertia
    params = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    topo = Topology(nb, grid.branch_from, grid.branch_to)
    gen_bus = grid.gen_bus
    load_buses = load_bus

    # --- equations -------------------------------------------------------------------------------
    def machine_signals(x):
        omega = jnp.ones(ng)
        delta = jnp.zeros(ng)
        for grp in groups["machine"]:
            xs = grp.states(x)
            delta = grp.put(delta, xs[grp.model.states.index("delta")])
            omega = grp.put(omega, xs[grp.model.states.index("omega")])
        return delta, omega

    field_needed = any("ifd" in g.model.inputs for g in groups["exciter"])

    def signals(x, z, p, omega, tm) -> dict:
        """The machine signals ``models.devices.base.SIGNALS`` (per slot, MBASE)."""
        vr, vi = z[:nb], z[nb : 2 * nb]
        id_, iq = z[2 * nb : 2 * nb + ng], z[2 * nb + ng :]
        delta, _ = machine_signals(x)
        vd, vq = to_machine_frame(vr[gen_bus], vi[gen_bus], delta)
        ifd = p["efd"]
        if field_needed:
            for grp in groups["machine"]:
                if grp.model.field_current is not None:
                    i = grp.model.field_current(grp.states(x), grp.take(id_), grp.take(iq),
                                                _view(p, grp))  # fmt: skip
                    ifd = grp.put(ifd, i)
        return {"omega": omega, "vt": jnp.sqrt(vd**2 + vq**2), "vd": vd, "vq": vq, "Id": id_,
                "Iq": iq, "ifd": ifd, "pe": vd * id_ + vq * iq, "tm": tm}  # fmt: skip

    def pick(sig: dict, grp: _Group, names) -> dict:
        return {n: grp.take(sig[n]) for n in names}

    def exciter_extra(sig, grp: _Group) -> tuple:
        return (pick(sig, grp, grp.model.inputs),) if grp.model.inputs else ()

    needs_signals = bool(groups["stabilizer"]) or any(g.model.inputs for g in groups["exciter"])

    def bus_voltage(z, grp: _Group):
        b = bus_of[grp.members]
        return z[:nb][b], z[nb : 2 * nb][b]

    def f(x, z, p):
        vr, vi = z[:nb], z[nb : 2 * nb]
        id_, iq = z[2 * nb : 2 * nb + ng], z[2 * nb + ng :]
        vt = jnp.sqrt(vr[gen_bus] ** 2 + vi[gen_bus] ** 2)
        _, omega = machine_signals(x)
        efd, tm = p["efd"], p["tm"]
        for grp in groups["governor"]:
            t = grp.model.output(grp.states(x), grp.take(omega), _view(p, grp))
            tm = grp.put(tm, t)
        sig = signals(x, z, p, omega, tm) if needs_signals else {}
        for grp in groups["exciter"]:
            e = grp.model.output(grp.states(x), grp.take(vt), _view(p, grp),
                                 *exciter_extra(sig, grp))  # fmt: skip
            efd = grp.put(efd, e)
        vs = jnp.zeros(ng)
        for grp in groups["stabilizer"]:
            v = grp.model.output(grp.states(x), pick(sig, grp, sig), _view(p, grp))
            vs = grp.put(vs, v)
        out = []
        for grp in groups["machine"]:
            d = grp.model.derivatives(
                grp.states(x), grp.take(id_), grp.take(iq), grp.take(efd), grp.take(tm),
                _view(p, grp), omega_s,
            )  # fmt: skip
            out.append(jnp.stack(d, axis=1).ravel())
        for grp in groups["exciter"]:
            vt_k = grp.take(vt)
            vs_k = grp.take(vs) if groups["stabilizer"] else 0.0 * vt_k
            d = grp.model.derivatives(
                grp.states(x), vt_k, grp.take(p["vref"]), vs_k, _view(p, grp),
                *exciter_extra(sig, grp),
            )  # fmt: skip
            out.append(jnp.stack(d, axis=1).ravel())
        for grp in groups["governor"]:
            d = grp.model.derivatives(
                grp.states(x), grp.take(omega), grp.take(p["pref"]), _view(p, grp)
            )
            out.append(jnp.stack(d, axis=1).ravel())
        for grp in groups["stabilizer"]:
            d = grp.model.derivatives(grp.states(x), pick(sig, grp, sig), _view(p, grp))
            out.append(jnp.stack(d, axis=1).ravel())
        for grp in groups["bus"]:
            d = grp.model.derivatives(grp.states(x), *bus_voltage(z, grp), _view(p, grp),
                                      omega_s)  # fmt: skip
            out.append(jnp.stack(d, axis=1).ravel())
        values = jnp.concatenate(out)
        return values[order] if permute else values

    def injections(x, z, p):
        """Machine currents into the network (complex pu, system base) and delta."""
        id_, iq = z[2 * nb : 2 * nb + ng], z[2 * nb + ng :]
        delta, _ = machine_signals(x)
        gr, gi = to_network_frame(id_, iq, delta)
        return p["gen_status"] * p["gen_scale"] * (gr + 1j * gi), delta

    def kcl(x, z, p):
        v = z[:nb] + 1j * z[nb : 2 * nb]
        i_gen, _ = injections(x, z, p)
        i_load = zip_current(v[load_buses], p["load_g"], p["load_b"], p["load_ip"],
                             p["load_iq"], p["load_pp"], p["load_pq"])  # fmt: skip
        injection = jnp.zeros(nb, dtype=jnp.complex128).at[gen_bus].add(i_gen)
        for grp in groups["bus"]:
            ir, ii = grp.model.current(grp.states(x), *bus_voltage(z, grp), _view(p, grp),
                                       omega_s)  # fmt: skip
            injection = injection.at[bus_of[grp.members]].add(ir + 1j * ii)
        injection = injection.at[load_buses].add(-i_load)
        y_shunt = (p["shunt_g"] + p["fault_g"] + p["bus_isolated"]
                   + 1j * (p["shunt_b"] + p["fault_b"]))  # fmt: skip
        return current_mismatch(topo, v, injection, y_shunt, p)

    def g(x, z, p):
        vr, vi = z[:nb], z[nb : 2 * nb]
        id_, iq = z[2 * nb : 2 * nb + ng], z[2 * nb + ng :]
        delta, _ = machine_signals(x)
        vd, vq = to_machine_frame(vr[gen_bus], vi[gen_bus], delta)
        res_d, res_q = jnp.zeros(ng), jnp.zeros(ng)
        for grp in groups["machine"]:
            rd, rq = grp.model.stator(grp.states(x), grp.take(vd), grp.take(vq),
                                      grp.take(id_), grp.take(iq), _view(p, grp))  # fmt: skip
            res_d, res_q = grp.put(res_d, rd), grp.put(res_q, rq)
        on = p["gen_status"]
        mismatch = kcl(x, z, p)
        return jnp.concatenate(
            [mismatch.real, mismatch.imag, on * res_d + (1 - on) * id_, on * res_q + (1 - on) * iq]
        )

    def outputs(x, z, p):
        vr, vi = z[:nb], z[nb : 2 * nb]
        i_gen, delta = injections(x, z, p)
        _, omega = machine_signals(x)
        pe = vr[gen_bus] * i_gen.real + vi[gen_bus] * i_gen.imag
        measured = []
        for grp in groups["bus"]:
            measured += list(grp.model.measure(grp.states(x), *bus_voltage(z, grp),
                                               _view(p, grp), omega_s))  # fmt: skip
        weight = p["gen_status"] * p["gen_inertia"]
        coi = jnp.sum(weight * omega) / jnp.sum(weight)
        kcl_max = jnp.max(jnp.abs(kcl(x, z, p)))
        return jnp.concatenate(
            [jnp.sqrt(vr**2 + vi**2), jnp.arctan2(vi, vr), omega, delta, pe, *measured,
             coi[None], kcl_max[None]]
        )  # fmt: skip

    def avr_references(z0):
        """AVR references at the polished terminal voltages (a regulator with KA / TA = 1e4 1/s
        turns the power flow's ~1e-11 pu voltage tolerance into |f| ~ 1e-7)."""
        if not groups["exciter"]:
            return {}
        vt = np.hypot(z0[:nb], z0[nb : 2 * nb])[gen_bus]
        new = params["vref"].copy()
        sig = {}
        if any(g.model.inputs for g in groups["exciter"]):
            p_dev = {k: jnp.asarray(v) for k, v in params.items()}
            sig = {k: np.asarray(v) for k, v in
                   signals(x0, z0, p_dev, np.ones(ng), params["tm"]).items()}  # fmt: skip
        for grp in groups["exciter"]:
            k = grp.members
            extra = ({n: sig[n][k] for n in grp.model.inputs},) if grp.model.inputs else ()
            new[k] = grp.model.init(efd0[k], vt[k], grp.params, *extra)["vref"]
        return {"vref": new}

    z_pf = np.concatenate([grid.voltage.real, grid.voltage.imag, id0, iq0])
    z0, f_res, g_res = checked_equilibrium(f, g, x0, z_pf, params, setpoints=avr_references)
    perturbation = np.array([PERTURBATION.get(n.split("[")[0], 0.0) for n in state_names])
    kinds = list(dict.fromkeys([*element_kinds, *(b.device.model.kind for b in bus_devices)]))
    measure_names = tuple(
        f"{m}[{dev_names[i]}]" for grp in groups["bus"] for m in grp.model.measures
        for i in grp.members
    )  # fmt: skip
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
        + measure_names
        + ("omega_coi", "kcl_max"),
        outputs=outputs,
        perturbation_scale=perturbation,
        names={
            "bus": grid.bus_names,
            "branch": grid.branch_names,
            "generator": grid.gen_names,
            "load": tuple(grid.bus_names[i] for i in load_buses),
            **{
                kind: tuple(b.name for b in bus_devices if b.device.model.kind == kind)
                for kind in kinds
            },
        },
        controller_states=tuple(state_names[i] for i in sorted(controller_set)),
        description=description,
        info={
            **grid.info,
            "n_bus": nb,
            "n_branch": topo.n_branch,
            "branch_from": tuple(int(i) for i in topo.from_bus),
            "branch_to": tuple(int(i) for i in topo.to_bus),
            "device_buses": tuple(sorted({int(i) for i in gen_bus} | {int(i) for i in bus_of})),
            "n_gen": ng,
            "n_load": int(load_buses.size),
            **{
                f"n_{kind}": sum(b.device.model.kind == kind for b in bus_devices) for kind in kinds
            },
            "f_hz": float(grid.f_hz),
            "s_base_mva": float(grid.sbase),
            "generator_mva": grid.info.get(
                "generator_mva",
                {n: float(m) for n, m in zip(grid.gen_names, grid.gen_mbase, strict=True)},
            ),
            "generator_models": {
                grid.gen_names[k]: "+".join(
                    d.model.name
                    for d in (s.machine, s.exciter, s.governor, s.stabilizer)
                    if d is not None
                )
                for k, s in enumerate(slots)
            },
            "init_max_abs_f": f_res,
            "init_max_abs_g": g_res,
            "build_seconds": time.perf_counter() - start,
        },
    )


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
        vm = np.abs(grid.voltage) if grid.vm is None else np.asarray(grid.vm, dtype=float)
        split = zip_parameters(load_s.real, load_s.imag, vm[entry_bus], *grid.load_fractions)
        parts = {
            "load_g": split["load_g"] + load_y.real, "load_b": split["load_b"] - load_y.imag,
            "load_ip": split["load_ip"] + load_i.real, "load_iq": split["load_iq"] + load_i.imag,
            "load_pp": split["load_pp"], "load_pq": split["load_pq"],
        }  # fmt: skip
    return buses, {k: per_bus(v) for k, v in parts.items()}


def _place(grp: _Group, init: Mapping, params: dict, x0: np.ndarray, interface) -> None:
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
