"""A segment that starts at an equilibrium (a scenario's quiet start before its first event) is
one advance that keeps the state, for the SciPy methods: SciPy's BDF could not integrate the
IEEE 14 PSS/E pair from its exact equilibrium at all (every N-1 and fault scenario failed at
t = 1.2 ms, before its event)."""

from __future__ import annotations

import numpy as np
import pytest

from models.disturbances import BusFault
from models.scenarios import make_scenario
from solvers import solve
from solvers.metrics import accuracy
from tests.psse_crosscheck import system

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ieee14():
    return system("ieee14_full")  # GENROU, ESST3A, EXST1, IEEEST, ST2CUT, TGOV1, IEEEG1


def test_bdf_integrates_a_fault_from_the_exact_equilibrium(ieee14) -> None:
    scenario = make_scenario(ieee14, BusFault(bus="bus4", t_fault=0.1, t_clear=0.2), t_end=0.5)
    reference = solve(ieee14, scenario, "radau", rtol=1e-10, atol=1e-12)
    bdf = solve(ieee14, scenario, "bdf", rtol=1e-6)
    assert bdf.succeeded, bdf.message
    assert accuracy(bdf, reference).state_error < 1e-4
    # the quiet 0.1 s before the fault is one advance that keeps the state exactly
    before = bdf.t_eval < 0.1
    assert before.sum() > 5
    assert np.array_equal(bdf.x_eval[before], np.broadcast_to(bdf.x[0], bdf.x_eval[before].shape))
    assert bdf.t[1] == pytest.approx(0.1)


def test_a_state_off_equilibrium_is_integrated(ieee14) -> None:
    """Initial conditions spread by 1e-3: x' is not round-off, so every method integrates."""
    scenario = make_scenario(ieee14, None, t_end=0.2, ic_seed=1, ic_spread=1e-3)
    result = solve(ieee14, scenario, "bdf", rtol=1e-6)
    assert result.succeeded and result.stats.accepted > 5
    assert not np.allclose(result.x[-1], result.x[0], rtol=0, atol=1e-9)
