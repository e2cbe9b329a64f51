"""A PSS(R)E raw case as the network of the DAE models, and its AC power flow.

Branch model: the pi model of ``models.network`` (series r + jx, total charging b, off-nominal
ratio ``tap`` and phase ``shift`` at the from end). A two-winding transformer (PSS/E: bus I,
ideal t1/ANG1 : 1, impedance Z, ideal 1 : t2, bus J) becomes one branch with tap t1/t2, shift
ANG1 and impedance Z t2^2 (the impedance referred through the winding-2 ratio). A three-winding
transformer becomes a star bus (PSS/E's star point, started at VMSTAR/ANSTAR) and one branch per
winding with Z1 = (Z12 + Z31 - Z23)/2 (and cyclically), ratio and angle of that winding at the
winding bus. Magnetizing admittance is a shunt at the winding-1 bus (it stays when the
transformer trips: noted on the network where non-zero).

Power flow (the project's Newton, not pandapower: see ``docs/models.md`` "PSS/E cases"):
polar Newton-Raphson on the nodal power balance with PSS/E's load model (constant power, constant
current and constant admittance parts, each at the bus voltage magnitude), swing bus at its
raw voltage, generator buses holding VS (their own bus; a remote IREG is held at the raw's solved
voltage instead, noted), generator reactive limits reported, not enforced (as ANDES does; PSS/E
would switch the bus to PQ). Several machines on one bus keep the raw file's split of its
reactive power (``_share``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from models.cases.equilibrium import unique_names
from models.network import branch_admittances, branch_parameters
from models.psse.raw import RawCase
from models.psse.records import PsseError

PF_TOLERANCE = 1e-12
"""Largest nodal power mismatch (pu on SBASE) at convergence."""
PF_MAX_ITER = 30
ZERO_IMPEDANCE = 1e-4
"""PSS/E's default zero-impedance threshold THRSHZ (pu)."""
ZERO_IMPEDANCE = 1e-4
"""PSS/E's default zero-impedance threshold THRSHZ (pu)."""
STAR_OFFSET = 1_000_000
"""Star buses of three-winding transformers are numbered above every raw bus number."""


@dataclass
class PsseNetwork:
    """Arrays of a raw case (0-based bus positions; pu on ``sbase``; angles in rad)."""

    file: str
    sbase: float
    f_hz: float
    bus_numbers: np.ndarray
    bus_names: tuple[str, ...]
    bus_kind: np.ndarray
    swing: int
    branch_from: np.ndarray
    branch_to: np.ndarray
    branch_r: np.ndarray
    branch_x: np.ndarray
    branch_b: np.ndarray
    branch_tap: np.ndarray
    branch_shift: np.ndarray
    branch_names: tuple[str, ...]
    shunt: np.ndarray
    """Complex shunt admittance per bus (fixed, switched at BINIT, magnetizing), pu."""
    load_bus: np.ndarray
    load_names: tuple[str, ...]
    load_s: np.ndarray
    """Constant-power part P + jQ (pu, consumed)."""
    load_i: np.ndarray
    """Constant-current part at 1 pu voltage, IP + jIQ (pu, consumed)."""
    load_y: np.ndarray
    """Constant-admittance part at 1 pu voltage, YP - jYQ (pu, consumed)."""
    gen_bus: np.ndarray
    gen_names: tuple[str, ...]
    gen_ids: tuple[tuple[int, str], ...]
    """(raw bus number, machine ID) per generator: how ``.dyr`` records name machines."""
    gen_mbase: np.ndarray
    gen_p_spec: np.ndarray
    gen_q_raw: np.ndarray
    """QG of the raw file (pu): PSS/E's own split of a bus's reactive power among its machines."""
    gen_q_limits: np.ndarray
    """(QB, QT) per machine (pu), reported against, not enforced."""
    gen_zsource: np.ndarray
    """ZR + jZX, pu on MBASE (PSS/E's source impedance)."""
    v_set: np.ndarray
    """Voltage magnitude held at each bus where a generator regulates (nan elsewhere)."""
    v_start: np.ndarray
    raw_voltage: np.ndarray
    """The raw file's solved voltages (pu, complex), star buses at VMSTAR/ANSTAR."""
    areas: dict[int, str]
    zones: dict[int, str]
    bus_area: np.ndarray
    bus_zone: np.ndarray
    notes: list[str] = field(default_factory=list)

    @property
    def n_bus(self) -> int:
        return int(self.bus_numbers.size)


