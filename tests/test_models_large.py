"""Planning-size networks (pandapower's case_illinois200, case300, case1354pegase,
case2869pegase): built at their power-flow equilibrium, small-signal stable by the sparse
shift-invert scan, sizes as stored, and every campaign generator expands on them."""

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
