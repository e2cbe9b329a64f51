"""The device loop of RAPTOR (``solvers.raptor.device``) against runs alone, on the CPU."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from models.disturbances import BusFault
from models.library import build_system
from models.scenarios import make_scenario
from models.sparsity import jacobian_structure
from solvers import solve
from solvers.raptor.device import solve_raptor_device
from solvers.raptor.options import RaptorOptions
from solvers.raptor.schur import SchurLinalg
from solvers.shifted_lu import DenseLinalg


@pytest.fixture(scope="module")
def wscc9():
    return build_system("wscc9")


def test_block_schur_solves_as_dense(wscc9) -> None:
    structure, _, _ = jacobian_structure(wscc9)
    schur, dense = SchurLinalg(structure, 2), DenseLinalg(structure, 2)
    assert schur.full.shape[3] < structure.n  # an interface smaller than the system
    jv = jnp.asarray(structure.values(structure.x0, structure.z0, structure.p0))
    shifts = jnp.array([0.02 + 0.01j, 0.05 - 0.03j])
    rhs = np.random.default_rng(0).standard_normal((2, structure.n, 3)) + 0j
    got = schur.solve_shifted(schur.factor_shifted(jv, shifts, {}, "slots"), rhs)
    want = dense.solve_shifted(dense.factor_shifted(jv, shifts, {}, "slots"), rhs)
    assert np.max(np.abs(got - want)) <= 1e-10 * np.max(np.abs(want))


@pytest.mark.slow  # one compile of the whole device loop (about 30 s of CPU)
def test_members_agree_with_runs_alone(wscc9) -> None:
    """Two faults with different clearing times in one program: each member takes the
    intervals of its run alone (same counts, ends within 1e-6 relative) and its grid states agree
    with it well inside the tolerance (they differ by round-off amplified through the error
    control, not by a different method)."""
    scenarios = [
        make_scenario(
            wscc9,
            BusFault(bus=bus, t_fault=0.05, t_clear=t_clear),
            t_end=0.25,
            n_eval=31,
        )
        for bus, t_clear in (("bus7", 0.1), ("bus5", 0.12))
    ]
    batch = solve_raptor_device(wscc9, scenarios, RaptorOptions())
    assert batch.succeeded.all()
    for k, scenario in enumerate(scenarios):
        alone = solve(wscc9, scenario, "raptor")
        assert (batch.accepted[k], batch.rejected[k]) == (
            alone.stats.accepted,
            alone.stats.rejected,
        )
        ends = np.unique(alone.t)[1:]
        mine = batch.t_accepted[k][: batch.accepted[k]]
        assert np.max(np.abs(mine - ends) / ends) <= 1e-6
        assert np.max(np.abs(batch.x_eval[k] - alone.x_eval)) <= 1e-6