@dataclass(frozen=True)
class PsseSolution:
    voltage: np.ndarray
    gen_s: np.ndarray
    """Complex power of each machine (pu on SBASE, generated)."""
    iterations: int
    mismatch: float
    q_violations: tuple[str, ...]


def build_network(case: RawCase) -> PsseNetwork:
    """Arrays of ``case`` (see the module docstring)."""
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
    return PsseNetwork(
        file=case.file,
        sbase=base,
        f_hz=case.f_hz,
        bus_numbers=np.array(numbers, dtype=np.int64),
        bus_names=tuple(names),
        bus_kind=kind_arr,
        swing=swing,
        branch_from=np.array(f_, dtype=np.int64),
        branch_to=np.array(t_, dtype=np.int64),
        branch_r=np.array([z.real for z in z_]),
        branch_x=np.array([z.imag for z in z_]),
        branch_b=np.array(b_),
        branch_tap=np.array(tap_),
        branch_shift=np.array(sh_),
        branch_names=unique_names(br_names),
        shunt=shunt,
        load_bus=np.array([index[ld.bus] for ld in loads], dtype=np.int64),
        load_names=unique_names(f"load{ld.bus}_{ld.id}" for ld in loads),
        load_s=np.array([complex(ld.pl, ld.ql) for ld in loads], dtype=complex) / base,
        load_i=np.array([complex(ld.ip, ld.iq) for ld in loads], dtype=complex) / base,
        load_y=np.array([complex(ld.yp, -ld.yq) for ld in loads], dtype=complex) / base,
        gen_bus=gen_bus,
        gen_names=unique_names(f"gen{g.bus}_{g.id}" for g in gens),
        gen_ids=tuple((g.bus, g.id) for g in gens),
        gen_mbase=np.array([g.mbase for g in gens]),
        gen_p_spec=np.array([g.pg for g in gens]) / base,
        gen_q_raw=np.array([g.qg for g in gens]) / base,
        gen_q_limits=np.array([(g.qb, g.qt) for g in gens]).reshape(-1, 2) / base,
        gen_zsource=np.array([complex(g.zr, g.zx) for g in gens]),
        v_set=v_set,
        v_start=np.where(np.isnan(v_set), np.abs(v_raw), v_set) * np.exp(1j * np.angle(v_raw)),
        raw_voltage=np.array(v_raw),
        areas=dict(case.areas),
        zones=dict(case.zones),
        bus_area=np.array(areas, dtype=np.int64),
        bus_zone=np.array(zones, dtype=np.int64),
        notes=notes,
    )


def admittance_matrix(net: PsseNetwork) -> sp.csr_matrix:
    """Bus admittance matrix (pu) of the branches and shunts (loads not included)."""
    n = net.n_bus
    params = branch_parameters(net.branch_r, net.branch_x, net.branch_b, net.branch_tap,
                               net.branch_shift, np.ones(net.branch_r.size))  # fmt: skip
    yff, yft, ytf, ytt = (np.asarray(y) for y in branch_admittances(params))
    f, t = net.branch_from, net.branch_to
    rows = np.concatenate([f, t, f, t, np.arange(n)])
    cols = np.concatenate([f, t, t, f, np.arange(n)])
    vals = np.concatenate([yff, ytt, yft, ytf, net.shunt])
    return sp.csr_matrix((vals, (rows, cols)), shape=(n, n))


def load_power(net: PsseNetwork, vm: np.ndarray) -> np.ndarray:
    """Complex power consumed by the loads at each bus (pu) at voltage magnitudes ``vm``."""
    per_load = net.load_s + net.load_i * vm[net.load_bus] + net.load_y * vm[net.load_bus] ** 2
    return np.bincount(net.load_bus, per_load.real, net.n_bus) + 1j * np.bincount(
        net.load_bus, per_load.imag, net.n_bus
    )


