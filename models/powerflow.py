"""The AC power flow of a ``models.grid.Grid``: one Newton-Raphson for every importer.

Polar Newton-Raphson on the nodal power balance S_k = V_k conj((Y V)_k) + S_load,k(|V_k|) -
S_gen,k = 0 (the bus admittance matrix of ``models.grid.admittance_matrix``, so the same branch
model as the DAE's KCL; the loads' constant-power, constant-current and constant-admittance parts
at each bus voltage magnitude; W. F. Tinney and C. E. Hart, "Power flow solution by Newton's
method", IEEE Trans. PAS-86 (1967), with the complex-matrix form of the Jacobian of MATPOWER's
``dSbus_dV``). The swing bus holds its magnitude and start angle, PV buses their ``v_set`` and
specified P, PQ buses their specified P and Q (a PV bus without a generator is a PQ bus).
Generator reactive limits are reported, not enforced (as pandapower's ``runpp`` and ANDES do by
default; PSS/E would switch the bus to PQ). Sparse LU per iteration (SciPy's SuperLU).

Machines of one bus: each keeps its specified P (the swing bus's machines share the bus's
remainder by MBASE) and its specified Q plus a share by MBASE of what the solved bus needs beyond
their sum (so PSS/E's split of a bus's QG among its machines is kept).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from models.grid import PQ, PV, SWING, Grid, admittance_matrix, load_power, per_bus

TOLERANCE = 1e-12
"""Largest nodal power mismatch (pu on the system base) at convergence (1e-10 MVA on 100 MVA)."""
MAX_ITERATIONS = 30
ROUND_OFF = 1e-9
"""A mismatch below this that a Newton step no longer halves is the round-off floor of a large
network's sums (|Y| V terms of 1e3-1e4 pu), accepted as converged (PEGASE 1354: 4e-12 pu)."""
Q_LIMIT_SLACK = 1e-6
"""Reactive power (pu) beyond a machine's limits before the power flow notes it."""


class PowerFlowError(RuntimeError):
    """The power flow did not converge (the message names the grid and the mismatch)."""


def _unknowns(grid: Grid) -> tuple[np.ndarray, np.ndarray]:
    """The buses whose angle (every non-swing bus) and magnitude (PQ buses, and PV buses
    without a generator) Newton iterates."""
    kinds = np.asarray(grid.bus_kind)
    if np.count_nonzero(kinds == SWING) != 1:
        raise ValueError(f"{grid.name}: the power flow needs exactly one swing bus")
    has_gen = np.zeros(grid.n_bus, dtype=bool)
    has_gen[grid.gen_bus] = True
    pq = (kinds == PQ) | ((kinds == PV) & ~has_gen)
    return np.flatnonzero(kinds != SWING), np.flatnonzero(pq)


def solve_power_flow(grid: Grid, tolerance: float = TOLERANCE) -> Grid:
    """``grid`` at its solved operating point (``Grid.with_solution``: voltages, each machine's
    P + jQ, and ``info`` keys ``power_flow_iterations``, ``power_flow_mismatch`` and
    ``q_violations``); raises ``PowerFlowError`` if Newton does not converge."""
    y = admittance_matrix(grid).tocsc()
    ang, mag = _unknowns(grid)
    s_gen = per_bus(grid, grid.gen_bus, grid.gen_s)
    s_gen[grid.swing] = 0.0
    s_gen[grid.bus_kind == PV] = s_gen[grid.bus_kind == PV].real
    held = ~np.isnan(grid.v_set)
    vm = np.where(held, grid.v_set, np.abs(grid.voltage)).astype(np.float64)
    vm[mag] = np.abs(grid.voltage[mag])
    va = np.angle(grid.voltage).astype(np.float64)
    d_load = per_bus(grid, grid.load_bus, grid.load_i), per_bus(grid, grid.load_bus, grid.load_y)
    worst = np.inf
    for iteration in range(MAX_ITERATIONS + 1):
        v = vm * np.exp(1j * va)
        i_bus = y @ v
        res = v * np.conj(i_bus) + load_power(grid, vm) - s_gen
        f = np.concatenate([res.real[ang], res.imag[mag]])
        previous, worst = worst, float(np.max(np.abs(f))) if f.size else 0.0
        if worst <= tolerance or (worst < ROUND_OFF and worst > 0.5 * previous):
            break
        if iteration == MAX_ITERATIONS:
            raise PowerFlowError(
                f"{grid.name}: the power flow did not converge in {MAX_ITERATIONS} iterations "
                f"(|dS| = {worst:.2e} pu)"
            )
        dv = sp.diags(v)
        d_va = 1j * dv @ np.conj(sp.diags(i_bus) - y @ dv)
        vn = v / np.abs(v)
        d_vm = dv @ np.conj(y @ sp.diags(vn)) + np.conj(sp.diags(i_bus)) @ sp.diags(vn)
        d_vm = d_vm + sp.diags(d_load[0] + 2.0 * d_load[1] * vm)
        jac = sp.vstack(
            [
                sp.hstack([d_va.real[ang][:, ang], d_vm.real[ang][:, mag]]),
                sp.hstack([d_va.imag[mag][:, ang], d_vm.imag[mag][:, mag]]),
            ]
        ).tocsc()
        step = spla.spsolve(jac, -f)
        va[ang] += step[: ang.size]
        vm[mag] += step[ang.size :]
    v = vm * np.exp(1j * va)
    s_bus = v * np.conj(y @ v) + load_power(grid, vm)  # what the machines of each bus generate
    gen_s = _share(grid, s_bus)
    return grid.with_solution(
        v, gen_s, power_flow_iterations=iteration, power_flow_mismatch=worst,
        q_violations=q_violations(grid, gen_s),
    )  # fmt: skip


def _share(grid: Grid, s_bus: np.ndarray) -> np.ndarray:
    """Each machine's P + jQ from its bus's solved generation (see the module docstring)."""
    out = np.zeros(grid.gen_bus.size, dtype=complex)
    spec = np.asarray(grid.gen_s, dtype=complex)
    for k in np.unique(grid.gen_bus):
        members = np.flatnonzero(grid.gen_bus == k)
        mbase = np.asarray(grid.gen_mbase, dtype=float)[members]
        share = mbase / mbase.sum()
        p = spec[members].real.copy()
        if k == grid.swing:
            p = p + (s_bus[k].real - p.sum()) * share
        q = spec[members].imag + (s_bus[k].imag - spec[members].imag.sum()) * share
        out[members] = p + 1j * q
    return out


def q_violations(grid: Grid, gen_s: np.ndarray) -> tuple[str, ...]:
    """A note per machine whose Q lies outside ``gen_q_limits`` by more than ``Q_LIMIT_SLACK``
    (the voltage set point is kept, not switched to PQ)."""
    if grid.gen_q_limits is None:
        return ()
    low, high = grid.gen_q_limits[:, 0], grid.gen_q_limits[:, 1]
    q = np.asarray(gen_s).imag
    where = grid.info.get("file", grid.name)
    return tuple(
        f"{where}: generator {name} solves at Q = {q[k] * grid.sbase:.3f} Mvar, outside "
        f"[QB, QT] = [{low[k] * grid.sbase:g}, {high[k] * grid.sbase:g}] Mvar (not enforced)"
        for k, name in enumerate(grid.gen_names)
        if q[k] < low[k] - Q_LIMIT_SLACK or q[k] > high[k] + Q_LIMIT_SLACK
    )
