"""A pandapower network (from ``pandapower.networks``, a MATPOWER file or pandapower JSON) as a
``models.grid.Grid``, read from the MATPOWER-format case that pandapower's own converter builds
(``_pd2ppc`` through ``pandapower.converter.pypower.to_ppc``): branch r, x, b in pu on
``baseMVA``, tap ratio, phase shift, bus shunts, loads, generators with their set points. The
power flow is then the project's (``models.powerflow``), so every importer shares one Newton.

Buses keep the ppc order; a bus is named after its number in the source case
(``net.bus.name`` when it is an integer, as in cases converted from MATPOWER, else its pandapower
index + 1). Branches keep the ppc order (pandapower lines, then transformers); importers that
know the MATPOWER row order reorder them (``models.cases.matpower``). Generators: those in
service, sorted by bus (stable), named ``gen{bus}`` (``_2`` ... for more on one bus). Loads: one
entry per bus carrying PD + jQD (constant power, or its ZIP parts where pandapower gives
voltage-dependent loads). Not supported (``NotImplementedError``): asymmetric branch data,
complex branch data, auxiliary or merged buses (e.g. three-winding transformers).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from importlib.metadata import version

import numpy as np

from models.cases.equilibrium import unique_names
from models.grid import PQ, PV, SWING, Grid
from models.powerflow import solve_power_flow


def _bus_numbers(net, n_ppc_bus: int) -> np.ndarray:
    lookup = np.asarray(net._pd2ppc_lookups["bus"])
    numbers = np.full(n_ppc_bus, -1, dtype=np.int64)
    for pd_index in net.bus.index:
        ppc_index = int(lookup[pd_index])
        if ppc_index < 0 or numbers[ppc_index] >= 0:  # merged or auxiliary bus: keep the first
            continue
        name = net.bus.at[pd_index, "name"]
        is_int = isinstance(name, int | np.integer) or (isinstance(name, str) and name.isdigit())
        numbers[ppc_index] = int(name) if is_int else int(pd_index) + 1
    if np.any(numbers < 0) or len(set(numbers.tolist())) != n_ppc_bus:
        raise NotImplementedError("auxiliary or merged buses (e.g. 3-winding transformers)")
    return numbers


def _ppc(net) -> dict:
    """pandapower's internal MATPOWER-format case of ``net`` (no power flow is run)."""
    from pandapower.converter.pypower.to_ppc import to_ppc

    has_results = net.res_bus.shape[0] and not len(net.bus.index.difference(net.res_bus.index))
    return to_ppc(net, init="results" if has_results else "flat", calculate_voltage_angles=True,
                  mode="pf")  # fmt: skip


def grid_from_pandapower(net, name: str) -> Grid:
    """The unsolved grid of ``net`` (see the module docstring)."""
    from pandapower.pypower import idx_brch as brch
    from pandapower.pypower import idx_bus as bus
    from pandapower.pypower import idx_gen as gen

    ppc = _ppc(net)
    base = float(ppc["baseMVA"])
    b, br, g = (np.asarray(ppc[k]) for k in ("bus", "branch", "gen"))
    if np.iscomplexobj(br) and np.any(br.imag != 0.0):
        raise NotImplementedError("complex branch data (transformer iron losses)")
    br, b, g = br.real, b.real, g.real
    if any(k in ppc for k in ("branch_r_asym", "branch_x_asym", "branch_g_asym", "branch_b_asym")):
        raise NotImplementedError("asymmetric branch data")
    if not np.array_equal(b[:, bus.BUS_I].astype(int), np.arange(len(b))):
        raise NotImplementedError("ppc bus numbers are not consecutive from 0")
    kinds = b[:, bus.BUS_TYPE].astype(np.int64)
    if np.any(~np.isin(kinds, (PQ, PV, SWING))):
        raise NotImplementedError("isolated (out-of-service) buses")
    branch_g = ppc.get("branch_g")  # the converter keeps BR_G apart, only where non-zero
    in_service = g[:, gen.GEN_STATUS] > 0
    g = g[in_service][np.argsort(g[in_service, gen.GEN_BUS], kind="stable")]
    gen_bus = g[:, gen.GEN_BUS].astype(np.int64)
    numbers = _bus_numbers(net, len(b))
    v_set = np.full(len(b), np.nan)
    v_set[gen_bus] = g[:, gen.VG]
    v_set[kinds == PQ] = np.nan
    start = b[:, bus.VM] * np.exp(1j * np.deg2rad(b[:, bus.VA]))
    load_bus = np.flatnonzero((b[:, bus.PD] != 0.0) | (b[:, bus.QD] != 0.0))
    s_load = (b[load_bus, bus.PD] + 1j * b[load_bus, bus.QD]) / base
    cz, ci = _zip_shares(b, bus, load_bus)
    return Grid(
        name=name,
        sbase=base,
        f_hz=float(net.f_hz),
        bus_names=tuple(f"bus{int(n)}" for n in numbers),
        bus_kind=kinds,
        v_set=v_set,
        voltage=start,
        shunt=(b[:, bus.GS] + 1j * b[:, bus.BS]) / base,
        branch_names=unique_names(
            f"br_{numbers[int(f)]}_{numbers[int(t)]}" for f, t in br[:, [brch.F_BUS, brch.T_BUS]]
        ),
        branch_from=br[:, brch.F_BUS].astype(np.int64),
        branch_to=br[:, brch.T_BUS].astype(np.int64),
        branch_r=br[:, brch.BR_R].copy(),
        branch_x=br[:, brch.BR_X].copy(),
        branch_b=br[:, brch.BR_B].copy(),
        branch_tap=np.where(br[:, brch.TAP] == 0.0, 1.0, br[:, brch.TAP]),
        branch_shift=np.deg2rad(br[:, brch.SHIFT]),
        branch_status=(br[:, brch.BR_STATUS] > 0).astype(np.float64),
        branch_g=None if branch_g is None else np.real(np.asarray(branch_g, dtype=complex)),
        load_bus=load_bus,
        load_s=s_load * (1.0 - cz - ci),
        load_i=s_load * ci,
        load_y=s_load * cz,
        gen_bus=gen_bus,
        gen_names=unique_names(f"gen{int(numbers[i])}" for i in gen_bus),
        gen_mbase=np.full(gen_bus.size, base),
        gen_s=(g[:, gen.PG] + 1j * g[:, gen.QG]) / base,
        gen_q_limits=np.column_stack([g[:, gen.QMIN], g[:, gen.QMAX]]) / base,
        bus_numbers=numbers,
    )


