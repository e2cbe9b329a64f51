"""WSCC / IEEE 3-machine 9-bus system as data for the generic assembler (``models.assembly``).

Static data and operating point: MATPOWER ``case9`` through ``pandapower.networks.case9()``
(``models.powerflow``), 100 MVA, 60 Hz. Dynamic data: ``models/data/wscc9_dynamic.json``
(Sauer & Pai 1998, Example 7.1): two-axis machines (``models.devices.two_axis``) with IEEE DC1A
exciters (``models.devices.ieee_dc1a``) on generator buses 1, 2, 3, no governors;
constant-impedance loads at the load buses; network KCL over the branch list
(``models.network``).

Variables (all pu on 100 MVA unless stated):

* x, per machine k in bus order: [delta (rad), omega, Eq_p, Ed_p, Efd, RF, VR], i.e.
  ``x.reshape(n_gen, 7)``;
* z = [Vr of every bus, Vi of every bus, Id of every machine, Iq of every machine];
* g = [Re KCL of every bus, Im KCL of every bus, d-stator of every machine, q-stator ...].

The initial point follows Sauer & Pai §7.6 from the power flow (machines, then exciters), after
which z is polished by Newton on g at x0 (and Vref recomputed at the polished voltages); TM
(``tm``) and Vref (``vref``) are parameters. A generator trip sets ``gen_status`` 1 -> 0: its
stator equations become Id = Iq = 0.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np

from models.assembly import Device, GeneratorSlot, assemble
from models.cases.pandapower_grid import case9_grid
from models.dae import DAESystem
from models.devices import IEEE_DC1A, TWO_AXIS
from models.devices import ieee_dc1a as exc
from models.devices import two_axis as sm
from models.grid import Grid

DATA_PATH = Path(__file__).resolve().parent.parent / "data" / "wscc9_dynamic.json"
GEN_STATES = sm.STATES + exc.STATES
"""Differential states of one machine with its exciter, in the order used in x."""


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


def _generator_slots(pf: Grid, data: Mapping) -> tuple[list[int], list[GeneratorSlot]]:
    """Generator bus numbers (power-flow order) and their slots: machine and exciter (system
    base, as published), no governor."""
    devices = validate_dynamic_data(data)
    gen_numbers = [int(pf.numbers[i]) for i in pf.gen_bus]
    if sorted(devices) != sorted(gen_numbers) or len(set(gen_numbers)) != len(gen_numbers):
        raise ValueError(
            f"dynamic data covers generator buses {sorted(devices)} but the power flow has "
            f"generators at buses {gen_numbers}"
        )
    for field, value in (("system_base_mva", pf.sbase), ("frequency_hz", pf.f_hz)):
        if field in data and float(data[field]) != value:
            raise ValueError(f"dynamic data: {field} = {data[field]} but the case has {value}")
    slots = [
        GeneratorSlot(
            Device(TWO_AXIS, devices[b]["machine"], f"generator at bus {b} (gen{b}), machine"),
            Device(IEEE_DC1A, devices[b]["exciter"], f"generator at bus {b} (gen{b}), exciter"),
        )
        for b in gen_numbers
    ]
    return gen_numbers, slots


DESCRIPTION = (
    "WSCC 3-machine 9-bus system: two-axis machines with IEEE DC1A exciters (no limits), "
    "constant-impedance loads, MATPOWER case9 (pandapower's copy) at its power flow"
)


def build_wscc9(data: Mapping | None = None, power_flow: Grid | None = None) -> DAESystem:
    """The WSCC 9-bus DAE at its power-flow equilibrium.

    ``data`` defaults to ``models/data/wscc9_dynamic.json`` (a modified copy may be passed, e.g.
    in tests); ``power_flow`` (a solved grid) defaults to ``case9_grid()``.
    """
    grid, slots = wscc9_devices(data, power_flow)
    return assemble(grid, slots, DESCRIPTION)


def wscc9_devices(
    data: Mapping | None = None, power_flow: Grid | None = None
) -> tuple[Grid, list[GeneratorSlot]]:
    """The case as data for ``models.assembly.assemble``: the grid and one slot per generator."""
    data = load_dynamic_data() if data is None else copy.deepcopy(dict(data))
    pf = case9_grid() if power_flow is None else power_flow
    gen_numbers, slots = _generator_slots(pf, data)
    grid = replace(
        pf,
        name="wscc9",
        load_fractions=(1.0, 0.0, 0.0),  # constant impedance
        gen_names=tuple(f"gen{b}" for b in gen_numbers),
        gen_mbase=np.full(len(gen_numbers), float(pf.sbase)),  # data on the system base
        info={
            **pf.info,
            "sources": (
                "network: MATPOWER case9 via pandapower.networks.case9() (generator voltages "
                "1.0 pu); operating point: the project's power flow; machines and exciters: "
                "P. W. Sauer and M. A. Pai, Power System Dynamics and Stability, Prentice Hall, "
                "1998, Ch. 7 and Example 7.1 (two-axis model, IEEE DC1A exciter without VR limits)"
            ),
        },
    )
    return grid, slots
