"""Where each device's states sit in x, and its instances grouped by model.

Instances of one model are evaluated together (vectorized over their parameter arrays), so the
traced equations grow with the number of *models*, not of devices. x is generator-major: per
generator slot in order, its source's states (machine or converter), then its exciter's, its
governor's and its stabilizer's, or its electrical and plant controls'; then per bus device in
order, its states (``<state>[<generator or device name>]``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import jax.numpy as jnp
import numpy as np

from models.assembly.devices import (
    CONVERTER_ROLES,
    GENERATOR_ROLES,
    SLOT_ROLES,
    BusDevice,
    Device,
    GeneratorSlot,
)
from models.devices.base import DeviceModel

ROLES = (*GENERATOR_ROLES, *CONVERTER_ROLES, "bus")
"""Every role, in the order the equations stack the groups' derivatives."""


@dataclass
class DeviceGroup:
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

    def view(self, p: Mapping) -> dict:
        """This group's parameters, by the model's own names, from the system's ``p``."""
        prefix = self.model.param_prefix
        return {k: p[f"{prefix}{k}"] for k in self.params}


def device_groups(devices: Sequence[Device | None]) -> list[DeviceGroup]:
    """The instances grouped by model name (sorted), each with its members' parameter arrays."""
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
            DeviceGroup(model, np.array([k for k, _ in members], dtype=np.int64), params,
                        [d.where for _, d in members])
        )  # fmt: skip
    return groups


def check_groups(groups: list[DeviceGroup], role: str) -> None:
    """Raise ``ValueError`` naming each instance whose parameter values its model refuses, or a
    model placed in the wrong role."""
    for grp in groups:
        if grp.model.role != role:
            raise ValueError(f"{grp.model.name} is a {grp.model.role}, not a {role}")
        problems = _described(grp, grp.model.check(grp.params))
        if problems:
            raise ValueError("; ".join(problems))


def _described(grp: DeviceGroup, problems: list) -> list[str]:
    return [
        f"{grp.where[i]}: {grp.model.name} {name} = "
        f"{grp.params.get(name, np.full(i + 1, np.nan))[i]:g} {reason}"
        for name, i, reason in problems
    ]


def implausible(devices: Sequence[Device | None]) -> list[str]:
    """Each device whose data fail its model's plausibility rules (``DeviceModel.plausible``:
    orderings that typical data satisfy and the equations do not need), said in words."""
    out = []
    for grp in device_groups(devices):
        if grp.model.plausible is not None:
            out += _described(grp, grp.model.plausible(grp.params))
    return out


def check_parameters(slots: Sequence[GeneratorSlot], role: str) -> None:
    """Raise ``ValueError`` naming each device (``Device.where``) whose parameter values its
    model cannot use, or a device placed in the wrong role."""
    check_groups(device_groups([s.device(role) for s in slots]), role)


@dataclass(frozen=True)
class Layout:
    """The devices' groups by role (``ROLES``), the state names and the permutation from the
    groups' concatenated derivatives to x's order."""

    groups: dict[str, list[DeviceGroup]]
    state_names: tuple[str, ...]
    order: np.ndarray
    permute: bool
    controller_states: tuple[str, ...]
    bus_of: np.ndarray
    """Bus (0-based) of each bus device."""
    gen_bus: np.ndarray

    @property
    def n_gen(self) -> int:
        return int(self.gen_bus.size)

    def has_converters(self) -> bool:
        return bool(self.groups["converter"])

    def has_inputs(self) -> bool:
        """Whether some exciter reads machine signals (``DeviceModel.inputs``)."""
        return any(g.model.inputs for g in self.groups["exciter"])

    def needs_signals(self) -> bool:
        return bool(self.groups["stabilizer"]) or self.has_inputs()


def layout(
    gen_names: Sequence[str],
    gen_bus: np.ndarray,
    slots: Sequence[GeneratorSlot],
    bus_devices: Sequence[BusDevice],
) -> Layout:
    """Group and check the devices and place their states (see the module docstring)."""
    ng = len(slots)
    if ng != len(gen_bus):
        raise ValueError(f"{ng} generator slots for {len(gen_bus)} generators")
    groups = {role: device_groups([s.device(role) for s in slots]) for role in SLOT_ROLES}
    groups["bus"] = device_groups([b.device for b in bus_devices])
    for role, grps in groups.items():
        check_groups(grps, role)
    state_names: list[str] = []
    start_of: dict[tuple[str, int], int] = {}
    for k, slot in enumerate(slots):
        for role in SLOT_ROLES:
            device = slot.device(role)
            if device is not None:
                start_of[role, k] = len(state_names)
                state_names += [f"{s}[{gen_names[k]}]" for s in device.model.states]
    for k, b in enumerate(bus_devices):
        start_of["bus", k] = len(state_names)
        state_names += [f"{s}[{b.name}]" for s in b.device.model.states]
    controller_set: set[int] = set()
    for role, grps in groups.items():
        count = len(bus_devices) if role == "bus" else ng
        for grp in grps:
            _place_group(grp, [start_of[role, int(k)] for k in grp.members], count)
            for s in grp.model.controller_states:
                controller_set.update(int(i) for i in grp.pos[:, grp.model.states.index(s)])
    n_x = len(state_names)
    order = np.argsort(
        np.concatenate([g.pos.ravel() for r in ROLES for g in groups[r]])
        if n_x else np.zeros(0, dtype=np.int64)
    )  # fmt: skip
    return Layout(
        groups=groups,
        state_names=tuple(state_names),
        order=order,
        permute=not np.array_equal(order, np.arange(n_x)),
        controller_states=tuple(state_names[i] for i in sorted(controller_set)),
        bus_of=np.array([b.bus for b in bus_devices], dtype=np.int64),
        gen_bus=np.asarray(gen_bus, dtype=np.int64),
    )


def _place_group(grp: DeviceGroup, starts: Sequence[int], count: int) -> None:
    """Set the group's state positions from its members' first states, and whether they can be
    read without a gather (every member in order, or a constant stride)."""
    first = np.array(starts, dtype=np.int64)
    grp.pos = first[:, None] + np.arange(len(grp.model.states))[None, :]
    grp.full = np.array_equal(grp.members, np.arange(count))
    step = int(first[1] - first[0]) if first.size > 1 else 1
    regular = step >= 1 and np.array_equal(np.diff(first), [step] * (first.size - 1))
    grp.stride = step if regular else 0
