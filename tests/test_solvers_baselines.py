"""The baseline integrators against real oracles: Kvaerno5 at tight tolerance on the WSCC 9-bus
system, exact solutions of toy DAEs, the trapezoid's fitted convergence order, stiff failures
as results, work budgets on counters, and identities that tie each derived counter to an
independent count."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dae_examples import linear_index1, linear_index1_exact, singular

from models.dae import DAESystem, Event, ParameterChange, Scenario
from models.disturbances import BranchTrip, BusFault
from models.kernels import as_device_params, kernels_for
from models.library import build_system
from models.scenarios import make_scenario
from solvers import METHODS, FailureReason, RunStatus, solve
from solvers.jax_reduced import reduced_vector_field
from solvers.streaming import simulate_steps
from solvers.trapezoid import step_grid

ADAPTIVE = ["radau", "bdf", "lsoda", "rk45", "dop853", "kvaerno5", "tsit5", "dopri5", "ida"]
EXPLICIT = ["rk45", "dop853", "tsit5", "dopri5"]
STIFF = ["radau", "bdf", "lsoda", "kvaerno5", "ida"]
SCIPY = ["radau", "bdf", "lsoda", "rk45", "dop853"]
N_EVAL = 101
"""Evaluation grid of the 9-bus runs (one diffrax sample-buffer size: one compile per method)."""
ERROR_PER_TOL = 20.0
"""Largest scaled global error, in units of rtol, accepted against the reference (measured: at
most 9 x rtol on the bus fault, BDF)."""


def _has_ida() -> bool:
    try:
        import sksundae  # noqa: F401
    except ImportError:
        return False
    return True


def _methods(names: list[str]) -> list:
    return [
        pytest.param(m, marks=pytest.mark.skipif(not _has_ida(), reason="scikit-sundae missing"))
        if m == "ida"
        else m
        for m in names
    ]


def stiff_linear() -> DAESystem:
    """x1' = -x1 + z, x2' = -1e6 (x2 - z), 0 = z - x1 / 2: a -1e6 eigenvalue. Started on the slow
    manifold: x1 = e^{-t/2}, x2 = a e^{-t/2} with a = 0.5e6 / (1e6 - 0.5)."""
    a = 0.5e6 / (1e6 - 0.5)

    def f(x, z, p):
        return jnp.stack([-x[0] + z[0], -p["lam"] * (x[1] - z[0])])

    return DAESystem(
        name="stiff_linear",
        state_names=("x1", "x2"),
        alg_names=("z",),
        f=f,
        g=lambda x, z, p: jnp.stack([z[0] - 0.5 * x[0]]),
        x0=np.array([1.0, a]),
        z0=np.array([0.5]),
        params={"lam": np.array(1e6)},
    )


@pytest.fixture(scope="module")
def toy() -> DAESystem:
    return linear_index1()


@pytest.fixture(scope="module")
def stiff() -> DAESystem:
    return stiff_linear()


@pytest.fixture(scope="module")
def wscc9() -> DAESystem:
    return build_system("wscc9")


@pytest.fixture(scope="module")
def fault(wscc9):
    return make_scenario(wscc9, BusFault(bus="bus7", t_fault=0.1, t_clear=0.2), n_eval=N_EVAL)


@pytest.fixture(scope="module")
def reference(wscc9, fault):
    result = solve(wscc9, fault, "kvaerno5", rtol=1e-10, atol=1e-12)
    assert result.succeeded, result.message
    return result


def scaled_error(result, reference) -> float:
    scale = np.maximum(1.0, np.max(np.abs(reference.x_eval), axis=0))
    return float(np.max(np.abs(result.x_eval - reference.x_eval) / scale))


# --- catalogue ------------------------------------------------------------------------------------


def test_every_baseline_is_in_the_catalogue():
    for name in [*ADAPTIVE, "trapezoid", "trapezoid-delayed"]:
        spec = METHODS[name].describe()
        assert spec["guidance"] and spec["options"]["properties"], name
        defaults = METHODS[name].options()
        assert defaults.model_dump(), name
    # one driver for every method: diffrax advances are whole event segments
    assert METHODS["kvaerno5"].describe()["advances"] == "segments"
    assert {METHODS[m].describe()["advances"] for m in (*SCIPY, "raptor", "ida")} == {"steps"}


# --- accuracy -------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", _methods(ADAPTIVE))
def test_agrees_with_kvaerno5_on_a_9bus_fault(method, wscc9, fault, reference):
    errors = {}
    for rtol in (1e-5, 1e-8):
        result = solve(wscc9, fault, method, rtol=rtol, atol=rtol * 1e-2)
        assert result.succeeded, result.message
        errors[rtol] = scaled_error(result, reference)
        assert errors[rtol] < ERROR_PER_TOL * rtol, (rtol, errors[rtol])
        # outputs come from a z re-solved at each sample: KCL holds there
        kcl = result.output("kcl_max")
        assert np.all(kcl < 1e-8), np.max(kcl)
        # integration restarted exactly at both events
        assert {0.1, 0.2} <= set(result.t.tolist())
    assert errors[1e-8] < errors[1e-5] / 30


def test_trapezoid_agrees_with_kvaerno5_on_a_line_trip(wscc9):
    trip = make_scenario(wscc9, BranchTrip(branch="br_5_6", t=0.1), n_eval=N_EVAL)
    ref = solve(wscc9, trip, "kvaerno5", rtol=1e-10, atol=1e-12)
    result = solve(wscc9, trip, "trapezoid", dt=1e-3)
    assert ref.succeeded and result.succeeded
    assert scaled_error(result, ref) < 1e-4


@pytest.mark.parametrize("method", _methods([*ADAPTIVE, "trapezoid"]))
def test_matches_the_exact_solution_of_a_toy_dae(method, toy):
    system = toy
    scenario = Scenario(t_end=2.0, t_eval=np.linspace(0, 2, 41))
    options = {"dt": 1e-3} if method == "trapezoid" else {"rtol": 1e-9, "atol": 1e-11}
    result = solve(system, scenario, method, **options)
    assert result.succeeded, result.message
    error = np.max(np.abs(result.x_eval - linear_index1_exact(result.t_eval)))
    assert error < (1e-6 if method == "trapezoid" else 1e-7), error
    np.testing.assert_allclose(result.z_eval[:, 0], 0.5 * result.x_eval[:, 0], atol=1e-12)


@pytest.mark.parametrize("method", _methods([*ADAPTIVE, "trapezoid"]))
def test_event_stops_exactly_and_resolves_z(method, toy):
    system = toy
    event = Event(1.0, (ParameterChange("k", 0.0),), "k off")
    scenario = Scenario(t_end=2.0, events=(event,), t_eval=np.linspace(0, 2, 41))
    options = {"dt": 1e-3} if method == "trapezoid" else {"rtol": 1e-9, "atol": 1e-11}
    result = solve(system, scenario, method, **options)
    assert result.succeeded, result.message
    at_event = np.nonzero(result.t == 1.0)[0]
    assert len(at_event) == 2  # both sides of the event
    assert result.z[at_event[0], 0] == pytest.approx(0.5 * np.exp(-0.5), rel=1e-6)
    assert result.z[at_event[1], 0] == pytest.approx(0.0, abs=1e-14)
    after = result.t_eval >= 1.0
    expected = np.exp(-0.5) * np.exp(-(result.t_eval[after] - 1.0))
    np.testing.assert_allclose(result.x_eval[after, 0], expected, rtol=1e-6)
    assert result.z_eval[result.t_eval == 1.0, 0] == pytest.approx(0.0, abs=1e-14)
    assert result.events == [{"time": 1.0, "label": "k off"}]


# --- trapezoid ------------------------------------------------------------------------------------


def _fitted_order(system, scenario, reference, method: str, error_at_finest: float) -> float:
    steps = np.array([4e-3, 2e-3, 1e-3, 5e-4])
    errors = []
    for dt in steps:
        result = solve(system, scenario, method, dt=float(dt))
        assert result.succeeded, result.message
        errors.append(scaled_error(result, reference))
    assert errors[-1] < error_at_finest, errors
    return float(np.polyfit(np.log(steps), np.log(errors), 1)[0])


def test_trapezoid_converges_at_second_order(wscc9, fault, reference):
    assert _fitted_order(wscc9, fault, reference, "trapezoid", 2e-6) == pytest.approx(2.0, abs=0.05)


def test_delayed_controllers_cost_one_order(wscc9, fault, reference):
    assert _fitted_order(wscc9, fault, reference, "trapezoid-delayed", 3e-4) == pytest.approx(
        1.0, abs=0.1
    )


def test_delayed_step_solves_the_network_once_with_the_previous_controllers():
    """The delayed step as EMT programs take it: the network states and z solve the
    trapezoidal step with the controller states of the step before (the one-step delay), then
    the controller states alone solve theirs with that network solution held; nothing is
    solved again. Checked on every step of the inverter's perturbed start (emt_gfl: PLL, power
    and current controllers), where holding the controllers changes the network's step; the
    sparse path's network stage (KLU) gives the dense one's steps."""
    from models.disturbances import NoDisturbance

    system = build_system("emt_gfl")
    scenario = make_scenario(
        system, NoDisturbance(), t_end=0.01, ic_seed=3, ic_spread=0.3, n_eval=5
    )
    dt = 1e-4
    result = solve(system, scenario, "trapezoid-delayed", dt=dt)
    assert result.succeeded, result.message
    ctrl = np.isin(system.state_names, system.controller_states)
    f, g = jax.jit(system.f), jax.jit(system.g)
    p = as_device_params(system.params)
    network_residual, controller_residual, undelayed = [], [], []
    for k in range(1, len(result.t)):
        x0, z0, x1, z1 = result.x[k - 1], result.z[k - 1], result.x[k], result.z[k]
        h = result.t[k] - result.t[k - 1]
        f0 = np.asarray(f(x0, z0, p))
        held = np.where(ctrl, x0, x1)  # the network stage's point: controllers one step behind
        network = x1 - x0 - 0.5 * h * (f0 + np.asarray(f(held, z1, p)))
        network_residual.append(np.max(np.abs(network[~ctrl])))
        own = x1 - x0 - 0.5 * h * (f0 + np.asarray(f(x1, z1, p)))  # the stored point's step
        undelayed.append(np.max(np.abs(own[~ctrl])))
        controller_residual.append(np.max(np.abs(own[ctrl])))
        assert np.max(np.abs(g(held, z1, p))) < 1e-9  # z: the network stage's
    assert max(network_residual) < 1e-9, max(network_residual)
    assert max(controller_residual) < 1e-9, max(controller_residual)
    assert np.median(undelayed) > 1e3 * max(network_residual)  # the delay is real
    # the sparse (KLU) network stage takes the same steps
    sparse = solve(system, scenario, "trapezoid-delayed", dt=dt, linear_solver="sparse")
    np.testing.assert_allclose(sparse.x, result.x, rtol=0, atol=1e-12)
    np.testing.assert_allclose(sparse.z, result.z, rtol=0, atol=1e-12)
    assert sparse.stats.newton_iterations == result.stats.newton_iterations


def test_trapezoid_output_lies_on_the_step_grid_and_events(toy):
    system = toy
    event = Event(0.1005, (ParameterChange("k", 0.0),), "off the grid")
    scenario = Scenario(t_end=0.2, events=(event,), t_eval=np.linspace(0, 0.2, 5))
    result = solve(system, scenario, "trapezoid", dt=1e-3)
    assert result.succeeded
    expected = np.concatenate(
        [[0.0], step_grid(0.0, 0.1005, 0.0, 1e-3), [0.1005], step_grid(0.1005, 0.2, 0.0, 1e-3)]
    )
    np.testing.assert_allclose(result.t, expected, rtol=0, atol=1e-15)
    steps = np.diff(np.unique(result.t))
    assert np.isclose(steps, 1e-3).sum() == len(steps) - 2  # only around the event
    assert result.stats.accepted == len(steps)
    assert result.stats.rejected == 0


def test_delayed_needs_controller_states(toy):
    result = solve(toy, Scenario(t_end=0.1), "trapezoid-delayed")
    assert result.status is RunStatus.FAILED
    assert result.reason is FailureReason.INVALID_INPUT
    assert "controller states" in result.message


# --- stiffness ------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", EXPLICIT)
def test_explicit_methods_fail_on_a_stiff_case_as_results(method, stiff):
    result = solve(stiff, Scenario(t_end=1.0), method, max_steps=500)
    assert result.status is RunStatus.FAILED
    assert result.reason is FailureReason.MAX_STEPS
    assert "What to try" in result.message
    assert np.isnan(result.x_eval[-1]).all()


@pytest.mark.parametrize("method", _methods(STIFF))
def test_stiff_methods_cross_a_stiff_case_cheaply(method, stiff):
    result = solve(stiff, Scenario(t_end=1.0), method, rtol=1e-6, atol=1e-9, max_steps=500)
    assert result.succeeded, result.message
    assert result.stats.accepted < 200
    exact = np.exp(-0.5 * result.t_eval)
    np.testing.assert_allclose(result.x_eval[:, 0], exact, rtol=1e-4)


# --- counters -------------------------------------------------------------------------------------


def test_exact_jacobian_saves_rhs_work(wscc9, fault, stiff):
    for method, system, scenario in (
        ("radau", wscc9, fault),
        ("bdf", wscc9, fault),
        ("lsoda", stiff, Scenario(t_end=1.0)),  # LSODA stays in Adams mode on the 9-bus
    ):
        exact = solve(system, scenario, method, rtol=1e-6, atol=1e-8)
        differenced = solve(system, scenario, method, rtol=1e-6, atol=1e-8, exact_jacobian=False)
        assert exact.succeeded and differenced.succeeded
        assert exact.stats.jacobian_evaluations >= 1, method
        assert differenced.stats.jacobian_evaluations == 0
        # each differenced Jacobian costs n_x RHS calls, all counted
        assert differenced.stats.rhs_evaluations > exact.stats.rhs_evaluations + system.n_x


def test_derived_counters_match_independent_counts(wscc9, fault, stiff):
    n_segments = 3
    # the pre-fault segment starts at the equilibrium: it is at rest (``stepping.at_rest``), one
    # accepted advance and no solver step; every segment pays one RHS call for that check
    integrated = n_segments - 1
    checks = n_segments
    # RK45: 6 calls per attempt, plus f(t0) per integrated segment (first_step is given)
    rk = solve(wscc9, fault, "rk45", rtol=1e-6, atol=1e-8, first_step=0.05)
    assert rk.stats.rejected >= 1  # the oversized first step is rejected
    attempts = rk.stats.accepted - 1 + rk.stats.rejected
    assert rk.stats.rhs_evaluations == 6 * attempts + integrated + checks
    # BDF: Newton iterations are the nfev increase; the rest is f(t0) + initial-step choice
    bdf = solve(wscc9, fault, "bdf", rtol=1e-6, atol=1e-8)
    assert bdf.stats.rhs_evaluations == bdf.stats.newton_iterations + 2 * integrated + checks
    # LSODA: every RHS call after the initial f(t0) is a corrector iteration
    lsoda = solve(wscc9, fault, "lsoda", rtol=1e-6, atol=1e-8)
    assert lsoda.stats.rhs_evaluations == lsoda.stats.newton_iterations + integrated + checks
    for result in (rk, bdf, lsoda):
        assert result.stats.accepted == len(result.t) - n_segments
        assert result.t[1] == fault.events[0].time  # the segment at rest: one advance
    # in BDF mode, differenced LSODA Jacobians (n_x calls and one factorization each) are
    # taken out of the corrector iterations
    fd = solve(stiff, Scenario(t_end=1.0), "lsoda", rtol=1e-6, atol=1e-8, exact_jacobian=False)
    assert fd.stats.lu_factorizations >= 1
    assert fd.stats.rhs_evaluations == (
        fd.stats.newton_iterations + stiff.n_x * fd.stats.lu_factorizations + 1 + 1
    )  # f(t0) and the rest check


@pytest.mark.skipif(not _has_ida(), reason="scikit-sundae missing")
def test_ida_counters(wscc9, fault):
    result = solve(wscc9, fault, "ida", rtol=1e-6, atol=1e-8, first_step=0.05)
    s = result.stats
    assert result.succeeded
    assert s.rhs_evaluations == s.newton_iterations  # one residual per Newton iteration
    assert s.rejected >= 1
    assert s.lu_factorizations == s.jacobian_evaluations >= 1
    assert s.accepted == len(result.t) - 3


@pytest.mark.parametrize("method", ["radau", "bdf", "lsoda", "kvaerno5"])
def test_oversized_first_step_is_counted_as_rejected(method, toy):
    system = toy
    result = solve(system, Scenario(t_end=2.0), method, rtol=1e-8, atol=1e-10, first_step=1.0)
    assert result.succeeded
    assert result.stats.rejected >= 1


# --- diffrax --------------------------------------------------------------------------------------


def test_diffrax_compiles_once_per_system(wscc9, fault, reference):
    trip = make_scenario(wscc9, BranchTrip(branch="br_8_9", t=0.3), n_eval=N_EVAL)
    again = solve(wscc9, trip, "kvaerno5", rtol=1e-6, atol=1e-8)
    assert again.succeeded
    assert again.stats.compile_seconds == 0.0  # other events, parameters and tolerances
    assert again.stats.accepted > 0 and again.stats.solve_seconds > 0


def test_vector_field_jacobian_is_exact(wscc9):
    kernels, _ = kernels_for(wscc9)
    p = as_device_params(wscc9.params)
    x = jnp.asarray(wscc9.x0) + 0.01 * jnp.sin(jnp.arange(wscc9.n_x))
    z_guess = jnp.asarray(wscc9.z0)
    vector_field = reduced_vector_field(wscc9)
    autodiff = jax.jit(jax.jacfwd(lambda xx, pp: vector_field(0.0, xx, (pp, z_guess))))(x, p)
    z, _, _ = kernels.newton(x, z_guess, p)
    np.testing.assert_allclose(autodiff, kernels.ode_jacobian(x, z, p), rtol=1e-9, atol=1e-9)


# --- streaming ------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", _methods(["radau", "lsoda", "dop853", "trapezoid", "ida"]))
def test_streamed_steps_are_the_solve_steps(method, wscc9, fault):
    options = {"dt": 2e-3} if method == "trapezoid" else {"rtol": 1e-5, "atol": 1e-7}
    stream = simulate_steps(wscc9, fault, method, **options)
    records = list(stream)
    result = solve(wscc9, fault, method, **options)
    assert stream.result.succeeded and len(records) == result.stats.accepted
    times = np.array([r.t for r in records])
    assert np.all(np.diff(times) > 0) and times[-1] == pytest.approx(fault.t_end)
    np.testing.assert_allclose(records[-1].x, result.x[-1], rtol=1e-12)
    assert set(records[0].outputs) == set(wscc9.output_names)
    assert max(r.outputs["kcl_max"] for r in records) < 1e-8


def test_streaming_failure_ends_with_a_failed_result():
    stream = simulate_steps(singular(), Scenario(t_end=1.0), "bdf")
    assert list(stream) == []
    assert stream.result.reason is FailureReason.ALGEBRAIC_SOLVE_FAILED


def test_diffrax_streams_one_record_per_event_segment(wscc9, fault):
    """The one driver runs every method: diffrax's advances are the event segments (one
    compiled solve each), streamed like any other method's steps."""
    stream = simulate_steps(wscc9, fault, "tsit5")
    records = list(stream)
    assert stream.result.succeeded
    assert [r.t for r in records] == [0.1, 0.2, fault.t_end]
    np.testing.assert_allclose(records[-1].x, stream.result.x[-1])


def test_a_segment_at_rest_is_one_advance_keeping_the_state(wscc9, fault):
    result = solve(wscc9, fault, "radau", rtol=1e-6, atol=1e-8)
    pre = result.t_eval < fault.events[0].time
    assert list(result.t[:2]) == [0.0, fault.events[0].time]
    expected = np.broadcast_to(wscc9.x0, (pre.sum(), wscc9.n_x))
    np.testing.assert_array_equal(result.x_eval[pre], expected)
    # a start off the equilibrium by far less than the tolerance is not at rest
    moved = np.array(wscc9.x0) * (1 + 1e-5)
    off = solve(wscc9, dataclasses.replace(fault, x0=moved), "radau", rtol=1e-6, atol=1e-8)
    assert off.succeeded and off.t[1] < fault.events[0].time
