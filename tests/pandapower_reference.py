"""pandapower's own power-flow solution of a network, the independent oracle that the project's
power flow (``models.powerflow``) and branch model are checked against."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PandapowerSolution:
    """pandapower's solved ppc in pu on its base (bus and branch order of its ppc)."""

    voltage: np.ndarray
    gen_p: np.ndarray
    """P of the in-service generators, sorted by bus (the project's generator order)."""
    branch_from: np.ndarray
    branch_to: np.ndarray
    branch_s_from: np.ndarray
    branch_s_to: np.ndarray


def pandapower_solution(net) -> PandapowerSolution:
    """Run pandapower's Newton power flow on ``net`` (tolerance 1e-10 MVA) and read its ppc."""
    import pandapower as pp
    from pandapower.pypower import idx_brch as brch
    from pandapower.pypower import idx_bus as bus
    from pandapower.pypower import idx_gen as gen

    pp.runpp(net, numba=False, tolerance_mva=1e-10, calculate_voltage_angles=True)
    assert net.converged
    ppc = net._ppc
    base = float(ppc["baseMVA"])
    b, br, g = (np.real(np.asarray(ppc[k])) for k in ("bus", "branch", "gen"))
    g = g[g[:, gen.GEN_STATUS] > 0]
    g = g[np.argsort(g[:, gen.GEN_BUS], kind="stable")]
    return PandapowerSolution(
        voltage=b[:, bus.VM] * np.exp(1j * np.deg2rad(b[:, bus.VA])),
        gen_p=g[:, gen.PG] / base,
        branch_from=br[:, brch.F_BUS].astype(np.int64),
        branch_to=br[:, brch.T_BUS].astype(np.int64),
        branch_s_from=(br[:, brch.PF] + 1j * br[:, brch.QF]) / base,
        branch_s_to=(br[:, brch.PT] + 1j * br[:, brch.QT]) / base,
    )
