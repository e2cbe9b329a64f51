"""Scenarios solved together (``solve_batch``): the batched trapezoid gives each member the
result ``solve`` gives it alone, to round-off, with the same work counters, whatever the
members' event times; a member that fails in the batch gets ``solve``'s failure."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import TypeAdapter

from models.disturbances import Disturbance
from models.library import build_system
from models.scenarios import make_scenario
from solvers import RunStatus, solve, solve_batch
from solvers.trapezoid_batch import batchable, solve_trapezoid_batch

DT = 2e-3


def scenario(system, disturbance: dict, seed: int, t_end: float = 0.4, n_eval: int = 41):
    parsed = TypeAdapter(Disturbance).validate_python(disturbance)
    return make_scenario(
        system, parsed, t_end=t_end, ic_seed=seed, ic_spread=0.2, n_eval=n_eval, label=f"s{seed}"
    )


def assert_same(batched, alone) -> None:
    assert batched.status is alone.status is RunStatus.SUCCEEDED
    np.testing.assert_allclose(batched.t, alone.t, rtol=0, atol=1e-12)
    for name in ("x", "z", "x_eval", "z_eval", "y_eval"):
        np.testing.assert_allclose(getattr(batched, name), getattr(alone, name), atol=1e-11)
    for counter in ("accepted", "newton_iterations", "lu_factorizations", "rhs_evaluations"):
        assert getattr(batched.stats, counter) == getattr(alone.stats, counter), counter
    assert batched.events == alone.events


def test_members_with_different_events_match_their_solo_solves() -> None:
    system = build_system("wscc9")
    scenarios = [
        scenario(system, {"kind": "bus_fault", "bus": "bus7", "t_fault": 0.05, "t_clear": 0.1}, 0),
        scenario(system, {"kind": "bus_fault", "bus": "bus5", "t_fault": 0.1, "t_clear": 0.17}, 1),
        scenario(system, {"kind": "branch_trip", "branch": "br_6_7", "t": 0.0731}, 2, n_eval=17),
        scenario(system, {"kind": "none"}, 3, t_end=0.3),
        scenario(system, {"kind": "load_step", "bus": "bus9", "t": 0.2, "scale": 1.2}, 4),
    ]
    batched = solve_batch(system, scenarios, "trapezoid", dt=DT)
    assert batched[0].stats.compile_seconds + batched[0].stats.load_seconds >= 0.0
    for member, sc in zip(batched, scenarios, strict=True):
        assert_same(member, solve(system, sc, "trapezoid", dt=DT))
    # the members share the batch's solve time
    assert all(m.stats.solve_seconds > 0 for m in batched)


def test_delayed_members_match_their_solo_solves() -> None:
    """The delayed scheme (network stage, then controller stage, each with its own Newton
    inverse) batched: each member as ``solve`` gives it alone; a system without controller
    states is left to ``solve`` (its input error)."""
    from solvers.catalogue import TrapezoidOptions

    system = build_system("wscc9")
    assert batchable(system, "trapezoid-delayed", TrapezoidOptions())
    assert not batchable(build_system("emt_sm"), "trapezoid-delayed", TrapezoidOptions())
    scenarios = [
        scenario(system, {"kind": "bus_fault", "bus": "bus7", "t_fault": 0.05, "t_clear": 0.1}, 0),
        scenario(system, {"kind": "branch_trip", "branch": "br_6_7", "t": 0.0731}, 2, n_eval=17),
        scenario(system, {"kind": "load_step", "bus": "bus9", "t": 0.2, "scale": 1.2}, 4),
    ]
    raw = solve_trapezoid_batch(
        system, scenarios, TrapezoidOptions(dt=DT), method="trapezoid-delayed"
    )
    assert all(r is not None for r in raw)  # every member solved in the batch itself
    batched = solve_batch(system, scenarios, "trapezoid-delayed", dt=DT)
    for member, sc in zip(batched, scenarios, strict=True):
        alone = solve(system, sc, "trapezoid-delayed", dt=DT)
        assert member.method == "trapezoid-delayed"
        assert_same(member, alone)
    # the delay is real: the delayed members differ from the simultaneous scheme's
    simultaneous = solve(system, scenarios[0], "trapezoid", dt=DT)
    assert np.abs(batched[0].x_eval - simultaneous.x_eval).max() > 1e-6


def test_a_member_failing_in_the_batch_gets_the_solo_failure() -> None:
    """Newton capped at 2 iterations: the faulted member's step cannot converge, so it fails
    in the batch (None) and ``solve_batch`` reports what ``solve`` reports; the quiet member is
    unaffected."""
    system = build_system("wscc9")
    quiet = scenario(system, {"kind": "none"}, 0, t_end=0.2)
    faulted = scenario(system, {"kind": "bus_fault", "bus": "bus7", "t_fault": 0.05,
                                "t_clear": 0.1}, 1, t_end=0.2)  # fmt: skip
    options = {"dt": 0.05, "max_newton": 2, "newton_tol": 1e-13}
    from solvers.catalogue import TrapezoidOptions

    raw = solve_trapezoid_batch(system, [quiet, faulted], TrapezoidOptions(**options))
    alone = [solve(system, sc, "trapezoid", **options) for sc in (quiet, faulted)]
    batched = solve_batch(system, [quiet, faulted], "trapezoid", **options)
    for member, single, direct in zip(batched, alone, raw, strict=True):
        assert member.status is single.status
        assert member.message == single.message
        assert (direct is None) == (single.status is RunStatus.FAILED)
    assert alone[1].status is RunStatus.FAILED, "the test needs a failing member"


def test_what_is_not_batched_runs_alone() -> None:
    system = build_system("wscc9")
    scenarios = [scenario(system, {"kind": "none"}, k, t_end=0.1) for k in range(2)]
    from solvers.catalogue import TrapezoidOptions

    assert batchable(system, "trapezoid", TrapezoidOptions())
    assert not batchable(system, "trapezoid", TrapezoidOptions(linear_solver="sparse"))
    assert not batchable(system, "radau", TrapezoidOptions())
    results = solve_batch(system, scenarios, "radau", rtol=1e-6)
    for member, sc in zip(results, scenarios, strict=True):
        alone = solve(system, sc, "radau", rtol=1e-6)
        np.testing.assert_array_equal(member.x_eval, alone.x_eval)


@pytest.mark.slow
def test_ieee39_batch_matches_solo() -> None:
    """A larger network (201 unknowns, sparse KLU when alone, dense in the batch)."""
    system = build_system("ieee39")
    scenarios = [
        scenario(
            system,
            {"kind": "bus_fault", "bus": bus, "t_fault": 0.05, "t_clear": 0.1},
            k,
            t_end=0.25,
        )  # fmt: skip
        for k, bus in enumerate(["bus16", "bus4", "bus29"])
    ]
    batched = solve_batch(system, scenarios, "trapezoid", dt=DT)
    for member, sc in zip(batched, scenarios, strict=True):
        alone = solve(system, sc, "trapezoid", dt=DT)
        assert member.status is alone.status is RunStatus.SUCCEEDED
        for name in ("x", "x_eval", "z_eval", "y_eval"):
            np.testing.assert_allclose(getattr(member, name), getattr(alone, name), atol=1e-9)
        assert member.stats.accepted == alone.stats.accepted


def test_raptor_members_solved_together_match_their_solo_solves() -> None:
    """RAPTOR's lockstep batch (``solvers.raptor.batch``, dense linear algebra) runs each
    member's own control logic, so every member takes the same intervals, rejections and
    chord iterations as alone; the values differ only by the vmapped arithmetic's round-off.
    A member that fails in the batch comes back None (``solve_batch`` re-solves it alone)."""
    from solvers.raptor.batch import solve_raptor_batch
    from solvers.raptor.options import RaptorOptions

    system = build_system("wscc9")
    scenarios = [
        scenario(system, {"kind": "bus_fault", "bus": "bus7", "t_fault": 0.05, "t_clear": 0.1}, 0),
        scenario(system, {"kind": "branch_trip", "branch": "br_6_7", "t": 0.0731}, 1, n_eval=17),
        scenario(system, {"kind": "none"}, 2, t_end=0.3),
        scenario(system, {"kind": "load_step", "bus": "bus9", "t": 0.2, "scale": 1.2}, 3),
        scenario(system, {"kind": "bus_fault", "bus": "bus5", "t_fault": 0.1, "t_clear": 0.17}, 4),
    ]
    options = RaptorOptions(linear_solver="dense")
    batched = solve_raptor_batch(system, scenarios, options)
    for member, sc in zip(batched, scenarios, strict=True):
        alone = solve(system, sc, "raptor", linear_solver="dense")
        assert member is not None and member.status is alone.status is RunStatus.SUCCEEDED
        for counter in ("accepted", "rejected", "newton_iterations", "lu_factorizations",
                        "jacobian_evaluations"):  # fmt: skip
            assert getattr(member.stats, counter) == getattr(alone.stats, counter), counter
        # the interval lengths follow the error estimates, which differ by round-off
        np.testing.assert_allclose(member.t, alone.t, rtol=1e-8, atol=0)
        for name in ("x_eval", "z_eval", "y_eval"):
            np.testing.assert_allclose(getattr(member, name), getattr(alone, name), atol=1e-8)
        assert member.events == alone.events
        assert member.stats.solve_seconds > 0
    # a step-size floor above every interval: each member fails, in the batch as alone
    failing = solve_raptor_batch(system, scenarios[:2], RaptorOptions(min_interval=0.5))
    assert failing == [None, None]
    # the platform solves RAPTOR runs one after the other (the module doc has the numbers)
    from solvers.api import batch_solver

    assert batch_solver(system, "raptor", options) is None
