"""Planning-size networks (pandapower's case_illinois200, case300, case1354pegase,
case2869pegase, and case9241pegase on request: ``-m huge``): built at their power-flow
equilibrium, small-signal stable by the sparse shift-invert scan, sizes as stored, and every
campaign generator expands on them."""

from __future__ import annotations

import numpy as np
import pytest
from raptorgrid.campaign_gen import BranchTrips, BusFaults, GeneratorTrips

from models.dae import DAESystem
from models.library import build_system, network_summary
from models.smallsignal import modes, rightmost_modes

EQUILIBRIUM_TOL = 1e-8


def _check_equilibrium_and_stability(system: DAESystem) -> np.ndarray:
    p = {k: np.asarray(v) for k, v in system.params.items()}
    f = np.asarray(system.f(system.x0, system.z0, p))
    g = np.asarray(system.g(system.x0, system.z0, p))
    assert np.abs(f).max() <= EQUILIBRIUM_TOL and np.abs(g).max() <= EQUILIBRIUM_TOL
    eig = rightmost_modes(system).eigenvalues
    zero = np.abs(eig) < 1e-6
    assert zero.sum() == 1, eig[:6]  # the common rotation of every angle
    assert np.all(eig[~zero].real < -1e-3), eig[:6]
    summary = network_summary(system.name)
    assert (summary["n_x"], summary["n_z"], summary["n_bus"]) == (
        system.n_x,
        system.n_z,
        len(system.names["bus"]),
    )
    return eig


@pytest.mark.parametrize("name", ["case_illinois200", "case300"])
def test_mid_size_networks_start_at_a_stable_equilibrium(name):
    system = build_system(name)
    eig = _check_equilibrium_and_stability(system)
    if name == "case_illinois200":  # the scan agrees with dense eigvals where those are cheap
        dense = modes(system).eigenvalues
        assert max(np.min(np.abs(dense - lam)) for lam in eig) < 1e-5
        assert dense.real.max() == pytest.approx(eig.real.max(), abs=1e-6)


@pytest.mark.slow
def test_pegase_1354_starts_at_a_stable_equilibrium():
    _check_equilibrium_and_stability(build_system("case1354pegase"))


@pytest.mark.slow
def test_pegase_2869_starts_at_a_stable_equilibrium():
    _check_equilibrium_and_stability(build_system("case2869pegase"))


@pytest.mark.slow
@pytest.mark.huge
def test_pegase_9241_starts_at_a_stable_equilibrium():
    """The stretch case (~10 s build, 1.2 GB, ~90 s scan on this 2-core machine): outside the
    15-minute suite, run with ``pytest -m huge tests/test_models_large.py``."""
    _check_equilibrium_and_stability(build_system("case9241pegase"))


def test_campaign_generators_expand_on_a_large_network():
    system = build_system("case300")
    trips = BranchTrips().disturbances(system)
    faults = BusFaults().disturbances(system)
    generators = GeneratorTrips().disturbances(system)
    assert len(trips) == len(system.names["branch"])
    assert len(faults) == len(system.names["bus"]) == 300
    assert len(generators) == len(system.names["generator"])
    for disturbance in (trips[0], faults[-1], generators[0]):
        assert disturbance.events(system)  # resolves against the network's names


@pytest.mark.slow
def test_pegase_1354_campaign_through_the_platform_with_two_methods(tmp_path, jax_cache_dir):
    """A 1,354-bus campaign end to end on the embedded platform (``raptorgrid run``: SQLite,
    Zarr, a real Celery worker): a bus fault solved by RAPTOR and by Radau (sparse DAE), both
    stored, scored against each other's network and readable by name."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    import xarray as xr

    spec = {
        "name": "pegase 1354 fault",
        "network": "case1354pegase",
        "t_end": 0.3,
        "n_eval": 31,
        "disturbances": [{"kind": "bus_fault", "bus": "bus9", "t_fault": 0.05, "t_clear": 0.1}],
        "methods": [
            {"method": "raptor", "options": {"rtol": 1e-5}},
            {"method": "radau", "options": {"rtol": 1e-5}},
        ],
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAPTORGRID_")}
    env["RAPTORGRID_JAX_CACHE_DIR"] = str(jax_cache_dir)  # only to share compilations
    cli = Path(sys.executable).with_name("raptorgrid")
    done = subprocess.run(
        [str(cli), "run", "spec.json", "--workers", "1"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=500,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "finished: 2 succeeded, 0 failed" in output, output[-3000:]
    store = str(tmp_path / "raptorgrid-data" / "zarr" / "campaign_1.zarr")
    runs = [xr.open_zarr(store, group=f"run_{i}").load() for i in (1, 2)]
    assert {ds.attrs["method"] for ds in runs} == {"raptor", "radau"}
    speed = "omega[gen123]"
    a, b = (ds.x.sel(state=speed).values for ds in runs)
    assert np.all(np.isfinite(a)) and np.max(np.abs(a - 1.0)) > 1e-6  # the fault moved it
    np.testing.assert_allclose(a, b, atol=1e-5)  # the two methods agree


def test_sparse_algebraic_newton_matches_the_dense_one():
    """The build's algebraic Newton on a sparse g_z (above ``DENSE_NEWTON_MAX`` unknowns)
    converges to the dense Newton's point from the same perturbed guess."""
    import jax.numpy as jnp

    from models.cases.equilibrium import newton_z, sparse_newton_z

    system = build_system("ieee39")
    p = {k: jnp.asarray(v) for k, v in system.params.items()}
    guess = np.asarray(system.z0) * (
        1 + 1e-3 * np.random.default_rng(2).standard_normal(system.n_z)
    )
    dense = newton_z(system.g, system.x0, guess, p)
    sparse = sparse_newton_z(system.g, system.x0, guess, p)
    assert np.abs(guess - system.z0).max() > 1e-4  # the guess was off
    assert np.abs(sparse - dense).max() <= 1e-12
    assert np.abs(np.asarray(system.g(system.x0, jnp.asarray(sparse), p))).max() <= 1e-12
