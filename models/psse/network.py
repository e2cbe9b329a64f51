"""A PSS(R)E raw case as a ``models.grid.Grid``.

Branch model: the pi model of ``models.network`` (series r + jx, total charging b, off-nominal
ratio ``tap`` and phase ``shift`` at the from end). A two-winding transformer (PSS/E: bus I,
ideal t1/ANG1 : 1, impedance Z, ideal 1 : t2, bus J) becomes one branch with tap t1/t2, shift
ANG1 and impedance Z t2^2 (the impedance referred through the winding-2 ratio). A three-winding
transformer becomes a star bus (PSS/E's star point, started at VMSTAR/ANSTAR) and one branch per
winding with Z1 = (Z12 + Z31 - Z23)/2 (and cyclically), ratio and angle of that winding at the
winding bus. Magnetizing admittance is a shunt at the winding-1 bus (it stays when the
transformer trips: noted on the network where non-zero).

Operating point: the project's power flow (``models.powerflow``) on the grid built here: PSS/E's
load model (constant power, constant current and constant admittance parts), swing bus at its
raw voltage, generator buses holding VS (their own bus; a remote IREG is held at the raw's solved
voltage instead, noted), the raw file's QG as the split of a bus's reactive power among its
machines, QB/QT reported against, not enforced (as ANDES does; PSS/E would switch the bus to PQ).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from models.cases.equilibrium import unique_names
from models.grid import Grid
from models.psse.raw import RawCase
from models.psse.records import PsseError

ZERO_IMPEDANCE = 1e-4
"""PSS/E's default zero-impedance threshold THRSHZ (pu)."""
STAR_OFFSET = 1_000_000
"""Star buses of three-winding transformers are numbered above every raw bus number."""


@dataclass(frozen=True)
class PsseNetwork:
    """A raw case's grid (unsolved) and what only PSS/E's records say about its machines."""

    grid: Grid
    gen_ids: tuple[tuple[int, str], ...]
    """(raw bus number, machine ID) per generator: how ``.dyr`` records name machines."""
    gen_zsource: np.ndarray
    """ZR + jZX, pu on MBASE (PSS/E's source impedance)."""
    bus_area: np.ndarray
    notes: list[str] = field(default_factory=list)


