"""Baselines on the sparse unreduced Jacobian (``models.sparsity``): the same answers as dense."""

from __future__ import annotations

import numpy as np

from models.disturbances import BusFault
from models.library import build_system
from models.scenarios import make_scenario
from solvers import solve


def test_ida_sparse_and_dense_agree_on_ieee39():
    system = build_system("ieee39")
    scenario = make_scenario(system, BusFault(bus="bus20", t_fault=0.1, t_clear=0.183), t_end=0.6)
    dense = solve(system, scenario, "ida", rtol=1e-7, atol=1e-9, linear_solver="dense")
    sparse = solve(system, scenario, "ida", rtol=1e-7, atol=1e-9, linear_solver="sparse")
    assert dense.succeeded and sparse.succeeded
    # the same iteration matrices factored by LAPACK and by SuperLU_MT: the step sequences may
    # part on round-off, the trajectories agree to the tolerance
    scale = np.maximum(1.0, np.abs(dense.x_eval).max(axis=0))
    assert np.max(np.abs(sparse.x_eval - dense.x_eval) / scale) < 1e-5
    assert sparse.stats.jacobian_evaluations > 0


def test_trapezoid_sparse_and_dense_agree_on_ieee39():
    """The trapezoid on the sparse unreduced DAE (coloured Jacobian, KLU kept across steps)
    takes the same Newton iterations as the dense one and agrees to round-off."""
    system = build_system("ieee39")
    scenario = make_scenario(system, BusFault(bus="bus20", t_fault=0.1, t_clear=0.183), t_end=0.3)
    dense = solve(system, scenario, "trapezoid", dt=1e-3, linear_solver="dense")
    sparse = solve(system, scenario, "trapezoid", dt=1e-3, linear_solver="sparse")
    assert dense.succeeded and sparse.succeeded
    assert sparse.stats.newton_iterations == dense.stats.newton_iterations
    assert sparse.stats.lu_factorizations == dense.stats.lu_factorizations  # reused across steps
    assert sparse.stats.lu_factorizations < sparse.stats.accepted / 10
    np.testing.assert_allclose(sparse.x_eval, dense.x_eval, rtol=0, atol=1e-10)
    np.testing.assert_allclose(sparse.z_eval, dense.z_eval, rtol=0, atol=1e-10)


def test_radau_and_bdf_on_the_embedded_dae_agree_with_the_reduced_ode_on_ieee39():
    """The epsilon-embedded DAE (sparse Jacobian, SuperLU) and the reduced ODE (dense reduced
    Jacobian) integrate the same trajectories: at rtol 1e-9 within 1e-7 of each other, with
    consistent z (|g| at the samples below the algebraic tolerance)."""
    from solvers.reduced import ALGEBRAIC_TOL

    system = build_system("ieee39")
    scenario = make_scenario(system, BusFault(bus="bus20", t_fault=0.1, t_clear=0.183), t_end=0.6)
    p = {k: np.asarray(v) for k, v in system.params.items()}
    for method in ("radau", "bdf"):
        reduced = solve(system, scenario, method, rtol=1e-9, atol=1e-11, formulation="reduced")
        dae = solve(system, scenario, method, rtol=1e-9, atol=1e-11, formulation="dae")
        assert reduced.succeeded and dae.succeeded, (method, dae.message)
        scale = np.maximum(1.0, np.abs(reduced.x_eval).max(axis=0))
        assert np.max(np.abs(dae.x_eval - reduced.x_eval) / scale) < 1e-7, method
        g_last = np.asarray(system.g(dae.x_eval[-1], dae.z_eval[-1], p))
        assert np.abs(g_last).max() <= ALGEBRAIC_TOL


def test_lsoda_refuses_the_dae_formulation():
    system = build_system("wscc9")
    scenario = make_scenario(system, BusFault(bus="bus7", t_fault=0.1, t_clear=0.15), t_end=0.3)
    result = solve(system, scenario, "lsoda", formulation="dae")
    assert not result.succeeded and result.reason.value == "invalid_input"
    assert "formulation 'dae'" in result.message
