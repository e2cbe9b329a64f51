"""Steady-state operating point from pandapower, returned in MATPOWER terms (pu on the system base).

``run_power_flow(net)`` solves the AC power flow with pandapower's Newton-Raphson
(``pandapower.runpp(net, numba=False, tolerance_mva=...)``) and reads the result back from the
MATPOWER-format case that pandapower builds internally (``net._ppc``, filled with the results).
That table is exactly what pandapower's solver used (branch r, x, b in pu on ``baseMVA``, tap ratio,
phase shift, bus shunts, loads), so a model built on it reproduces the solved voltages to the power
flow tolerance. Buses keep the ppc order; a bus is named after its number in the source case
(``net.bus.name`` when it is an integer, as in cases converted from MATPOWER, else its pandapower
index + 1). Branches keep the ppc order (pandapower lines, then transformers), which for cases
converted from MATPOWER with lines only (e.g. ``case9``) is the MATPOWER branch order.

Not supported yet (raise ``NotImplementedError``): voltage-dependent (ZIP) loads in the power flow
and asymmetric branch data. A branch shunt conductance (BR_G, which pandapower gives the
transformers of some converted cases, e.g. ``case118``) is returned in ``branch_g``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version

import numpy as np

TOLERANCE_MVA = 1e-10
"""pandapower's convergence tolerance on the nodal power mismatch (MVA): 1e-12 pu on 100 MVA."""


@dataclass(frozen=True)
class PowerFlowCase:
    """A solved case in pu on ``base_mva``; angles in rad; indices are 0-based bus positions."""

    base_mva: float
    f_hz: float
    bus_numbers: np.ndarray
    vm: np.ndarray
    va: np.ndarray
    shunt_g: np.ndarray
    shunt_b: np.ndarray
    load_p: np.ndarray
    load_q: np.ndarray
    gen_bus: np.ndarray
    gen_p: np.ndarray
    gen_q: np.ndarray
    branch_from: np.ndarray
    branch_to: np.ndarray
    branch_r: np.ndarray
    branch_x: np.ndarray
    branch_b: np.ndarray
    branch_tap: np.ndarray
    branch_shift: np.ndarray
    branch_status: np.ndarray
    branch_s_from: np.ndarray
    branch_s_to: np.ndarray
    iterations: int
    branch_g: np.ndarray | None = None
    """Total branch shunt conductance (pu; pandapower's BR_G, e.g. transformer magnetizing
    losses of converted cases), None where every branch has none."""

    @property
    def n_bus(self) -> int:
        return int(self.vm.size)

    @property
    def voltage(self) -> np.ndarray:
        """Complex bus voltages (pu)."""
        return self.vm * np.exp(1j * self.va)

    @property
    def load_buses(self) -> np.ndarray:
        """Positions of the buses that carry load (ascending)."""
        return np.flatnonzero((self.load_p != 0.0) | (self.load_q != 0.0))


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