def build_network(case: RawCase) -> PsseNetwork:
    """The grid of ``case``, unsolved, and its machines' PSS/E identities (see the module
    docstring)."""
    notes = list(case.notes)
    numbers = [b.number for b in case.buses]
    names = [f"bus{b.number}" for b in case.buses]
    kinds = [b.kind for b in case.buses]
    areas = [b.area for b in case.buses]
    zones = [b.zone for b in case.buses]
    v_raw = [b.vm * np.exp(1j * np.deg2rad(b.va_deg)) for b in case.buses]
    index = {n: k for k, n in enumerate(numbers)}
    base = case.sbase
    f_, t_, z_, b_, tap_, sh_, br_names = [], [], [], [], [], [], []
    shunt = np.zeros(len(numbers) + 3 * len(case.transformers), dtype=complex)
    for br in case.branches:
        f_.append(index[br.i])
        t_.append(index[br.j])
        z_.append(complex(br.r, br.x))
        b_.append(br.b)
        tap_.append(1.0)
        sh_.append(0.0)
        br_names.append(f"line_{br.i}_{br.j}_{br.ckt}")
    for k, xf in enumerate(case.transformers):
        w = xf.windings
        if xf.magnetizing != 0:
            shunt[index[w[0].bus]] += xf.magnetizing
            notes.append(
                f"{case.file}, line {xf.line}: magnetizing admittance kept as a shunt at bus "
                f"{w[0].bus}; it stays connected if the transformer trips"
            )
        if len(w) == 2:
            if not (w[0].in_service and w[1].in_service):
                continue
            f_.append(index[w[0].bus])
            t_.append(index[w[1].bus])
            z_.append(xf.impedances[0] * w[1].ratio ** 2)
            b_.append(0.0)
            tap_.append(w[0].ratio / w[1].ratio)
            sh_.append(np.deg2rad(w[0].angle_deg - w[1].angle_deg))
            br_names.append(f"xf_{w[0].bus}_{w[1].bus}_{xf.ckt}")
            continue
        z12, z23, z31 = xf.impedances
        star = len(numbers)
        numbers.append(STAR_OFFSET + k)
        names.append(f"star_{w[0].bus}_{w[1].bus}_{w[2].bus}_{xf.ckt}")
        kinds.append(1)
        areas.append(case.buses[index[w[0].bus]].area)
        zones.append(case.buses[index[w[0].bus]].zone)
        v_raw.append(xf.star_vm * np.exp(1j * np.deg2rad(xf.star_va_deg)))
        index[numbers[-1]] = star
        star_z = ((z12 + z31 - z23) / 2, (z12 + z23 - z31) / 2, (z23 + z31 - z12) / 2)
        for m, zm in enumerate(star_z):
            if not w[m].in_service:
                continue
            if abs(zm) < ZERO_IMPEDANCE:
                raise PsseError(
                    case.file,
                    xf.line,
                    "transformer data",
                    f"winding {m + 1} of the three-winding transformer has a star-point impedance "
                    f"|Z{m + 1}| = {abs(zm):.1e} pu below {ZERO_IMPEDANCE} (a zero-impedance "
                    "branch); zero-impedance branches are not supported",
                )
            f_.append(index[w[m].bus])
            t_.append(star)
            z_.append(zm)
            b_.append(0.0)
            tap_.append(w[m].ratio)
            sh_.append(np.deg2rad(w[m].angle_deg))
            br_names.append(f"xf_{w[0].bus}_{w[1].bus}_{w[2].bus}_{xf.ckt}_w{m + 1}")
    n = len(numbers)
    shunt = shunt[:n]
    for s in case.shunts:
        shunt[index[s.bus]] += complex(s.gl, s.bl) / base
    loads = case.loads
    gens = case.generators
    gen_bus = np.array([index[g.bus] for g in gens], dtype=np.int64)
    v_set = np.full(n, np.nan)
    for g in gens:
        k = index[g.bus]
        regulated = g.ireg in (0, g.bus)
        target = g.vs if regulated else abs(v_raw[k])
        if not regulated:
            notes.append(
                f"{case.file}, line {g.line}: generator {g.bus} '{g.id}' regulates remote bus "
                f"{g.ireg}; its own bus is held at the raw's solved {abs(v_raw[k]):.5f} pu"
            )
        if not np.isnan(v_set[k]) and abs(v_set[k] - target) > 1e-9:
            notes.append(f"{case.file}, line {g.line}: bus {g.bus} set points differ; first kept")
            continue
        v_set[k] = target
    swing = next(index[b.number] for b in case.buses if b.kind == 3)
    v_set[swing] = abs(v_raw[swing])
    kind_arr = np.array(kinds, dtype=np.int64)
    has_gen = np.zeros(n, dtype=bool)
    has_gen[gen_bus] = True
    kind_arr[(kind_arr == 2) & ~has_gen] = 1
    v_set[kind_arr == 1] = np.nan
    grid = Grid(
        name=case.file,
        sbase=base,
        f_hz=case.f_hz,
        bus_names=tuple(names),
        bus_kind=kind_arr,
        v_set=v_set,
        voltage=np.array(v_raw),
        shunt=shunt,
        branch_names=unique_names(br_names),
        branch_from=np.array(f_, dtype=np.int64),
        branch_to=np.array(t_, dtype=np.int64),
        branch_r=np.array([z.real for z in z_]),
        branch_x=np.array([z.imag for z in z_]),
        branch_b=np.array(b_),
        branch_tap=np.array(tap_),
        branch_shift=np.array(sh_),
        load_bus=np.array([index[ld.bus] for ld in loads], dtype=np.int64),
        load_s=np.array([complex(ld.pl, ld.ql) for ld in loads], dtype=complex) / base,
        load_i=np.array([complex(ld.ip, ld.iq) for ld in loads], dtype=complex) / base,
        load_y=np.array([complex(ld.yp, -ld.yq) for ld in loads], dtype=complex) / base,
        gen_bus=gen_bus,
        gen_names=unique_names(f"gen{g.bus}_{g.id}" for g in gens),
        gen_mbase=np.array([g.mbase for g in gens], dtype=np.float64),
        gen_s=np.array([complex(g.pg, g.qg) for g in gens], dtype=complex) / base,
        gen_q_limits=np.array([(g.qb, g.qt) for g in gens]).reshape(-1, 2) / base,
        bus_numbers=np.array(numbers, dtype=np.int64),
        info={"file": case.file, "areas": dict(case.areas), "zones": dict(case.zones)},
    )
    return PsseNetwork(
        grid=grid,
        gen_ids=tuple((g.bus, g.id) for g in gens),
        gen_zsource=np.array([complex(g.zr, g.zx) for g in gens]),
        bus_area=np.array(areas, dtype=np.int64),
        notes=notes,
    )
