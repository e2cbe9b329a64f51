"""Fixed-step implicit trapezoidal rule on the DAE: ``trapezoid`` and ``trapezoid-delayed``.

``trapezoid`` solves x and z together at every step (the simultaneous formulation, one Newton
solve of [x1 - x0 - h/2 (f0 + f1); g(x1, z1)] = 0, ``solvers.trapezoid_kernel``). It is second
order, A-stable and has no error control: the cost is known before starting and the result does
not move when a tolerance is nudged.

``trapezoid-delayed`` is the partitioned scheme of EMT programs: each step solves the network
once, with the states named in ``DAESystem.controller_states`` held at their previous step's
values (a one-step delay; where a controller's output is algebraic in network states, as the
grid-following inverter's converter voltage and PLL frequency are, that part still acts at
once: docs/paper.md, emt_gfl), then advances
the controller states alone by the trapezoidal rule with the new network solution held
(``trapezoid_kernel.controller_residual``: a Newton system of the controller states only, no
network unknown). The step's output point is (x with the new controller states, z of the
network solve): z lags the controllers by one step, so g(x, z) at a step point is not zero
but O(dt) (the delay), and the scheme is first order in that coupling. The interpolated
samples between step points re-solve z as every method's do. A system without controller
states is an input error (a failed result with reason ``invalid_input``).

States behind a non-windup limiter (exciter and governor limits of the PSS/E models) are
advanced as x1 = clip(x0 + h/2 (f0 + f1_raw), low, high): the limiter's own definition, and the
form whose step equation keeps a root at the limit (``trapezoid_kernel.trapezoid_target``).

Time grid: the steps end on t0 + k dt. An event between two grid points is not moved: the step
before it is shortened to land exactly on it, and the next step ends on the grid again; the last
step is shortened the same way to end at t_end. The output points are therefore the grid, the
event times and t_end, each with its own step's (x, z). A sample of the evaluation grid between
step points is the cubic Hermite interpolant of (x, f) at the step's two ends (third order,
beyond the method's second), with z re-solved there.

Counters: accepted = steps (nothing is rejected); Newton iterations and LU factorizations as
counted inside the compiled step, a delayed step's network and controller stages together (each
factorization is one autodiff Jacobian evaluation); RHS evaluations = one f per Newton
iteration, one for f(x1, z1) after each stage and one at each segment start; algebraic
iterations = the host re-solves of z (segment starts, interpolated samples).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator

import jax.numpy as jnp
import numpy as np

from models.dae import DAESystem, Scenario
from models.kernels import kernels_for
from solvers.catalogue import TrapezoidOptions
from solvers.reduced import ReducedODE
from solvers.result import Stats
from solvers.status import FailureReason
from solvers.stepping import Advance, StepFailure, begin_segment, initial_state
from solvers.trajectory import TrajectoryBuilder, check_state, segments
from solvers.trapezoid_kernel import (
    CONVERGED,
    SparseStep,
    compiled_controller_step,
    compiled_step,
    run_step,
)

GRID_EPS = 1e-9
"""Times closer than this fraction of dt are the same grid point (floating-point noise)."""


class _Carried:
    """The factorization a stage carries between steps (dense LU factors passed in and out of
    its compiled step) and the step h it was taken at: refactored when h or the segment
    changes (``stale``), or inside the step when the chord iteration slows."""

    def __init__(self, n: int) -> None:
        self.lu = jnp.zeros((n, n), jnp.float64)
        self.piv = jnp.zeros(n, jnp.int32)
        self.h: float | None = None

    def stale(self, h: float) -> bool:
        return self.h is None or abs(h - self.h) > GRID_EPS * h

    def accept(self, out, h: float) -> None:
        self.lu, self.piv, self.h = out.lu, out.piv, h


class _Stage(_Carried):
    """The step of the states selected by ``mask`` and of z: the simultaneous step, or the
    delayed scheme's network stage (sparse: KLU's numeric factorization stays in the step's
    handle instead of the dense factors)."""

    def __init__(self, system: DAESystem, step, mask: np.ndarray, sparse: bool) -> None:
        self.mask = jnp.asarray(mask)
        self.sparse = SparseStep(system) if sparse else None
        self.step = step
        super().__init__(0 if sparse else system.n_x + system.n_z)
        # the dense step's compile or load is counted by the stepper
        self.compile_seconds = self.sparse.compile_seconds if self.sparse is not None else 0.0
        self.load_seconds = self.sparse.load_seconds if self.sparse is not None else 0.0

    def advance(self, x, z, f, h: float, p, x_held, z_held, tol, max_iter):
        """The step from (x, z, f) over h; the states outside the mask stay at ``x_held``
        (``z_held`` is not used: this stage solves z)."""
        args = (jnp.asarray(x), jnp.asarray(z), jnp.asarray(f), jnp.asarray(h), p, self.mask)
        refactor = jnp.asarray(self.stale(h))
        held = jnp.asarray(x_held)
        if self.sparse is not None:
            return self.sparse(*args, held, refactor, tol, max_iter)
        return run_step(self.step, *args, held, self.lu, self.piv, refactor, tol, max_iter)


class _ControllerStage(_Carried):
    """The delayed scheme's controller stage: the controller states alone, with the network
    stage's x and z held (``trapezoid_kernel.controller_residual``); its dense LU is of the
    controller states' size."""

    def __init__(self, system: DAESystem, index: np.ndarray) -> None:
        self.step, self.compile_seconds, self.load_seconds = compiled_controller_step(system, index)
        super().__init__(len(index))

    def advance(self, x, z, f, h: float, p, x_held, z_held, tol, max_iter):
        args = (jnp.asarray(x), jnp.asarray(z), jnp.asarray(f), jnp.asarray(h), p)
        held = (jnp.asarray(x_held), jnp.asarray(z_held))
        refactor = jnp.asarray(self.stale(h))
        return run_step(self.step, *args, *held, self.lu, self.piv, refactor, tol, max_iter)


