"""A branch trip that leaves a bus with nothing connected (NPCC's radial line 60-140, whose far
end carries no load, machine or shunt; WECC's line 106-109, whose far end carries a load)
de-energizes that bus instead of leaving the network matrix singular (before: both RAPTOR and
Radau failed NPCC's as an internal error, and Radau spent over 10 minutes in MINPACK on WECC's,
found by the N-1 campaigns); a machine left alone on its bus keeps its bus."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from models.components.loads import zip_current
from models.disturbances import LOAD_PARAMS, BranchTrip, isolated_buses
from models.library import build_system
from models.scenarios import make_scenario
from solvers import solve
from tests.psse_crosscheck import system as psse_system


def test_a_dead_end_bus_is_de_energized_and_the_run_succeeds() -> None:
    system = psse_system("npcc_full")
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


def test_a_loaded_dead_end_bus_loses_its_load_with_its_voltage() -> None:
    system = psse_system("wecc_full")
    trip = BranchTrip(branch="line_106_109_1", t=0.1)
    (event,) = trip.events(system)
    load = system.names["load"].index("bus109")
    zeroed = {c.name for c in event.changes if c.index == load and c.value == 0.0}
    assert zeroed == {n for n in LOAD_PARAMS if n in system.params}
    result = solve(system, make_scenario(system, trip, t_end=0.3, n_eval=31), "radau", rtol=1e-5)
    assert result.succeeded, result.message
    assert np.all(np.abs(result.output("V[bus109]")[result.t_eval > 0.1]) < 1e-9)


def test_zip_current_is_zero_with_finite_derivatives_at_zero_voltage() -> None:
    """Constant-current and constant-power parts have 1/|v| factors: at v = 0 exactly (a
    de-energized bus) the current is 0 and its derivatives finite, not 0/0 = NaN."""

    def current(vr, vi):
        i = zip_current(vr + 1j * vi, 0.4, -0.2, 0.3, 0.1, 0.5, 0.2)
        return jnp.stack([jnp.real(i), jnp.imag(i)])

    assert np.all(np.asarray(current(0.0, 0.0)) == 0.0)
    jac = np.asarray(jax.jacfwd(current, argnums=(0, 1))(0.0, 0.0))
    assert np.all(np.isfinite(jac))
    # away from zero the formula is the ZIP load's own: I = (Y + I0/|v| + S*/|v|^2) v
    v = 0.9 * np.exp(0.3j)
    expected = ((0.4 - 0.2j) + (0.3 - 0.1j) / 0.9 + (0.5 - 0.2j) / 0.81) * v
    np.testing.assert_allclose(np.asarray(current(v.real, v.imag)), [expected.real, expected.imag])
