"""One driver for every step-by-step method: a generator of accepted advances, consumed whole by
``solve`` or one advance at a time by ``solvers.streaming.simulate_steps``.

A *stepper* integrates a scenario segment by segment (``solvers.trajectory.segments``), records
accepted points and dense samples in a ``TrajectoryBuilder``, counts its work in ``Stats`` and
yields one ``Advance`` per accepted step. A numerical failure is raised inside the stepper as
``StepFailure`` (or ``AlgebraicSolveError``) and turned here into a failed ``SolveResult``: both
consumers see the same result, counters and messages.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from models.dae import DAESystem, Scenario
from models.kernels import Kernels
from solvers.reduced import AlgebraicSolveError, NonFiniteError, ReducedODE
from solvers.result import SolveResult, Stats
from solvers.status import FailureReason, RunStatus
from solvers.trajectory import Segment, TrajectoryBuilder, failure_message


@dataclass(frozen=True)
class Advance:
    """One accepted advance: the state at its end and the segment's evaluator (whose parameters
    give the outputs at this point)."""

    t: float
    x: np.ndarray
    z: np.ndarray
    ode: ReducedODE


class StepFailure(Exception):
    """A numerical failure at time ``t``; becomes a failed result with ``reason``."""

    def __init__(self, reason: FailureReason, detail: str, t: float) -> None:
        super().__init__(detail)
        self.reason, self.detail, self.t = reason, detail, t


StopRule = Callable[[Advance], "str | None"]
"""Called with every accepted advance; a reason (not None) ends the run there: it succeeds,
the reason is its message and a warning, and the samples after that time stay NaN (e.g. a
CCT probe once its verdict cannot change)."""


class Stepper(Protocol):
    def __call__(
        self,
        system: DAESystem,
        scenario: Scenario,
        options: Any,
        stats: Stats,
        builder: TrajectoryBuilder,
    ) -> Generator[Advance, None, None]: ...


def initial_state(system: DAESystem, scenario: Scenario) -> tuple[np.ndarray, np.ndarray]:
    """The scenario's (x0, z0), defaulting to the system's equilibrium."""
    x = np.array(system.x0 if scenario.x0 is None else scenario.x0, dtype=float)
    z = np.array(system.z0 if scenario.z0 is None else scenario.z0, dtype=float)
    return x, z


def begin_segment(
    system: DAESystem,
    kernels: Kernels,
    segment: Segment,
    x: np.ndarray,
    z: np.ndarray,
    stats: Stats,
    builder: TrajectoryBuilder,
) -> tuple[ReducedODE, np.ndarray]:
    """The segment's evaluator and its consistent starting z, re-solved from g(x, z, p) = 0 with
    the segment's parameters (after an event they changed and x is continuous; at the start it
    only polishes the given z0); the starting point is recorded (the post-event side of an
    event)."""
    ode = ReducedODE(system, kernels, segment.params, z, stats)
    z = ode.solve_z(x)
    if segment.event is not None:
        builder.events.append({"time": segment.t_start, "label": segment.event.label})
    builder.accept(segment.t_start, x, z)
    return ode, z


REST_FRACTION = 1e-3
"""A segment is *at rest* when its starting drift over the whole segment, |x_i'| (t_end -
t_start), is at most this fraction of every state's error tolerance atol + rtol |x_i|."""


def at_rest(xdot: np.ndarray, x: np.ndarray, span: float, rtol: float, atol: float) -> bool:
    """Whether a segment of ``span`` seconds starting at ``x`` with derivative ``xdot`` is at rest
    (``REST_FRACTION``): the exact solution then stays within a thousandth of the tolerance of
    ``x`` over the segment (to first order), so keeping the state is an accepted advance."""
    bound = REST_FRACTION * (atol + rtol * np.abs(x))
    return bool(np.all(np.abs(xdot) * span <= bound))


def rest_advance(
    ode: ReducedODE,
    t_start: float,
    t_end: float,
    x: np.ndarray,
    z: np.ndarray,
    stats: Stats,
    builder: TrajectoryBuilder,
    *,
    last: bool,
) -> Advance:
    """One accepted advance over a segment at rest (``at_rest``): the state is kept, the samples
    in the segment are the starting point.

    Why: SciPy's BDF fails from an exact equilibrium (its Newton rate test divides round-off by
    round-off; docs/models.md, the IEEE 14 PSS/E campaign with every method), and no method
    should spend steps on a segment whose solution is constant to far below its tolerance."""
    builder.accept(t_end, x, z)
    idx = builder.sample_indices(t_start, t_end, last)
    builder.x_eval[idx], builder.z_eval[idx] = x, z
    builder.y_eval[idx] = ode.outputs(x, z)
    stats.accepted += 1
    return Advance(float(t_end), np.array(x), np.array(z), ode)


class StepRun:
    """Iterate to receive each ``Advance``; when the iteration ends, ``result`` holds the
    ``SolveResult`` (failed with its reason if a numerical failure stopped it)."""

    def __init__(
        self,
        stepper: Stepper,
        system: DAESystem,
        scenario: Scenario,
        options: Any,
        *,
        method: str,
        until: StopRule | None = None,
    ) -> None:
        self.stepper, self.system, self.scenario = stepper, system, scenario
        self.options, self.method, self.until = options, method, until
        self.stats = Stats()
        self.builder = TrajectoryBuilder(system, scenario, scenario.evaluation_grid())
        self._result: SolveResult | None = None

    @property
    def result(self) -> SolveResult:
        if self._result is None:
            raise RuntimeError("the run has not finished: iterate over it first")
        return self._result

    def __iter__(self) -> Iterator[Advance]:
        start = time.perf_counter()
        status, reason, message = RunStatus.SUCCEEDED, None, ""
        steps = self.stepper(self.system, self.scenario, self.options, self.stats, self.builder)
        try:
            for advance in steps:
                yield advance
                stop = self.until(advance) if self.until is not None else None
                if stop is not None:
                    steps.close()
                    message = f"stopped at t = {advance.t:.6g} s: {stop}"
                    self.builder.warnings.append(message)
                    break
        except StepFailure as failure:
            status, reason = RunStatus.FAILED, failure.reason
            message = failure_message(failure.reason, failure.detail, failure.t)
        except NonFiniteError as error:
            status, reason = RunStatus.FAILED, FailureReason.NON_FINITE
            message = failure_message(reason, str(error), error.t)
        except AlgebraicSolveError as error:
            status, reason = RunStatus.FAILED, FailureReason.ALGEBRAIC_SOLVE_FAILED
            t_fail = self.builder.t[-1] if self.builder.t else self.scenario.t0
            message = failure_message(reason, str(error), t_fail)
        # compile time is reported on its own, not as solving
        elapsed = time.perf_counter() - start
        overhead = self.stats.compile_seconds + self.stats.load_seconds
        self.stats.solve_seconds = max(0.0, elapsed - overhead)
        self._result = self.builder.result(
            method=self.method,
            options=self.options.model_dump(),
            stats=self.stats,
            status=status,
            reason=reason,
            message=message,
        )


def run_stepper(
    stepper: Stepper,
    system: DAESystem,
    scenario: Scenario,
    options: Any,
    *,
    method: str,
    progress: Callable[[float], None] | None = None,
    until: StopRule | None = None,
) -> SolveResult:
    """Run ``stepper`` to the end (or until ``until`` gives a reason), calling ``progress``
    after each advance; return the result."""
    run = StepRun(stepper, system, scenario, options, method=method, until=until)
    for advance in run:
        if progress is not None:
            progress(advance.t)
    return run.result
