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
