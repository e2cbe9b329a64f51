"""``solve``: the one public entry point of the numerical core."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from models.dae import DAESystem, Scenario
from solvers.catalogue import get_method
from solvers.result import SolveResult
from solvers.stepping import run_stepper

ProgressCallback = Callable[[float], None]
"""Called with the simulated time after each accepted advance; it may raise to stop the run
(e.g. ``raptorgrid`` raises on cancellation), and the exception propagates to the caller."""


def solve(
    system: DAESystem,
    scenario: Scenario,
    method: str,
    *,
    progress: ProgressCallback | None = None,
    **options: Any,
) -> SolveResult:
    """Integrate ``scenario`` on ``system`` with ``method`` (a key of ``solvers.METHODS``).

    Options are validated against the method's schema: an unknown method raises
    ``UnknownMethodError`` listing the valid ones, a bad option raises pydantic's
    ``ValidationError`` naming the field. A numerical failure is *not* an exception: it is a
    result with ``status == RunStatus.FAILED``, a ``reason`` and a message saying what to try.
    """
    spec = get_method(method)
    typed = spec.options.model_validate(options)
    return run_stepper(
        spec.step_function(), system, scenario, typed, method=method, progress=progress
    )
