"""Baselines on the sparse unreduced Jacobian (``models.sparsity``): the same answers as dense."""

from __future__ import annotations

import jax
import numpy as np
import pytest

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


@pytest.mark.parametrize("name", ["ieee39", pytest.param("dq_ieee39", marks=pytest.mark.slow)])
def test_sparse_and_dense_reduced_jacobians_agree(name):
    """The reduced kernels' Jacobians through the coloured pattern of ``models.sparsity``
    (g_z; the reduced J from the coloured unreduced J, and on the dq network from the
    colouring of its own pattern) agree with dense forward mode to round-off, away from the
    equilibrium (perturbed x, consistent z)."""
    from models.kernels import _g_z_fn, _pattern_for, as_device_params, reduced_jacobian_fn
    from models.sparsity import reduced_pattern

    system = build_system(name)
    p = as_device_params(system.params)
    rng = np.random.default_rng(0)
    x = np.asarray(system.x0) * (1 + 1e-3 * rng.standard_normal(system.n_x))
    dense_gz = jax.jit(_g_z_fn(system, None))
    z = np.asarray(system.z0)
    for _ in range(20):  # Newton for a consistent z at the perturbed x
        z = z - np.linalg.solve(dense_gz(x, z, p), np.asarray(system.g(x, z, p)))
    assert np.abs(np.asarray(system.g(x, z, p))).max() < 1e-10
    pattern = reduced_pattern(system)
    assert pattern.reduced_sparse == name.startswith("dq_")  # the network fills ieee39's in
    modes = ["sparse-blocks"] + (["sparse-reduced"] if pattern.reduced_sparse else [])
    dense = np.asarray(jax.jit(reduced_jacobian_fn(system, "dense"))(x, z, p))
    scale = np.abs(dense).max()
    for mode in modes:
        sparse = np.asarray(jax.jit(reduced_jacobian_fn(system, mode))(x, z, p))
        assert np.abs(sparse - dense).max() <= 1e-13 * scale, mode
        coloured_gz = jax.jit(_g_z_fn(system, _pattern_for(system, mode)))(x, z, p)
        np.testing.assert_allclose(coloured_gz, dense_gz(x, z, p), rtol=0, atol=1e-13)
    if pattern.reduced_sparse:  # every entry of the dense J lies in the structural pattern
        outside = dense.copy()
        outside[pattern.red_indices, pattern.red_cols] = 0.0
        assert not outside.any()


def test_the_embedding_is_used_only_where_its_fast_subsystem_is_stable(monkeypatch):
    """eps z' = g is stable only with g_z's spectrum in the left half-plane: true for the RMS
    network, false for the dq network (its line-current equations), where an explicit request
    is refused and ``auto`` keeps the reduced ODE."""
    from solvers.scipy_dae import embedding_stable
    from solvers.scipy_ivp import _formulation

    assert embedding_stable(build_system("ieee39")) is True
    dq = build_system("dq_ieee39")
    assert embedding_stable(dq) is False
    scenario = make_scenario(dq, BusFault(bus="bus16", t_fault=1e-4, t_clear=2e-4), t_end=3e-4)
    result = solve(dq, scenario, "radau", formulation="dae")
    assert not result.succeeded and result.reason.value == "invalid_input"
    assert "left half-plane" in result.message
    from solvers import scipy_ivp
    from solvers.catalogue import ImplicitRungeKuttaOptions

    monkeypatch.setattr(scipy_ivp, "AUTO_DAE_MIN_N", 0)  # both count as large here
    auto = ImplicitRungeKuttaOptions()
    assert _formulation(build_system("ieee39"), "radau", auto) == "dae"
    assert _formulation(dq, "radau", auto) == "reduced"
