"""Radau on the reduced ODE: exact solutions, events, counters, failures as results."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from dae_examples import linear_index1, linear_index1_exact, singular
from pydantic import ValidationError

from models.dae import Event, ParameterChange, Scenario
from models.kernels import kernels_for
from solvers import FailureReason, RunStatus, UnknownMethodError, solve


@pytest.fixture(scope="module")
def system():
    return linear_index1()


def test_matches_the_exact_solution_within_tolerance(system):
    scenario = Scenario(t_end=2.0, t_eval=np.linspace(0, 2, 41))
    errors = {}
    for rtol in (1e-5, 1e-9):
        result = solve(system, scenario, "radau", rtol=rtol, atol=rtol * 1e-2)
        assert result.status is RunStatus.SUCCEEDED, result.message
        errors[rtol] = np.max(np.abs(result.x_eval - linear_index1_exact(result.t_eval)))
        # the algebraic variable is consistent at every sample
        np.testing.assert_allclose(result.z_eval[:, 0], 0.5 * result.x_eval[:, 0], atol=1e-12)
        np.testing.assert_allclose(result.y_eval[:, 0], 2 * result.z_eval[:, 0], atol=1e-14)
    assert errors[1e-5] < 1e-4
    assert errors[1e-9] < 1e-8
    assert errors[1e-9] < errors[1e-5] / 100


def test_event_applies_exactly_at_its_time(system):
    event = Event(1.0, (ParameterChange("k", 0.0),), "k off")
    scenario = Scenario(t_end=2.0, events=(event,), t_eval=np.linspace(0, 2, 21))
    result = solve(system, scenario, "radau", rtol=1e-10, atol=1e-12)
    assert result.succeeded
    assert 1.0 in result.t  # integration restarted exactly at the event
    x1_event = np.exp(-0.5)
    after = result.t_eval >= 1.0
    np.testing.assert_allclose(
        result.x_eval[after, 0], x1_event * np.exp(-(result.t_eval[after] - 1.0)), rtol=1e-8
    )
    # z jumps to 0 at the event: the sample at t = 1 takes the post-event value
    assert result.z_eval[result.t_eval == 1.0, 0] == pytest.approx(0.0, abs=1e-14)
    assert result.events == [{"time": 1.0, "label": "k off"}]


def test_exact_jacobian_matches_finite_differences(system):
    kernels, _ = kernels_for(system)
    p = {"k": jnp.asarray(0.5)}
    x = np.array([0.7, 0.2])
    z = np.array([0.35])
    exact = np.asarray(kernels.ode_jacobian(x, z, p))
    eps = 1e-7
    numeric = np.zeros((2, 2))
    for j in range(2):
        dx = np.zeros(2)
        dx[j] = eps

        def reduced(xx):
            zz = np.asarray(kernels.newton(xx, z, p)[0])
            return np.asarray(kernels.f(xx, zz, p))

        numeric[:, j] = (reduced(x + dx) - reduced(x - dx)) / (2 * eps)
    np.testing.assert_allclose(exact, numeric, atol=1e-7)


def test_exact_jacobian_saves_rhs_work(system):
    scenario = Scenario(t_end=2.0)
    exact = solve(system, scenario, "radau", rtol=1e-8, atol=1e-10)
    differenced = solve(system, scenario, "radau", rtol=1e-8, atol=1e-10, exact_jacobian=False)
    assert exact.succeeded and differenced.succeeded
    # SciPy differences the Jacobian with one RHS call per state: counted, not hidden
    assert differenced.stats.rhs_evaluations > exact.stats.rhs_evaluations
    assert exact.stats.jacobian_evaluations >= 1
    assert differenced.stats.jacobian_evaluations == 0


def test_counters_are_filled(system):
    result = solve(system, Scenario(t_end=1.0), "radau", rtol=1e-6, atol=1e-8)
    s = result.stats
    assert s.accepted == len(result.t) - 1
    assert s.newton_iterations >= s.accepted
    assert s.lu_factorizations >= 2  # real + complex factorization at least once
    assert s.algebraic_iterations >= s.rhs_evaluations
    assert s.solve_seconds > 0


def test_singular_algebraic_system_is_a_failed_result():
    result = solve(singular(), Scenario(t_end=1.0), "radau")
    assert result.status is RunStatus.FAILED
    assert result.reason is FailureReason.ALGEBRAIC_SOLVE_FAILED
    assert "What to try" in result.message


def test_tiny_step_budget_is_a_failed_result(system):
    result = solve(system, Scenario(t_end=2.0), "radau", rtol=1e-10, max_steps=3)
    assert result.status is RunStatus.FAILED
    assert result.reason is FailureReason.MAX_STEPS
    assert np.isnan(result.x_eval[-1]).all()  # nothing invented past the failure


def test_unknown_method_lists_the_valid_ones(system):
    with pytest.raises(UnknownMethodError) as info:
        solve(system, Scenario(t_end=1.0), "euler")
    assert "radau" in str(info.value)


def test_bad_option_names_the_field(system):
    with pytest.raises(ValidationError) as info:
        solve(system, Scenario(t_end=1.0), "radau", rtol=-1.0)
    assert "rtol" in str(info.value)
    with pytest.raises(ValidationError) as info:
        solve(system, Scenario(t_end=1.0), "radau", rtoll=1e-3)
    assert "rtoll" in str(info.value)
