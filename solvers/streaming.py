"""Step streaming: each accepted advance as it happens, for live progress and tracing.

``simulate_steps(system, scenario, method, **options)`` is the step-by-step sibling of
``solve`` (seed 001's ``simulate_steps``): the same stepper, counters and failure handling, but the
caller receives one ``StepRecord`` after every accepted step instead of waiting for the end. The
outputs of a record are evaluated at the step's own consistent z (re-solved at the accepted
state, with the parameters in force on that segment), not interpolated.

A numerical failure ends the iteration normally; ``stream.result`` is then the failed
``SolveResult`` with its reason, exactly what ``solve`` would have returned. Every method streams;
the diffrax methods, which integrate a whole event segment inside one compiled call, yield one
record per segment.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from models.dae import DAESystem, Scenario
from solvers.catalogue import get_method
from solvers.result import SolveResult
from solvers.stepping import StepRun


@dataclass(frozen=True)
class StepRecord:
    """One accepted advance: time (s), state, algebraic state and named outputs."""

    t: float
    x: np.ndarray
    z: np.ndarray
    outputs: dict[str, float]


class StepStream:
    """Iterate for ``StepRecord``s; after the iteration ends, ``result`` is the ``SolveResult``."""

    def __init__(self, run: StepRun) -> None:
        self._run = run

    def __iter__(self) -> Iterator[StepRecord]:
        names = self._run.system.output_names
        for advance in self._run:
            values = advance.ode.outputs(advance.x, advance.z)
            yield StepRecord(
                t=advance.t,
                x=advance.x,
                z=advance.z,
                outputs=dict(zip(names, map(float, values), strict=True)),
            )

    @property
    def result(self) -> SolveResult:
        return self._run.result


def simulate_steps(
    system: DAESystem, scenario: Scenario, method: str, **options: Any
) -> StepStream:
    """Stream the accepted steps of ``method`` on ``scenario`` (see module doc).

    Options are validated like ``solve``'s (unknown method or option: raises, listing the valid
    ones).
    """
    spec = get_method(method)
    typed = spec.options.model_validate(options)
    return StepStream(StepRun(spec.step_function(), system, scenario, typed, method=method))