def run_power_flow(net, tolerance_mva: float = TOLERANCE_MVA) -> PowerFlowCase:
    """Solve ``net`` with pandapower and return its operating point and branch list in pu."""
    import pandapower as pp
    from pandapower.pypower import idx_brch as brch
    from pandapower.pypower import idx_bus as bus
    from pandapower.pypower import idx_gen as gen

    pp.runpp(net, numba=False, tolerance_mva=tolerance_mva, calculate_voltage_angles=True)
    if not net.converged:
        raise RuntimeError("pandapower power flow did not converge")
    ppc = net._ppc
    base = float(ppc["baseMVA"])
    b = np.asarray(ppc["bus"])
    br = np.asarray(ppc["branch"])
    g = np.asarray(ppc["gen"])
    if np.iscomplexobj(br) and np.any(br.imag != 0.0):
        raise NotImplementedError("complex branch data (transformer iron losses)")
    br, b, g = br.real, b.real, g.real
    extra = [brch.BR_R_ASYM, brch.BR_X_ASYM, brch.BR_G_ASYM, brch.BR_B_ASYM]
    if br.shape[1] > max(extra) and np.any(br[:, extra] != 0.0):
        raise NotImplementedError("asymmetric branch data")
    has_g = br.shape[1] > brch.BR_G and np.any(br[:, brch.BR_G] != 0.0)
    zip_cols = [bus.CID_P, bus.CZD_P, bus.CID_Q, bus.CZD_Q]
    if b.shape[1] > max(zip_cols) and np.any(b[:, zip_cols] != 0.0):
        raise NotImplementedError("voltage-dependent (ZIP) loads")
    if not np.array_equal(b[:, bus.BUS_I].astype(int), np.arange(len(b))):
        raise NotImplementedError("ppc bus numbers are not consecutive from 0")
    in_service = g[:, gen.GEN_STATUS] > 0
    order = np.argsort(g[in_service, gen.GEN_BUS], kind="stable")
    g = g[in_service][order]
    return PowerFlowCase(
        base_mva=base,
        f_hz=float(net.f_hz),
        bus_numbers=_bus_numbers(net, len(b)),
        vm=b[:, bus.VM].copy(),
        va=np.deg2rad(b[:, bus.VA]),
        shunt_g=b[:, bus.GS] / base,
        shunt_b=b[:, bus.BS] / base,
        load_p=b[:, bus.PD] / base,
        load_q=b[:, bus.QD] / base,
        gen_bus=g[:, gen.GEN_BUS].astype(np.int64),
        gen_p=g[:, gen.PG] / base,
        gen_q=g[:, gen.QG] / base,
        branch_from=br[:, brch.F_BUS].astype(np.int64),
        branch_to=br[:, brch.T_BUS].astype(np.int64),
        branch_r=br[:, brch.BR_R].copy(),
        branch_x=br[:, brch.BR_X].copy(),
        branch_b=br[:, brch.BR_B].copy(),
        branch_tap=np.where(br[:, brch.TAP] == 0.0, 1.0, br[:, brch.TAP]),
        branch_shift=np.deg2rad(br[:, brch.SHIFT]),
        branch_status=(br[:, brch.BR_STATUS] > 0).astype(np.float64),
        branch_s_from=(br[:, brch.PF] + 1j * br[:, brch.QF]) / base,
        branch_s_to=(br[:, brch.PT] + 1j * br[:, brch.QT]) / base,
        iterations=int(ppc.get("iterations", -1)),
        branch_g=br[:, brch.BR_G].copy() if has_g else None,
    )


def case9_power_flow(tolerance_mva: float = TOLERANCE_MVA) -> PowerFlowCase:
    """MATPOWER ``case9`` (the WSCC 3-machine 9-bus system) via ``pandapower.networks.case9()``.

    Note: MATPOWER's case9 holds all three generator voltages at 1.0 pu (Sauer & Pai's Example 7.1
    uses 1.04 / 1.025 / 1.025 pu), so the operating point differs from the book's; the network and
    loads (125 + j50, 90 + j30, 100 + j35 MVA) are the same.
    """

    def solve() -> PowerFlowCase:
        import pandapower.networks as pn

        return run_power_flow(pn.case9(), tolerance_mva)

    return cached_power_flow(f"case9 tolerance_mva={tolerance_mva!r}", solve)


def cached_power_flow(name: str, solve: Callable[[], PowerFlowCase]) -> PowerFlowCase:
    """``solve()`` once per case, pandapower version and source version, then from the store
    (``models.executables``): a worker or CLI process that builds a network at start no longer
    imports pandapower and re-solves it (3.7 s import + 2.6 s for case9, measured 2026-12-03)."""
    from models.executables import load_or_compute_arrays

    def arrays() -> dict[str, np.ndarray]:
        case = solve()
        fields = dataclasses.asdict(case)
        return {k: np.asarray(v) for k, v in fields.items() if v is not None}

    stored = load_or_compute_arrays(("power_flow", name, version("pandapower")), arrays)
    values = {k: (v if v.ndim else v.item()) for k, v in stored.items()}
    return PowerFlowCase(**values)
