"""RAPTOR against exact solutions, a tight reference on the 9-bus system, events, determinism
and failures as results."""

from __future__ import annotations

import numpy as np
import pytest
from dae_examples import (
    STIFF_MATRIX,
    linear_index1,
    linear_index1_exact,
    linear_stiff,
    prothero_robinson,
    singular,
)
from scipy.linalg import expm

from models.dae import Event, ParameterChange, Scenario
from solvers import FailureReason, RunStatus, solve
from solvers.raptor.basis import build_banks, checkpoints, collocation_points


@pytest.fixture(scope="module")
def wscc9():
    from models.library import build_system

    return build_system("wscc9")


def test_prothero_robinson_stiff_forced():
    scenario = Scenario(t_end=2.0, t_eval=np.linspace(0, 2, 81))
    result = solve(prothero_robinson(), scenario, "raptor", rtol=1e-7, atol=1e-9)
    assert result.succeeded, result.message
    error = np.max(np.abs(result.x_eval[:, 0] - np.sin(result.t_eval)))
    assert error < 1e-6
    # the forcing is recovered as the algebraic variable at every sample
    np.testing.assert_allclose(result.z_eval[:, 0], np.sin(result.t_eval), atol=1e-12)


def test_linear_stiff_system_matches_the_matrix_exponential():
    scenario = Scenario(t_end=1.0, t_eval=np.linspace(0, 1, 51))
    result = solve(linear_stiff(), scenario, "raptor", rtol=1e-8, atol=1e-10)
    assert result.succeeded, result.message
    exact = np.stack([expm(STIFF_MATRIX * t) @ np.ones(3) for t in result.t_eval])
    assert np.max(np.abs(result.x_eval - exact)) < 1e-7
    # long intervals despite the -2000 eigenvalue: far fewer advances than Radau's
    radau = solve(linear_stiff(), scenario, "radau", rtol=1e-8, atol=1e-10)
    assert result.stats.accepted < radau.stats.accepted / 3


def test_index1_dae_closed_form_and_tolerance_proportionality():
    scenario = Scenario(t_end=2.0, t_eval=np.linspace(0, 2, 41))
    errors = {}
    for rtol in (1e-4, 1e-8):
        result = solve(linear_index1(), scenario, "raptor", rtol=rtol, atol=rtol * 1e-2)
        assert result.succeeded, result.message
        errors[rtol] = np.max(np.abs(result.x_eval - linear_index1_exact(result.t_eval)))
        np.testing.assert_allclose(result.z_eval[:, 0], 0.5 * result.x_eval[:, 0], atol=1e-12)
    assert errors[1e-4] < 1e-4
    assert errors[1e-8] < 1e-7
    assert errors[1e-8] < errors[1e-4]


def test_event_restarts_exactly_at_its_time():
    event = Event(0.7, (ParameterChange("k", 0.0),), "k off")
    scenario = Scenario(t_end=2.0, events=(event,), t_eval=np.linspace(0, 2, 21))
    result = solve(linear_index1(), scenario, "raptor", rtol=1e-9, atol=1e-11)
    assert result.succeeded, result.message
    assert 0.7 in result.t
    after = result.t_eval >= 0.7
    expected = np.exp(-0.5 * 0.7) * np.exp(-(result.t_eval[after] - 0.7))
    np.testing.assert_allclose(result.x_eval[after, 0], expected, rtol=1e-7)
    assert result.events == [{"time": 0.7, "label": "k off"}]


def test_same_seed_same_result_other_seed_other_draws():
    scenario = Scenario(t_end=2.0)
    a = solve(linear_index1(), scenario, "raptor", seed=3)
    b = solve(linear_index1(), scenario, "raptor", seed=3)
    c = solve(linear_index1(), scenario, "raptor", seed=4)
    np.testing.assert_array_equal(a.x_eval, b.x_eval)
    np.testing.assert_array_equal(a.t, b.t)
    assert not np.array_equal(a.x_eval, c.x_eval)  # other basis draws, other round-off at least


def test_singular_algebraic_system_fails_with_a_reason():
    result = solve(singular(), Scenario(t_end=1.0), "raptor")
    assert result.status is RunStatus.FAILED
    assert result.reason is FailureReason.ALGEBRAIC_SOLVE_FAILED
    assert "What to try" in result.message


def test_interval_budget_is_a_failed_result():
    result = solve(linear_index1(), Scenario(t_end=2.0), "raptor", rtol=1e-9, max_intervals=2)
    assert result.status is RunStatus.FAILED
    assert result.reason is FailureReason.MAX_STEPS


def test_banks_are_usable_and_reproducible():
    levels = (25 / 9, 5.0, 8.0)
    first = build_banks(20, 10, 7, levels, 4, 1e-3)
    second = build_banks.__wrapped__(20, 10, 7, levels, 4, 1e-3)  # bypass the cache
    np.testing.assert_array_equal(first.stacked["q"], second.stacked["q"])
    s = collocation_points(10)
    assert s[-1] == 1.0 and s[0] > 0.0  # Radau-type: stiffly accurate, s = 0 excluded
    chk = checkpoints(s)
    assert np.all((chk > 0) & (chk < 1)) and not np.any(np.isin(chk, s))
    for bank in first.banks[0]:
        assert bank.lam.real.min() > 0
        # the stage matrix integrates a constant derivative: Q 1 ~ s (consistency)
        np.testing.assert_allclose(bank.q @ np.ones(10), s, atol=1e-5)
        # dense output rows reproduce the stage values at the collocation points
        np.testing.assert_allclose(bank.value_rows(s), np.eye(10), atol=1e-8)


@pytest.mark.slow
def test_wscc9_fault_matches_a_tight_reference_at_default_tolerances(wscc9):
    from models.disturbances import BusFault
    from models.scenarios import make_scenario

    scenario = make_scenario(
        wscc9, BusFault(bus="bus7", t_fault=0.1, t_clear=0.183), t_end=1.1, n_eval=111
    )
    reference = solve(wscc9, scenario, "radau", rtol=1e-11, atol=1e-13)
    result = solve(wscc9, scenario, "raptor")
    assert reference.succeeded and result.succeeded, result.message
    scale = np.maximum(1.0, np.max(np.abs(reference.x_eval), axis=0))
    error = np.max(np.abs(result.x_eval - reference.x_eval) / scale)
    assert error <= 1e-6
    assert {0.1, 0.183} <= set(result.t.tolist())
    # <= 40 accepted intervals per second of simulated post-disturbance time
    assert result.stats.accepted <= 40 * (1.1 - 0.1) + 10
    # z is consistent with x at every dense-output sample: the KCL mismatch output is ~0
    assert np.nanmax(result.output("kcl_max")) < 1e-8


def test_forward_euler_predictor_option_is_honoured(wscc9):
    from models.disturbances import LoadStep
    from models.scenarios import make_scenario

    scenario = make_scenario(wscc9, LoadStep(bus="bus5", t=0.1, scale=1.2), t_end=1.1)
    implicit = solve(wscc9, scenario, "raptor")
    explicit = solve(wscc9, scenario, "raptor", predictor="forward_euler")
    assert implicit.succeeded and explicit.succeeded
    scale = np.maximum(1.0, np.abs(implicit.x_eval).max(axis=0))
    assert np.max(np.abs(implicit.x_eval - explicit.x_eval) / scale) < 1e-6
    # another initial guess: the chord iteration stops elsewhere within its tolerance, so the
    # answers agree to the tolerance but not bit for bit (an ignored option would give identical
    # arrays)
    assert not np.array_equal(implicit.x_eval, explicit.x_eval)
