"""The dq-frame network presets: SMIB, a 9-bus network with a synchronous machine, a grid-forming
and a grid-following inverter, an islanded microgrid, the EMT grid-following inverter test and the
IEEE 39- and 118-bus systems in full-order dq form.

Parameter sources (pu on each device's rating unless stated):

* ``SM_DATA``: the generic synchronous machine used for every machine: Kundur 1994, Example 3.1
  fundamental parameters (555 MVA, 24 kV; model 2.2 with the d damper and both q dampers) and
  H = 3.5 s, written from memory of the book (verify against it); a static AVR (Ka = 20,
  Ta = 0.05 s, moderate gain so that no power-system stabilizer is needed) and a droop governor
  (R = 5 %, Tg = 0.5 s) are typical values, not data of any particular unit.
* ``GFM_DATA``: LC filter and coupling reactance typical of the low-inertia literature (r_f 0.03,
  l_f 0.08, c_f 0.074, r_c 0.01, l_c 0.2 pu); droop gains m_p 2 %, n_q 0.1 %; the PI loops are
  tuned by bandwidth (current loop ~2400 rad/s: Kpc = 0.5, Kic = Kpc r_f / l_f omega_b; voltage
  loop Kpv = 0.2, Kiv = 20 /s; power filter 31.4 rad/s). Illustrative, documented choices.
* ``GFL_DATA``: LCL filter as the GFM's, SRF-PLL with a 20 Hz natural frequency (Kp = 177 rad/s
  per pu, Ki = 15,791), power PI (Kp 0.3, Ki 20 /s) behind a 31.4 rad/s filter, current PI at
  ~2400 rad/s. Illustrative, documented choices.
* Network data: IEEE 39 and 118 from MATPOWER ``case39`` / ``case118`` (pandapower), WSCC 9 from
  ``case9``; SMIB (Kundur's example operating point 0.9 pu on the machine rating), the microgrid
  and the inverter test network are hand-written here.
"""

from __future__ import annotations

import numpy as np

from models.dae import DAESystem
from models.disturbances import DisturbanceSequence, InputStep
from models.dq.components import OMEGA_B
from models.dq.network import DeviceSpec, build_dq_network
from models.dq.powerflow import Branch, Injection, solve_small_power_flow

SM_DATA = {
    "Lad": 1.66, "Laq": 1.61, "Ll": 0.15, "Ra": 0.003, "Lfd": 0.165, "Rfd": 0.0006,
    "L1d": 0.1713, "R1d": 0.0284, "L1q": 0.7252, "R1q": 0.00619, "L2q": 0.125, "R2q": 0.02368,
    "H": 3.5, "D": 0.0, "Ka": 20.0, "Ta": 0.05, "Rdroop": 0.05, "Tg": 0.5,
}  # fmt: skip
_GFM_KPC = 0.5
GFM_DATA = {
    "Rf": 0.03, "Lf": 0.08, "Cf": 0.074, "Rc": 0.01, "Lc": 0.2,
    "Kpv": 0.2, "Kiv": 20.0, "Kpc": _GFM_KPC, "Kic": _GFM_KPC * 0.03 / 0.08 * OMEGA_B,
    "F": 1.0, "mp": 0.02, "nq": 0.001, "wc": 31.4,
}  # fmt: skip
GFL_DATA = {
    "Rf": 0.03, "Lf": 0.08, "Cf": 0.074, "Rg": 0.01, "Lg": 0.2,
    "Kp_pll": 177.0, "Ki_pll": 15791.0, "Kp_pq": 0.3, "Ki_pq": 20.0,
    "Kpc": _GFM_KPC, "Kic": _GFM_KPC * 0.03 / 0.08 * OMEGA_B, "wc": 31.4,
}  # fmt: skip


def _sm(name: str, rating: float, reference: bool = False) -> DeviceSpec:
    return DeviceSpec(name, "sm", {**SM_DATA, "S": rating, "delta_ref": 0.0}, reference)