def _zip_shares(b: np.ndarray, bus, load_bus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Constant-impedance and constant-current shares of each bus's load (pandapower's
    voltage-dependent loads, ppc columns CZD/CID; zero where absent). pandapower gives one share
    for P and Q of a bus's load only where they agree; otherwise refused."""
    cols = ("CZD_P", "CID_P", "CZD_Q", "CID_Q")
    if not all(hasattr(bus, c) for c in cols) or b.shape[1] <= max(getattr(bus, c) for c in cols):
        return np.zeros(load_bus.size), np.zeros(load_bus.size)
    czp, cip, czq, ciq = (b[load_bus, getattr(bus, c)] for c in cols)
    if not (np.allclose(czp, czq) and np.allclose(cip, ciq)):
        raise NotImplementedError("voltage-dependent loads with different P and Q shares")
    return czp, cip


def solved_pandapower_grid(net, name: str) -> Grid:
    """``grid_from_pandapower`` at its solved operating point."""
    return solve_power_flow(grid_from_pandapower(net, name))


def cached_grid(key: str, build: Callable[[], Grid]) -> Grid:
    """``build()`` once per key, pandapower version and source version, then from the store
    (``models.executables``): a worker or CLI process that builds a network at start neither
    imports pandapower nor solves the power flow again."""
    from models.executables import load_or_compute_arrays

    def arrays() -> dict[str, np.ndarray]:
        grid = build()
        out = {}
        for f in dataclasses.fields(grid):
            value = getattr(grid, f.name)
            if value is None:
                continue
            if f.name == "info":
                value = json.dumps(value)
            out[f.name] = np.asarray(value)
        return out

    stored = load_or_compute_arrays(("grid", key, version("pandapower")), arrays)
    values = {}
    for name, value in stored.items():
        if name == "info":
            values[name] = json.loads(str(value), object_hook=_tuples)
        elif name in ("bus_names", "branch_names", "gen_names"):
            values[name] = tuple(str(v) for v in value)
        elif name == "load_fractions":
            values[name] = tuple(float(v) for v in value)
        else:
            values[name] = value if value.ndim else value.item()
    return Grid(**values)


def _tuples(obj: dict) -> dict:
    """JSON's lists back as the tuples ``info`` holds."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in obj.items()}


def case9_grid() -> Grid:
    """MATPOWER ``case9`` (the WSCC 3-machine 9-bus system, ``pandapower.networks.case9()``),
    solved.

    Note: MATPOWER's case9 holds all three generator voltages at 1.0 pu (Sauer & Pai's Example
    7.1 uses 1.04 / 1.025 / 1.025 pu), so the operating point differs from the book's; the network
    and loads (125 + j50, 90 + j30, 100 + j35 MVA) are the same.
    """

    def build() -> Grid:
        import pandapower.networks as pn

        return solved_pandapower_grid(pn.case9(), "case9")

    return cached_grid("case9", build)
