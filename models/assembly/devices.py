"""What the assembler is given besides the grid: device instances in generator slots and at
buses, and the checks that they fit together (each naming the record where the data came from).

Each generator slot holds its source and its controllers. A synchronous machine (role
``machine``) takes an exciter, a governor and a stabilizer (whose output VOTHSG adds to the
exciter's voltage error); a converter-interfaced resource (role ``converter``, e.g. REGCA1, in
the same place) takes an electrical control (``electrical``, REECA1) and a plant control
(``plant``, REPCA1), as PSS/E attaches them by bus and machine ID. Bus devices (induction
motors, grid-following inverters) connect to a bus (``models.devices``; PowerSimulationsDynamics.jl
organizes dynamic devices the same way).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from models.devices.base import DeviceModel

GENERATOR_ROLES = ("machine", "exciter", "governor", "stabilizer")
"""Roles of a synchronous machine's slot."""
CONVERTER_ROLES = ("converter", "electrical", "plant")
"""Roles of a converter's slot (the converter sits in ``GeneratorSlot.machine``)."""
SLOT_ROLES = (*GENERATOR_ROLES, *CONVERTER_ROLES)
"""Every role of a slot, in the order of their states in x."""


@dataclass(frozen=True)
class Device:
    """One instance: its model, parameter values (``model.params`` plus any the network
    supplies, e.g. ``ra``) and where it was defined (for error messages)."""

    model: DeviceModel
    params: Mapping[str, float]
    where: str


@dataclass(frozen=True)
class GeneratorSlot:
    """The devices of one generator: ``machine`` is its source, a synchronous machine (role
    ``machine``) or a converter (role ``converter``)."""

    machine: Device
    exciter: Device | None = None
    governor: Device | None = None
    stabilizer: Device | None = None
    electrical: Device | None = None
    plant: Device | None = None

    def device(self, role: str) -> Device | None:
        """The slot's device of ``role`` (``SLOT_ROLES``), None where it has none."""
        if role in ("machine", "converter"):
            return self.machine if self.machine.model.role == role else None
        return getattr(self, role)


@dataclass(frozen=True)
class BusDevice:
    """A device of role ``bus`` at ``bus`` (0-based), named ``name``, asked to inject ``s``
    (complex pu, system base; a motor's consumption is a negative injection) at the power flow."""

    name: str
    bus: int
    device: Device
    s: complex


def check_slots(slots: Sequence[GeneratorSlot]) -> None:
    """Raise ``ValueError`` naming the device where a slot's devices do not fit together: a
    stabilizer without an exciter to add its signal to, an exciter reading the field current of
    a machine model without a field winding."""
    problems = []
    for slot in slots:
        converter = slot.machine.model.role == "converter"
        for role in GENERATOR_ROLES[1:] if converter else CONVERTER_ROLES[1:]:
            device = getattr(slot, role)
            if device is not None:
                problems.append(f"{device.where}: {device.model.name} ({role}) cannot control "
                                f"the {slot.machine.model.name} {slot.machine.model.role} "
                                f"({slot.machine.where})")  # fmt: skip
        if slot.plant is not None and slot.electrical is None:
            problems.append(
                f"{slot.plant.where}: {slot.plant.model.name} plant control needs "
                "an electrical control on its converter (it drives its references)"
            )
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
