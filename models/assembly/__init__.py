"""One generic assembler: a solved ``models.grid.Grid`` plus device instances become a
``DAESystem``. Every RMS case goes through here: the MATPOWER cases (``models.cases.matpower``),
wscc9 (``models.cases.wscc9``) and PSS/E cases (``models.psse``).

Three steps, one module each: ``layout`` (groups of instances per model and their states'
positions in x), ``initialization`` (states and parameters from the power flow) and
``equations`` (f, g and the outputs); this module runs them, polishes the algebraic variables at
the initial point and checks it to 1e-8 (``models.cases.equilibrium.checked_equilibrium``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

import models.jaxconfig  # noqa: F401
from models.assembly.devices import (
    CONVERTER_ROLES,
    GENERATOR_ROLES,
    SLOT_ROLES,
    BusDevice,
    Device,
    GeneratorSlot,
    check_slots,
)
from models.assembly.equations import NetworkEquations
from models.assembly.initialization import avr_references, initialize
from models.assembly.layout import Layout, check_parameters, layout
from models.cases.equilibrium import checked_equilibrium, network_alg_names, network_output_names
from models.dae import DAESystem
from models.grid import Grid
from models.network import Topology

__all__ = [
    "CONVERTER_ROLES",
    "GENERATOR_ROLES",
    "SLOT_ROLES",
    "BusDevice",
    "Device",
    "GeneratorSlot",
    "assemble",
    "check_parameters",
    "check_slots",
]

PERTURBATION = {"delta": 0.05, "omega": 1e-3, "s": 1e-3}
"""Typical initial-state perturbation per state name (rad, pu, pu slip); all other states 0."""


def assemble(
    grid: Grid,
    slots: Sequence[GeneratorSlot],
    description: str = "",
    bus_devices: Sequence[BusDevice] = (),
    *,
    element_kinds: Sequence[str] = (),
    started: float | None = None,
) -> DAESystem:
    """The DAE of the solved ``grid`` with one slot per generator (``grid.gen_names`` order) and
    the bus devices; ``element_kinds`` lists bus-device kinds named even when absent
    (``names["motor"] = ()``); ``started`` the ``time.perf_counter()`` at which the case build
    began."""
    start = time.perf_counter() if started is None else started
    lay = layout(grid.gen_names, grid.gen_bus, slots, bus_devices)
    check_slots(slots)
    initial = initialize(grid, lay, bus_devices)
    topo = Topology(grid.n_bus, grid.branch_from, grid.branch_to)
    eqs = NetworkEquations(lay, topo, initial.load_buses, 2.0 * np.pi * grid.f_hz)
    z0, f_res, g_res = checked_equilibrium(
        eqs.f, eqs.g, initial.x0, initial.z_start(grid), initial.params,
        setpoints=avr_references(lay, initial, eqs.signals),
    )  # fmt: skip
    return DAESystem(
        name=grid.name,
        state_names=lay.state_names,
        alg_names=network_alg_names(grid.bus_names, grid.gen_names),
        f=eqs.f,
        g=eqs.g,
        x0=initial.x0,
        z0=z0,
        params=initial.params,
        output_names=network_output_names(grid.bus_names, grid.gen_names)
        + _measure_names(lay, bus_devices)
        + ("omega_coi", "kcl_max"),
        outputs=eqs.outputs,
        perturbation_scale=np.array(
            [PERTURBATION.get(n.split("[")[0], 0.0) for n in lay.state_names]
        ),
        names=_element_names(grid, initial.load_buses, bus_devices, element_kinds),
        controller_states=lay.controller_states,
        description=description,
        info={
            **_info(grid, lay, slots, bus_devices, element_kinds, initial.load_buses),
            "init_max_abs_f": f_res,
            "init_max_abs_g": g_res,
            "build_seconds": time.perf_counter() - start,
        },
    )


def _kinds(bus_devices: Sequence[BusDevice], element_kinds: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([*element_kinds, *(b.device.model.kind for b in bus_devices)]))


def _measure_names(lay: Layout, bus_devices: Sequence[BusDevice]) -> tuple[str, ...]:
    return tuple(
        f"{m}[{bus_devices[i].name}]" for grp in lay.groups["bus"] for m in grp.model.measures
        for i in grp.members
    )  # fmt: skip


def _element_names(grid: Grid, load_buses, bus_devices, element_kinds) -> dict:
    return {
        "bus": grid.bus_names,
        "branch": grid.branch_names,
        "generator": grid.gen_names,
        "load": tuple(grid.bus_names[i] for i in load_buses),
        **{
            kind: tuple(b.name for b in bus_devices if b.device.model.kind == kind)
            for kind in _kinds(bus_devices, element_kinds)
        },
    }


def _info(grid: Grid, lay: Layout, slots, bus_devices, element_kinds, load_buses) -> dict:
    """What ``DAESystem.info`` says of the network and its devices."""
    kinds = _kinds(bus_devices, element_kinds)
    return {
        **grid.info,
        "n_bus": grid.n_bus,
        "n_branch": grid.n_branch,
        "branch_from": tuple(int(i) for i in grid.branch_from),
        "branch_to": tuple(int(i) for i in grid.branch_to),
        "device_buses": tuple(sorted({int(i) for i in lay.gen_bus} | {int(i) for i in lay.bus_of})),
        "n_gen": lay.n_gen,
        "n_load": int(load_buses.size),
        **{f"n_{kind}": sum(b.device.model.kind == kind for b in bus_devices) for kind in kinds},
        "f_hz": float(grid.f_hz),
        "s_base_mva": float(grid.sbase),
        "generator_mva": grid.info.get(
            "generator_mva",
            {n: float(m) for n, m in zip(grid.gen_names, grid.gen_mbase, strict=True)},
        ),
        "generator_models": {
            grid.gen_names[k]: "+".join(
                d.model.name
                for d in (s.machine, s.exciter, s.governor, s.stabilizer, s.electrical, s.plant)
                if d is not None
            )
            for k, s in enumerate(slots)
        },
    }
