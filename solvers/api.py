"""``solve``: the one public entry point of the numerical core."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from models.dae import DAESystem, Scenario
from solvers.catalogue import get_method
from solvers.result import SolveResult
from solvers.stepping import StopRule, run_stepper

ProgressCallback = Callable[[float], None]
"""Called with the simulated time after each accepted advance; it may raise to stop the run
(e.g. ``raptorgrid`` raises on cancellation), and the exception propagates to the caller."""


def solve(
    system: DAESystem,
    scenario: Scenario,
    method: str,
    *,
    progress: ProgressCallback | None = None,
    until: StopRule | None = None,
    **options: Any,
) -> SolveResult:
    """Integrate ``scenario`` on ``system`` with ``method`` (a key of ``solvers.METHODS``).

    Options are validated against the method's schema: an unknown method raises
    ``UnknownMethodError`` listing the valid ones, a bad option raises pydantic's
    ``ValidationError`` naming the field. A numerical failure is *not* an exception: it is a
    result with ``status == RunStatus.FAILED``, a ``reason`` and a message saying what to try.
    ``until`` (``solvers.stepping.StopRule``) may end a run early once the caller knows enough.
    """
    spec = get_method(method)
    typed = spec.options.model_validate(options)
    return run_stepper(
        spec.step_function(), system, scenario, typed, method=method, progress=progress,
        until=until,
    )  # fmt: skip


def solve_batch(
    system: DAESystem, scenarios: list[Scenario], method: str, **options: Any
) -> list[SolveResult]:
    """``solve`` for several scenarios of one system with one method and option set, in order.

    Where the method allows it the scenarios are integrated together, vectorized across them
    (``solvers.trapezoid_batch``: the fixed-step trapezoid; ``solvers.raptor.batch``: RAPTOR
    with dense linear algebra); otherwise, and for any member that fails in the batch, one
    after the other with ``solve``: the results are the ones ``solve`` gives, to round-off. A
    batched member's ``solve_seconds`` and ``compile_seconds`` are its share of the batch's."""
    typed = get_method(method).options.model_validate(options)
    results: list[SolveResult | None] = [None] * len(scenarios)
    solver = batch_solver(system, method, typed) if len(scenarios) > 1 else None
    if solver is not None:
        results = solver(system, scenarios, typed)
    return [
        result if result is not None else solve(system, scenario, method, **options)
        for scenario, result in zip(scenarios, results, strict=True)
    ]


def batch_solver(system: DAESystem, method: str, typed_options: Any) -> Callable | None:
    """The function that solves ``method``'s scenarios on ``system`` together, or None where
    the method (with these options, at this size) goes one run after the other."""
    from solvers import trapezoid_batch

    if trapezoid_batch.batchable(system, method, typed_options):
        return functools.partial(trapezoid_batch.solve_trapezoid_batch, method=method)
    return None  # RAPTOR's lockstep batch does not pay yet: solvers/raptor/batch.py says why
