"""A branch trip that leaves a bus with nothing connected (NPCC's radial line 60-140, whose far
end carries no load, machine or shunt) de-energizes that bus instead of leaving the network
matrix singular (before: both RAPTOR and Radau failed the run as an internal error, found by
the NPCC N-1 campaign); a machine left alone on its bus keeps its bus."""

from __future__ import annotations

import numpy as np

from models.disturbances import BranchTrip, isolated_buses
from models.library import build_system
from models.psse.case import build_psse_case
from models.scenarios import make_scenario
from solvers import solve
from tests.psse_crosscheck import DATA


def test_a_dead_end_bus_is_de_energized_and_the_run_succeeds() -> None:
    raw, dyr = (DATA / "npcc.raw").read_text(), (DATA / "npcc_full.dyr").read_text()
    system = build_psse_case(raw, dyr, "npcc", raw_file="npcc.raw", dyr_file="npcc_full.dyr")
    trip = BranchTrip(branch="line_60_140_1", t=0.1)
    (event,) = trip.events(system)
    k = system.names["bus"].index("bus140")
    assert [(c.name, c.value, c.index) for c in event.changes][1:] == [("bus_isolated", 1.0, k)]
    assert "bus140 de-energized" in event.label
    result = solve(system, make_scenario(system, trip, t_end=0.3, n_eval=31), "radau", rtol=1e-5)
    assert result.succeeded, result.message
    v = result.output("V[bus140]")
    assert v[0] > 0.9 and np.all(np.abs(v[result.t_eval > 0.1]) < 1e-9)
    assert abs(result.output("V[bus60]")[-1] - v[0]) < 0.1  # the rest of the network carries on
    # a meshed line's trip isolates nothing
    assert isolated_buses(system, system.names["branch"].index("line_60_140_1")) == [k]
    mesh = BranchTrip(branch=system.names["branch"][0]).events(system)[0]
    assert [c.name for c in mesh.changes] == ["branch_status"]


def test_a_machine_alone_on_its_bus_keeps_it() -> None:
    system = build_system("wscc9")  # br_1_4 is the step-up transformer of the machine at bus 1
    (event,) = BranchTrip(branch="br_1_4").events(system)
    assert [c.name for c in event.changes] == ["branch_status"]