def _gfm(name: str, rating: float) -> DeviceSpec:
    return DeviceSpec(name, "gfm", {**GFM_DATA, "S": rating})


def _gfl(name: str, rating: float) -> DeviceSpec:
    return DeviceSpec(name, "gfl", {**GFL_DATA, "S": rating})


def _ib(name: str, r: float, x: float) -> DeviceSpec:
    return DeviceSpec(name, "infinite_bus", {"r": r, "x": x, "angle": 0.0, "on": 1.0})


def build_smib(ports: str = "explicit") -> DAESystem:
    """A 100 MVA machine delivering 0.9 + j(PV) pu at 1.0 pu through a step-up transformer and a
    double line (r 0.01, x 0.5, b 0.04 pu) to an infinite bus (0.001 + j0.05 pu behind it)."""
    data = solve_small_power_flow(
        ["b1", "b2"],
        [Branch("b1", "b2", 0.01, 0.5, 0.04)],
        [Injection("b1", "pv", p=0.9, v=1.0), Injection("b2", "slack", v=1.0)],
        {},
        base_mva=100.0,
    )
    return build_dq_network(
        "dq_smib", data, [_sm("G1", 1.0), _ib("grid", 0.001, 0.05)], ports=ports,
        description="single machine, infinite bus (dq frame): full-order synchronous machine "
        "with AVR and governor, dynamic R-L line and node capacitances",
    )  # fmt: skip


def build_nine_bus(ports: str = "explicit") -> DAESystem:
    """WSCC 9-bus network (MATPOWER case9 power flow) with a synchronous machine at bus 1 (the
    frequency reference), a grid-forming inverter at bus 2 and a grid-following one at bus 3."""
    from models.cases.pandapower_grid import case9_grid

    data = case9_grid()
    devices = [_sm("G1", 2.475, reference=True), _gfm("GFM2", 2.0), _gfl("GFL3", 1.2)]
    return build_dq_network(
        "dq_ninebus", data, devices, ports=ports,
        description="WSCC 9-bus network in the dq frame: a full-order synchronous machine "
        "(bus 1, reference), a droop grid-forming inverter (bus 2), a grid-following inverter "
        "(bus 3), dynamic R-L lines, R-L loads, node capacitances",
    )  # fmt: skip


MICROGRID_BRANCHES = (
    Branch("b1", "b5", 0.02, 0.04, 0.004),
    Branch("b2", "b5", 0.03, 0.05, 0.004),
    Branch("b5", "b6", 0.04, 0.06, 0.006),
    Branch("b3", "b6", 0.03, 0.05, 0.004),
    Branch("b4", "b6", 0.03, 0.04, 0.004),
    Branch("b2", "b3", 0.05, 0.08, 0.006),
)
"""MV cable sections (pu on 10 MVA): resistive, as distribution feeders are."""


def build_microgrid(ports: str = "explicit") -> DAESystem:
    """An islanded 6-bus, 10 MVA microgrid: a synchronous machine (frequency reference), two
    droop grid-forming inverters and a grid-following inverter feeding two load buses; the
    set-points are dispatched by a power flow at nominal frequency."""
    loads = {"b5": complex(0.55, 0.18), "b6": complex(0.5, 0.15), "b3": complex(0.1, 0.03)}
    data = solve_small_power_flow(
        ["b1", "b2", "b3", "b4", "b5", "b6"],
        list(MICROGRID_BRANCHES),
        [
            Injection("b1", "slack", v=1.0),
            Injection("b2", "pv", p=0.3, v=1.0),
            Injection("b3", "pv", p=0.25, v=1.0),
            Injection("b4", "pq", p=0.2, q=0.0),
        ],
        loads,
        base_mva=10.0,
    )
    devices = [_sm("G1", 0.8, reference=True), _gfm("GFM2", 0.5), _gfm("GFM3", 0.5)]
    devices.append(_gfl("GFL4", 0.3))
    return build_dq_network(
        "dq_microgrid", data, devices, ports=ports,
        description="islanded microgrid in the dq frame: one synchronous machine (reference), "
        "two droop grid-forming inverters, one grid-following inverter, six buses",
    )  # fmt: skip