def step_grid(t_start: float, t_end: float, t0: float, dt: float) -> np.ndarray:
    """Step end points in (t_start, t_end]: the grid t0 + k dt strictly inside, then t_end."""
    k_lo = int(np.floor((t_start - t0) / dt + GRID_EPS)) + 1
    k_hi = int(np.ceil((t_end - t0) / dt - GRID_EPS)) - 1
    inner = t0 + dt * np.arange(k_lo, k_hi + 1, dtype=float)
    inner = inner[(inner > t_start + GRID_EPS * dt) & (inner < t_end - GRID_EPS * dt)]
    return np.append(inner, t_end)


def controller_mask(system: DAESystem) -> np.ndarray:
    """1.0 for each controller state, 0.0 otherwise; an input error when there are none."""
    if not system.controller_states:
        raise StepFailure(
            FailureReason.INVALID_INPUT,
            f"trapezoid-delayed needs controller states, but system {system.name!r} declares "
            "none (DAESystem.controller_states); use 'trapezoid'",
            0.0,
        )
    unknown = [name for name in system.controller_states if name not in system.state_names]
    if unknown:
        raise StepFailure(
            FailureReason.INVALID_INPUT,
            f"controller states {unknown} are not states of system {system.name!r}",
            0.0,
        )
    return np.array([float(name in system.controller_states) for name in system.state_names])


def trapezoid_steps(method: str):
    """The stepper (``solvers.stepping.Stepper``) of ``trapezoid`` or ``trapezoid-delayed``."""
    delayed = method == "trapezoid-delayed"

    def stepper(
        system: DAESystem,
        scenario: Scenario,
        options: TrapezoidOptions,
        stats: Stats,
        builder: TrajectoryBuilder,
    ) -> Iterator[Advance]:
        controllers = controller_mask(system) if delayed else None
        kernels, compile_seconds = kernels_for(system)
        sparse = _sparse(system, options.linear_solver)
        step, step_compile, step_load = (None, 0.0, 0.0) if sparse else compiled_step(system)
        stats.compile_seconds += compile_seconds + step_compile
        stats.load_seconds += step_load
        if controllers is None:
            stages = [_Stage(system, step, np.ones(system.n_x), sparse)]
        else:
            stages = [
                _Stage(system, step, 1.0 - controllers, sparse),
                _ControllerStage(system, np.flatnonzero(controllers)),
            ]
        stats.compile_seconds += sum(stage.compile_seconds for stage in stages)
        stats.load_seconds += sum(stage.load_seconds for stage in stages)
        x, z = initial_state(system, scenario)
        for segment in segments(system, scenario):
            ode, z = begin_segment(system, kernels, segment, x, z, stats, builder)
            for stage in stages:
                stage.h = None  # a new segment refactors
            x, z = yield from _segment_steps(
                stages,
                ode,
                segment.t_start,
                segment.t_end,
                x,
                z,
                scenario,
                options,
                stats,
                builder,
                is_last=segment.t_end >= scenario.t_end,
            )

    return stepper


