"""What the assembler is given besides the grid: device instances in generator slots and at
buses, and the checks that they fit together (each naming the record where the data came from).

Each generator slot holds a machine model and optionally an exciter, a governor and a
stabilizer (whose output VOTHSG adds to the exciter's voltage error); bus devices (induction
motors, grid-following inverters) connect to a bus (``models.devices``; PowerSimulationsDynamics.jl
organizes dynamic devices the same way).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from models.devices.base import DeviceModel

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
