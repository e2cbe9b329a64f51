"""Hand-written networks for the dq presets (SMIB, microgrid, inverter test) as a
``models.grid.Grid``, solved by the project's power flow (``models.powerflow``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from models.cases.equilibrium import unique_names
from models.grid import PQ, PV, SWING, Grid
from models.powerflow import solve_power_flow


@dataclass(frozen=True)
class Branch:
    """A pi-model branch between two named buses (pu on the system base; tap at ``frm``)."""

    frm: str
    to: str
    r: float
    x: float
    b: float = 0.0
    tap: float = 1.0
    shift: float = 0.0


@dataclass(frozen=True)
class Injection:
    """A device's power-flow role at ``bus``: ``slack`` (V, angle 0), ``pv`` (P, V) or ``pq``
    (P, Q); powers in pu on the system base, generator convention."""

    bus: str
    role: str
    p: float = 0.0
    q: float = 0.0
    v: float = 1.0


def solve_small_power_flow(
    bus_names: Sequence[str],
    branches: Sequence[Branch],
    injections: Sequence[Injection],
    loads: dict[str, complex],
    *,
    base_mva: float,
    f_hz: float = 60.0,
    source: str = "",
) -> Grid:
    """The solved grid (one slack injection; PV buses hold |V|); its generators are the
    injections, in order, with their solved complex powers (generator convention)."""
    names = list(bus_names)
    n = len(names)
    idx = {b: k for k, b in enumerate(names)}
    for item in [*injections, *(Injection(b, "pq") for b in loads)]:
        if item.bus not in idx:
            raise ValueError(f"unknown bus {item.bus!r}; buses: {names}")
    if sum(inj.role == "slack" for inj in injections) != 1:
        raise ValueError("exactly one injection must be the slack")
    kinds = np.full(n, PQ, dtype=np.int64)
    v_set = np.full(n, np.nan)
    for inj in injections:
        if inj.role in ("slack", "pv"):
            kinds[idx[inj.bus]] = SWING if inj.role == "slack" else PV
            v_set[idx[inj.bus]] = inj.v
    load_bus = np.array([idx[b] for b in loads], dtype=np.int64)
    grid = Grid(
        name="dq network",
        sbase=base_mva,
        f_hz=f_hz,
        bus_names=tuple(names),
        bus_kind=kinds,
        v_set=v_set,
        voltage=np.ones(n, dtype=complex),
        shunt=np.zeros(n, dtype=complex),
        branch_names=unique_names(f"br_{b.frm}_{b.to}" for b in branches),
        branch_from=np.array([idx[b.frm] for b in branches], dtype=np.int64),
        branch_to=np.array([idx[b.to] for b in branches], dtype=np.int64),
        branch_r=np.array([b.r for b in branches], dtype=np.float64),
        branch_x=np.array([b.x for b in branches], dtype=np.float64),
        branch_b=np.array([b.b for b in branches], dtype=np.float64),
        branch_tap=np.array([b.tap for b in branches], dtype=np.float64),
        branch_shift=np.array([b.shift for b in branches], dtype=np.float64),
        load_bus=load_bus,
        load_s=np.array(list(loads.values()), dtype=complex),
        load_i=np.zeros(load_bus.size, dtype=complex),
        load_y=np.zeros(load_bus.size, dtype=complex),
        gen_bus=np.array([idx[inj.bus] for inj in injections], dtype=np.int64),
        gen_names=tuple(f"injection{k}" for k in range(len(injections))),
        gen_mbase=np.ones(len(injections)),
        gen_s=np.array([complex(inj.p, inj.q if inj.role == "pq" else 0.0) for inj in injections]),
        info={"sources": source or "the project's Newton power flow (models.powerflow)"},
    )
    return solve_power_flow(grid)
