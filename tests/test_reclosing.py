"""Reclosing: a branch trip that closes again (and a failed reclose that trips again), as data,
as events, in a run and from the campaign generators."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError
from raptorgrid.campaign_gen import BranchTrips, LineFaults

from models.disturbances import BranchTrip, LineFault
from models.library import build_system
from models.scenarios import make_scenario
from solvers import solve
from tests.psse_crosscheck import system as psse_system


@pytest.fixture(scope="module")
def wscc9():
    return build_system("wscc9")


def _status(event, name: str):
    return [(c.index, c.value) for c in event.changes if c.name == name]


def test_a_trip_recloses_and_a_failed_reclose_trips_again(wscc9):
    k = wscc9.index_of("branch", "br_4_5")
    events = BranchTrip(branch="br_4_5", t=0.1, reclose=0.4, retrip=0.5).events(wscc9)
    assert [e.time for e in events] == [0.1, 0.4, 0.5]
    assert [_status(e, "branch_status") for e in events] == [[(k, 0.0)], [(k, 1.0)], [(k, 0.0)]]
    assert "reclosed" in events[1].label and "again" in events[2].label
    assert len(BranchTrip(branch="br_4_5", t=0.1).events(wscc9)) == 1


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"t": 0.3, "reclose": 0.2}, "reclose = 0.2 s must be later than the trip"),
        ({"t": 0.1, "reclose": 0.3, "retrip": 0.3}, "retrip = 0.3 s must be later than reclose"),
        ({"t": 0.1, "retrip": 0.5}, "retrip needs a reclose time"),
    ],
)
def test_reclosing_times_are_checked(fields, words):
    with pytest.raises(ValidationError, match=words):
        BranchTrip(branch="br_4_5", **fields)


def test_a_reclose_restores_a_de_energized_bus_and_its_load():
    """WECC's line 106-109 is bus 109's only branch and bus 109 carries a load: the trip
    de-energizes it, the reclose gives its voltage and its load back, and the run ends where it
    started."""
    system = psse_system("wecc_full")
    trip = BranchTrip(branch="line_106_109_1", t=0.1, reclose=0.2)
    opened, closed = trip.events(system)
    k = system.names["bus"].index("bus109")
    assert _status(opened, "bus_isolated") == [(k, 1.0)]
    assert _status(closed, "bus_isolated") == [(k, 0.0)]
    restored = [c for c in closed.changes if c.name.startswith("load_")]
    assert restored and all(
        c.value == float(np.asarray(system.params[c.name])[c.index]) for c in restored
    )
    result = solve(system, make_scenario(system, trip, t_end=0.4, n_eval=41), "radau", rtol=1e-5)
    assert result.succeeded, result.message
    v = result.output("V[bus109]")
    t = result.t_eval
    assert np.all(np.abs(v[(t > 0.11) & (t < 0.19)]) < 1e-9) and abs(v[-1] - v[0]) < 0.02


def test_a_temporary_and_a_permanent_line_fault_reclose(wscc9):
    temporary = LineFault(branch="br_4_5", t_fault=0.1, t_clear=0.18, reclose=0.5)
    permanent = LineFault(branch="br_4_5", t_fault=0.1, t_clear=0.18, reclose=0.5, retrip=0.58)
    assert [e.time for e in temporary.events(wscc9)] == [0.1, 0.18, 0.5]
    reclose_onto_fault = permanent.events(wscc9)[2]
    assert _status(reclose_onto_fault, "branch_status")[0][1] == 1.0
    assert any(c.name == "fault_b" and c.value != 0.0 for c in reclose_onto_fault.changes)
    runs = {}
    for label, disturbance in (("temporary", temporary), ("permanent", permanent)):
        scenario = make_scenario(wscc9, disturbance, t_end=1.0)
        for method in ("raptor", "radau"):
            result = solve(wscc9, scenario, method, rtol=1e-6)
            assert result.succeeded, (label, method, result.message)
            runs[label, method] = result.output("V[bus5]")
    for label in ("temporary", "permanent"):  # the methods agree on each sequence
        assert np.max(np.abs(runs[label, "raptor"] - runs[label, "radau"])) < 1e-3
    # the second fault shows: bus 5's voltage dips again after 0.5 s only for the permanent one
    t = make_scenario(wscc9, temporary, t_end=1.0).t_eval
    window = (t > 0.51) & (t < 0.57)
    assert (
        np.min(runs["permanent", "radau"][window])
        < np.min(runs["temporary", "radau"][window]) - 0.2
    )


def test_n_minus_1_generators_can_reclose(wscc9):
    trips = BranchTrips(t=0.1, reclose_after=0.3).disturbances(wscc9)
    assert trips and all(d.reclose == pytest.approx(0.4) for d in trips)
    faults = LineFaults(t_fault=0.1, clearing_time=0.08, reclose_after=0.3, permanent=True)
    first = faults.disturbances(wscc9)[0]
    assert (first.reclose, first.retrip) == (pytest.approx(0.48), pytest.approx(0.56))
    with pytest.raises(ValidationError, match="permanent"):
        LineFaults(permanent=True)