def _sparse(system: DAESystem, requested: str) -> bool:
    """Whether the step runs on the sparse unreduced DAE (``solvers.shifted_lu`` sizes)."""
    from solvers.shifted_lu import DENSE_MAX_N

    if requested == "auto":
        return system.n_x + system.n_z > DENSE_MAX_N
    return requested == "sparse"


def _segment_steps(
    stages: list[_Stage],
    ode: ReducedODE,
    t_start: float,
    t_end: float,
    x: np.ndarray,
    z: np.ndarray,
    scenario: Scenario,
    options: TrapezoidOptions,
    stats: Stats,
    builder: TrajectoryBuilder,
    *,
    is_last: bool,
) -> Generator[Advance, None, tuple[np.ndarray, np.ndarray]]:
    tol, max_iter = jnp.asarray(options.newton_tol), jnp.asarray(options.max_newton, jnp.int32)
    f = np.asarray(ode.kernels.f(jnp.asarray(x), jnp.asarray(z), ode.p))
    stats.rhs_evaluations += 1
    t = t_start
    grid = step_grid(t_start, t_end, scenario.t0, options.dt)
    for i, t_new in enumerate(grid):
        if stats.accepted >= options.max_steps:
            raise StepFailure(FailureReason.MAX_STEPS, f"more than {options.max_steps} steps", t)
        h = float(t_new - t)
        x_new, z_new, f_new = x, z, f
        for stage in stages:
            # each stage advances its states; the others stay at their latest values
            out = stage.advance(x, z, f, h, ode.p, x_new, z_new, tol, max_iter)
            iterations, status = int(out.iterations), int(out.status)
            stats.newton_iterations += iterations
            stats.rhs_evaluations += iterations + 1
            stats.lu_factorizations += int(out.factorizations)
            stats.jacobian_evaluations += int(out.factorizations)
            if status != CONVERGED:
                raise StepFailure(
                    FailureReason.NEWTON_FAILED,
                    f"the trapezoidal step of {h:.3g} s did not converge in {iterations} Newton "
                    "iterations even with a fresh Jacobian; reduce dt",
                    t,
                )
            stage.accept(out, h)
            x_new, z_new, f_new = np.asarray(out.x), np.asarray(out.z), np.asarray(out.f)
        stats.accepted += 1
        bad = check_state(x_new)
        if bad is not None:
            raise StepFailure(bad, "the state is no longer finite and bounded", float(t_new))
        ode.z = z_new
        builder.accept(float(t_new), x_new, z_new)
        last = is_last and i == len(grid) - 1
        _fill_samples(builder, ode, (t, x, z, f), (float(t_new), x_new, z_new, f_new), last)
        t, x, z, f = float(t_new), x_new, z_new, f_new
        yield Advance(t, x, z, ode)
    return x, z


def _fill_samples(builder: TrajectoryBuilder, ode: ReducedODE, start, end, last: bool) -> None:
    """Samples in [t0, t1) (closed when ``last``): exact at the step points, else the cubic
    Hermite interpolant of (x, f) with z re-solved."""
    t0, x0, z0, f0 = start
    t1, x1, z1, f1 = end
    h = t1 - t0
    for i in builder.sample_indices(t0, t1, last):
        ts = builder.t_eval[i]
        if abs(ts - t0) <= GRID_EPS * h:
            xi, zi = x0, z0
        elif abs(ts - t1) <= GRID_EPS * h:
            xi, zi = x1, z1
        else:
            s = (ts - t0) / h
            h00, h10 = 2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s
            h01, h11 = -2 * s**3 + 3 * s**2, s**3 - s**2
            xi = h00 * x0 + h10 * h * f0 + h01 * x1 + h11 * h * f1
            zi = ode.solve_z(xi, z1)
        builder.x_eval[i], builder.z_eval[i] = xi, zi
        builder.y_eval[i] = ode.outputs(xi, zi)
    ode.z = z1