def solve_power_flow(net: PsseNetwork, tolerance: float = PF_TOLERANCE) -> PsseSolution:
    """Newton-Raphson power flow (see the module docstring); raises ``RuntimeError`` if it
    does not converge."""
    n = net.n_bus
    y = admittance_matrix(net).tocsc()
    p_gen = np.bincount(net.gen_bus, net.gen_p_spec, n)
    pv = np.flatnonzero(net.bus_kind == 2)
    pq = np.flatnonzero(net.bus_kind == 1)
    non_swing = np.setdiff1d(np.arange(n), [net.swing])
    vm = np.where(np.isnan(net.v_set), np.abs(net.v_start), net.v_set)
    va = np.angle(net.v_start)
    ld_i = np.bincount(net.load_bus, net.load_i.real, n) + 1j * np.bincount(
        net.load_bus, net.load_i.imag, n
    )
    ld_y = np.bincount(net.load_bus, net.load_y.real, n) + 1j * np.bincount(
        net.load_bus, net.load_y.imag, n
    )

    def mismatch(vm, va):
        v = vm * np.exp(1j * va)
        s = v * np.conj(y @ v) + load_power(net, vm)
        return v, s

    for it in range(PF_MAX_ITER + 1):
        v, s = mismatch(vm, va)
        res = s - p_gen
        f = np.concatenate([res.real[non_swing], res.imag[pq]])
        worst = float(np.max(np.abs(f))) if f.size else 0.0
        if worst <= tolerance:
            break
        if it == PF_MAX_ITER:
            raise RuntimeError(f"{net.file}: the power flow did not converge (|dS| = {worst:.2e})")
        i_bus = y @ v
        dv = sp.diags(v)
        d_va = 1j * dv @ np.conj(sp.diags(i_bus) - y @ dv)
        vn = v / np.abs(v)
        d_vm = dv @ np.conj(y @ sp.diags(vn)) + np.conj(sp.diags(i_bus)) @ sp.diags(vn)
        d_vm = d_vm + sp.diags(ld_i + 2.0 * ld_y * vm)
        jac = sp.vstack(
            [
                sp.hstack([d_va.real[non_swing][:, non_swing], d_vm.real[non_swing][:, pq]]),
                sp.hstack([d_va.imag[pq][:, non_swing], d_vm.imag[pq][:, pq]]),
            ]
        ).tocsc()
        step = spla.spsolve(jac, -f)
        va[non_swing] += step[: non_swing.size]
        vm[pq] += step[non_swing.size :]
    v, s = mismatch(vm, va)
    s_bus = s  # what the machines of each bus must generate
    gen_s = _share(net, s_bus, pv)
    return PsseSolution(v, gen_s, it, worst, _q_violations(net, gen_s))


def _share(net: PsseNetwork, s_bus: np.ndarray, pv: np.ndarray) -> np.ndarray:
    """Each machine's P + jQ. P: PG as specified; the swing bus's machines share the rest by
    MBASE. Q: the raw file's QG (PSS/E's split among the machines of a bus) plus a share by MBASE
    of what the solved bus needs beyond their sum (1e-5 pu on the cases checked: the raw files'
    rounding)."""
    del pv
    out = np.zeros(net.gen_bus.size, dtype=complex)
    for k in np.unique(net.gen_bus):
        members = np.flatnonzero(net.gen_bus == k)
        share = net.gen_mbase[members] / net.gen_mbase[members].sum()
        p = net.gen_p_spec[members].copy()
        if k == net.swing:
            p = p + (s_bus[k].real - p.sum()) * share
        q = net.gen_q_raw[members] + (s_bus[k].imag - net.gen_q_raw[members].sum()) * share
        out[members] = p + 1j * q
    return out


def _q_violations(net: PsseNetwork, gen_s: np.ndarray) -> tuple[str, ...]:
    """A note per machine whose solved Q lies outside [QB, QT] by more than 1e-6 pu (PSS/E would
    have switched its bus to PQ; here the voltage set point is kept, as ANDES does)."""
    low, high = net.gen_q_limits[:, 0], net.gen_q_limits[:, 1]
    q = gen_s.imag
    return tuple(
        f"{net.file}: generator {name} solves at Q = {q[k] * net.sbase:.3f} Mvar, outside "
        f"[QB, QT] = [{low[k] * net.sbase:g}, {high[k] * net.sbase:g}] Mvar (not enforced)"
        for k, name in enumerate(net.gen_names)
        if q[k] < low[k] - 1e-6 or q[k] > high[k] + 1e-6
    )