def build_emt_gfl(ports: str = "explicit") -> DAESystem:
    """The EMT grid-following inverter test: a 10 MVA inverter (LCL filter, PLL, current and
    power loops) at a PCC with a local load, a line to a stiff grid (infinite bus behind
    0.005 + j0.05 pu)."""
    data = solve_small_power_flow(
        ["pcc", "grid_bus"],
        [Branch("pcc", "grid_bus", 0.02, 0.1, 0.02)],
        [Injection("pcc", "pq", p=0.8, q=0.0), Injection("grid_bus", "slack", v=1.0)],
        {"pcc": complex(0.3, 0.1)},
        base_mva=10.0,
    )
    return build_dq_network(
        "emt_gfl", data, [_gfl("inv", 1.0), _ib("grid", 0.005, 0.05)], ports=ports,
        description="EMT grid-following inverter (dq frame, averaged converter): LCL filter, "
        "SRF-PLL, P/Q and current PI loops, a local R-L load and a dynamic line to a grid source",
    )  # fmt: skip


GFL_STEP_TIME = 0.5
"""Active-power reference step of the EMT inverter test (s)."""
GFL_DIP_TIME = 1.2
"""Grid-voltage dip of the EMT inverter test (s)."""
GFL_EVENTS = tuple((round(0.5 + 0.05 * k, 2), round(0.95 - 0.01 * k, 2)) for k in range(10))
"""(P_ref scale, grid-voltage scale) of the ten preset two-step events."""


def emt_gfl_events() -> dict[str, DisturbanceSequence]:
    """The EMT inverter test's ten two-disturbance events over 2 s, by name: the inverter's
    active-power reference scaled at ``GFL_STEP_TIME``, then the grid source voltage scaled
    at ``GFL_DIP_TIME`` (``GFL_EVENTS``)."""
    return {
        f"pref{round(100 * a):03d}_dip{round(100 * b):03d}": DisturbanceSequence(
            steps=[
                InputStep(input="inv.P_ref", t=GFL_STEP_TIME, scale=a),
                InputStep(input="grid.E", t=GFL_DIP_TIME, scale=b),
            ]
        )
        for a, b in GFL_EVENTS
    }


def _machine_ratings(s: np.ndarray, base_mva: float) -> np.ndarray:
    """Machine rating per generator (pu of the system base): |S| / 0.8, at least 50 MVA."""
    return np.maximum(np.abs(s) / 0.8, 50.0 / base_mva)


def build_ieee_dq(case: str, ports: str = "explicit") -> DAESystem:
    """IEEE ``case39`` or ``case118`` in full-order dq form: every generator the generic machine
    ``SM_DATA`` (rated |S| / 0.8, at least 50 MVA), the largest one the frequency reference."""
    from models.cases.matpower_io import pandapower_case
    from models.cases.pandapower_grid import solved_pandapower_grid

    data = solved_pandapower_grid(pandapower_case(case).net, case)
    ratings = _machine_ratings(data.gen_s, data.sbase)
    ref = int(np.argmax(ratings))
    names = list(data.gen_names)
    if len(set(data.gen_bus.tolist())) != len(names):
        raise NotImplementedError(f"{case}: several generators at one bus")
    devices = [
        _sm(n, float(r), k == ref) for k, (n, r) in enumerate(zip(names, ratings, strict=True))
    ]
    n = {"case39": 39, "case118": 118}[case]
    return build_dq_network(
        f"dq_ieee{n}", data, devices, ports=ports,
        description=f"IEEE {n}-bus system (MATPOWER {case}) in full-order dq form: generic "
        "full-order synchronous machines with AVR and governor, dynamic R-L lines, R-L loads, "
        "node capacitances",
    )  # fmt: skip
