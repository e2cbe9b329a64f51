"""The one record of a network: buses, branches with status, shunts, loads and generators.

Every importer fills it (MATPOWER and pandapower: ``models.cases.pandapower_grid``; PSS/E:
``models.psse.network``; hand-written dq test networks: ``models.dq.powerflow``), the one power
flow solves it (``models.powerflow.solve_power_flow``), and both formulations are built from the
solved record: the RMS phasor DAE (``models.assembly``) and the dq/EMT block network
(``models.dq.network``). All quantities are per unit on ``sbase`` (MVA) and 0-based bus
positions; angles in rad.

Branches use the pi model of ``models.network`` (MATPOWER's: series r + jx, total charging b,
off-nominal ratio ``tap`` and phase ``shift`` at the from end, optional shunt conductance ``g``).
Loads are ZIP entries, each part given as the power P + jQ it consumes at 1 pu: constant power
``load_s`` (the same at any voltage), constant current ``load_i`` (scaling with |V|) and constant
admittance ``load_y`` (scaling with |V|^2; its admittance is G + jB = P - jQ).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp

from models.network import branch_admittances, branch_parameters

PQ, PV, SWING = 1, 2, 3
"""Bus kinds, with the codes of PSS/E's IDE and MATPOWER's BUS_TYPE: a load bus (P and Q
given), a generator bus holding ``v_set`` (P given), the swing bus (|V| and angle held)."""


@dataclass(frozen=True)
class Grid:
    """A network and its operating point (see the module docstring).

    Before the power flow ``voltage`` is the start (the source's stored voltages, or flat) and
    ``gen_s`` the specification: each machine's P, and the split of a bus's reactive power among
    its machines; after it (``solved``) both are the solution.
    """

    name: str
    sbase: float
    f_hz: float
    bus_names: tuple[str, ...]
    bus_kind: np.ndarray
    """``PQ``, ``PV`` or ``SWING`` per bus (exactly one swing bus)."""
    v_set: np.ndarray
    """Voltage magnitude held at each PV and swing bus (nan elsewhere)."""
    voltage: np.ndarray
    """Complex bus voltages: the start, or the solution once ``solved``."""
    shunt: np.ndarray
    """Complex shunt admittance per bus (G + jB, positive B capacitive)."""
    branch_names: tuple[str, ...]
    branch_from: np.ndarray
    branch_to: np.ndarray
    branch_r: np.ndarray
    branch_x: np.ndarray
    branch_b: np.ndarray
    branch_tap: np.ndarray
    branch_shift: np.ndarray
    load_bus: np.ndarray
    load_s: np.ndarray
    """Constant-power part of each load entry, P + jQ consumed."""
    load_i: np.ndarray
    """Constant-current part at 1 pu, P + jQ consumed (scales with |V|)."""
    load_y: np.ndarray
    """Constant-admittance part at 1 pu, P + jQ consumed (scales with |V|^2)."""
    gen_bus: np.ndarray
    gen_names: tuple[str, ...]
    gen_mbase: np.ndarray
    """Machine base of each generator (MVA): the base of its dynamic data, and its share of a
    bus's unspecified power in the power flow."""
    gen_s: np.ndarray
    """Generated P + jQ of each machine: the specification, or the solution once ``solved``."""
    branch_status: np.ndarray | None = None
    """1 in service, 0 out (default: all in service)."""
    branch_g: np.ndarray | None = None
    """Total branch shunt conductance (``models.network.BRANCH_G``), None where none has one."""
    bus_numbers: np.ndarray | None = None
    """The source's bus numbers (MATPOWER BUS_I, PSS/E I), where it numbers its buses."""
    gen_q_limits: np.ndarray | None = None
    """(Qmin, Qmax) per machine (pu), reported against by the power flow, not enforced."""
    load_fractions: tuple[float, float, float] | None = None
    """(cz, ci, cp): how the dynamics split the constant-power load left after the bus devices
    (``models.components.loads.zip_parameters``); None keeps the parts as they are."""
    solved: bool = False
    info: Mapping = field(default_factory=dict)

    @property
    def n_bus(self) -> int:
        return len(self.bus_names)

    @property
    def n_branch(self) -> int:
        return int(self.branch_from.size)

    @property
    def numbers(self) -> np.ndarray:
        """``bus_numbers``, for importers whose sources number their buses."""
        if self.bus_numbers is None:
            raise ValueError(f"{self.name}: the source gives no bus numbers")
        return self.bus_numbers

    @property
    def swing(self) -> int:
        """Position of the swing bus."""
        return int(np.flatnonzero(self.bus_kind == SWING)[0])

    @property
    def status(self) -> np.ndarray:
        """Branch status (1 in service, 0 out)."""
        if self.branch_status is None:
            return np.ones(self.n_branch)
        return np.asarray(self.branch_status, dtype=np.float64)

    def branch_parameters(self) -> dict[str, np.ndarray]:
        """The branch arrays as ``models.network`` parameters (``branch_g`` where given)."""
        params = branch_parameters(self.branch_r, self.branch_x, self.branch_b, self.branch_tap,
                                   self.branch_shift, self.status)  # fmt: skip
        if self.branch_g is not None:
            params["branch_g"] = np.asarray(self.branch_g, dtype=np.float64)
        return params

    def with_solution(self, voltage: np.ndarray, gen_s: np.ndarray, **info) -> Grid:
        """This grid at a solved operating point, ``info`` added."""
        return replace(self, voltage=voltage, gen_s=gen_s, solved=True,
                       info={**self.info, **info})  # fmt: skip


def admittance_matrix(grid: Grid) -> sp.csr_matrix:
    """Bus admittance matrix (pu) of the in-service branches and the bus shunts (no loads); the
    same branch admittances as the DAE's KCL (``models.network.branch_admittances``)."""
    n = grid.n_bus
    yff, yft, ytf, ytt = (np.asarray(y) for y in branch_admittances(grid.branch_parameters()))
    f, t = grid.branch_from, grid.branch_to
    rows = np.concatenate([f, t, f, t, np.arange(n)])
    cols = np.concatenate([f, t, t, f, np.arange(n)])
    vals = np.concatenate([yff, ytt, yft, ytf, np.asarray(grid.shunt, dtype=complex)])
    return sp.csr_matrix((vals, (rows, cols)), shape=(n, n))


def per_bus(grid: Grid, index: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Complex ``values`` summed onto the buses ``index`` (length ``n_bus``)."""
    values = np.asarray(values, dtype=complex)
    return np.bincount(index, values.real, grid.n_bus) + 1j * np.bincount(
        index, values.imag, grid.n_bus
    )


def load_power(grid: Grid, vm: np.ndarray) -> np.ndarray:
    """Complex power consumed by the loads of each bus (pu) at voltage magnitudes ``vm``."""
    v = vm[grid.load_bus]
    per_load = grid.load_s + grid.load_i * v + grid.load_y * v**2
    return per_bus(grid, grid.load_bus, per_load)
