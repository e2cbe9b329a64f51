"""SUNDIALS IDA (through scikit-sundae) on the DAE itself: y = (x, z) solved together.

The residual is F(t, y, y') = [x' - f(x, z, p); g(x, z, p)] with z declared algebraic; its
iteration matrix dF/dy + cj dF/dy' = [[cj I - f_x, -f_z], [g_x, g_z]] comes from JAX autodiff
(exact), so IDA never differences it. Residual, iteration matrix and the consistent initial
derivative (x' = f, z' = -g_z^{-1} g_x f) are compiled once per system.

IDA is driven one internal step at a time (``IDA_ONE_STEP`` with ``tstop`` at the segment end),
restarted at each event (``IDAReInit``) from the re-solved consistent z. Samples strictly inside a
step come from IDA's own interpolant (``IDA_NORMAL`` with t inside the last step), with z then
re-solved on the host; step points and samples at step ends use IDA's (x, z) with z re-solved.

Counters (scikit-sundae exposes only IDA's residual and Jacobian counts, so the rest is read from
the residual calls, as for SciPy's classes):

* accepted: one per ``IDA_ONE_STEP`` return that advanced t (one internal step each);
* rejected: IDA evaluates the residual only at t_n + h of the attempt in progress (t_n is moved
  before the nonlinear solve and restored on failure), and every retry after an error-test or
  convergence failure shrinks h; so attempts = distinct residual times after t_old, rejected =
  attempts - 1;
* Newton iterations: SUNDIALS' Newton solver evaluates the residual exactly once per iteration
  (and the Jacobian is ours, not difference quotients), so iterations = residual calls in the step;
* RHS evaluations: one f per residual call; Jacobian evaluations = factorizations = calls of the
  Jacobian function (IDA's linear solver factors once per setup);

The linear solver is dense LAPACK, or on networks above 200 unknowns (``linear_solver``)
SUNDIALS' sparse direct solver (SuperLU_MT) on the network's Jacobian pattern, its entries from
``models.sparsity`` (one JVP per colour).
* algebraic iterations: the host re-solves of z (segment starts, step points, samples).
"""

from __future__ import annotations

import warnings
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import models.jaxconfig  # noqa: F401
from models.dae import DAESystem, Scenario
from models.executables import compiled_once
from models.kernels import as_device_params, kernels_for
from models.sparsity import JacobianStructure, jacobian_structure
from solvers.catalogue import IdaOptions
from solvers.dae_eval import DAEEvaluator, point_kernels
from solvers.reduced import ReducedODE
from solvers.result import Stats
from solvers.shifted_lu import choose_backend
from solvers.status import FailureReason
from solvers.stepping import Advance, StepFailure, begin_segment, initial_state
from solvers.trajectory import TrajectoryBuilder, check_state, segments

REQUIREMENT = "scikit-sundae>=1.2"
"""The package that provides IDA (optional: the method fails with this hint when it is absent)."""
IDA_TSTOP_RETURN = 1
"""IDA's flag for a return exactly at the stop time."""
_REASONS = {
    -1: FailureReason.MAX_STEPS,
    -2: FailureReason.STEP_SIZE_TOO_SMALL,
    -3: FailureReason.STEP_SIZE_TOO_SMALL,
    -4: FailureReason.NEWTON_FAILED,
    -5: FailureReason.NEWTON_FAILED,
    -6: FailureReason.NEWTON_FAILED,
    -7: FailureReason.NEWTON_FAILED,
    -8: FailureReason.NON_FINITE,
    -9: FailureReason.NON_FINITE,
    -12: FailureReason.NON_FINITE,
    -14: FailureReason.NON_FINITE,
}
"""IDA return flag -> failure reason (others: INTERNAL_ERROR)."""


@dataclass(frozen=True)
class IdaKernels:
    residual: Any
    iteration_matrix: Any
    derivative: Any


def _kernel_functions(system: DAESystem):
    f, g = system.f, system.g
    f_x, f_z = jax.jacfwd(f, argnums=0), jax.jacfwd(f, argnums=1)
    g_x, g_z = jax.jacfwd(g, argnums=0), jax.jacfwd(g, argnums=1)

    def residual(x, z, xp, p):
        return jnp.concatenate([xp - f(x, z, p), g(x, z, p)])

    def iteration_matrix(x, z, p, cj):
        top = jnp.concatenate([cj * jnp.eye(x.size) - f_x(x, z, p), -f_z(x, z, p)], axis=1)
        bottom = jnp.concatenate([g_x(x, z, p), g_z(x, z, p)], axis=1)
        return jnp.concatenate([top, bottom], axis=0)

    def derivative(x, z, p):
        xp = f(x, z, p)
        zp = -jnp.linalg.solve(g_z(x, z, p), g_x(x, z, p) @ xp)
        return jnp.concatenate([xp, zp])

    return {"residual": residual, "iteration_matrix": iteration_matrix, "derivative": derivative}


def ida_kernels(system: DAESystem) -> tuple[IdaKernels, float, float]:
    """The compiled IDA kernels of ``system`` and the seconds this call spent compiling and
    loading them (``models.executables``: kept in this process, loaded by other processes)."""

    def examples() -> dict[str, tuple]:  # only on a miss: no device transfers per solve
        x = jnp.asarray(system.x0, jnp.float64)
        z = jnp.asarray(system.z0, jnp.float64)
        p = as_device_params(system.params)
        return {
            "residual": (x, z, x, p),
            "iteration_matrix": (x, z, p, jnp.asarray(1.0)),
            "derivative": (x, z, p),
        }

    compiled, compile_s, load_s = {}, 0.0, 0.0
    for role in ("residual", "iteration_matrix", "derivative"):
        compiled[role], seconds, loading = compiled_once(
            system,
            ("ida", role),
            lambda role=role: _kernel_functions(system)[role],
            lambda role=role: examples()[role],
        )
        compile_s += seconds
        load_s += loading
    return IdaKernels(**compiled), compile_s, load_s


class _Callbacks:
    """IDA's residual and Jacobian callbacks for the current segment, with their calls recorded.

    With a ``structure`` (the sparse linear solver) the iteration matrix is written as the CSC
    entries of the network's Jacobian pattern (``models.sparsity``): [[cj I - f_x, -f_z],
    [g_x, g_z]] is J with its x-rows negated and cj added on the x-diagonal, one JVP per colour
    instead of a dense forward-mode matrix."""

    def __init__(
        self, kernels: IdaKernels, n_x: int, stats: Stats, structure: JacobianStructure | None
    ) -> None:
        self.kernels, self.n_x, self.stats = kernels, n_x, stats
        self.structure = structure
        if structure is not None:
            self.signs = np.where(structure.rows < n_x, -1.0, 1.0)
        self.p: dict | None = None
        self.t_old = -np.inf
        self.times: set[float] = set()
        self.calls = 0

    def begin(self, t_old: float) -> None:
        self.t_old, self.times, self.calls = t_old, set(), 0

    def residual(self, t, y, yp, res) -> None:
        self.calls += 1
        self.stats.rhs_evaluations += 1
        if t > self.t_old:
            self.times.add(float(t))
        n = self.n_x
        x, z, xp = jnp.asarray(y[:n]), jnp.asarray(y[n:]), jnp.asarray(yp[:n])
        res[:] = np.asarray(self.kernels.residual(x, z, xp, self.p))

    def jacobian(self, t, y, yp, res, cj, jj) -> None:
        self.stats.jacobian_evaluations += 1
        self.stats.lu_factorizations += 1
        n = self.n_x
        if self.structure is not None:
            values = self.signs * np.asarray(self.structure.values(y[:n], y[n:], self.p))
            values[self.structure.x_diagonal] += cj
            jj[:] = values
            return
        jj[:, :] = np.asarray(
            self.kernels.iteration_matrix(
                jnp.asarray(y[:n]), jnp.asarray(y[n:]), self.p, jnp.asarray(float(cj))
            )
        )


def _import_ida():
    try:
        from sksundae.ida import IDA
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise StepFailure(
            FailureReason.INVALID_INPUT,
            f"method 'ida' needs the package {REQUIREMENT!r} ({error})",
            0.0,
        ) from None
    return IDA


def ida_steps(method: str = "ida"):
    """The stepper (``solvers.stepping.Stepper``) of IDA."""

    def stepper(
        system: DAESystem,
        scenario: Scenario,
        options: IdaOptions,
        stats: Stats,
        builder: TrajectoryBuilder,
    ) -> Iterator[Advance]:
        ida_class = _import_ida()
        kernels, compile_seconds = kernels_for(system)
        dae, dae_compile, dae_load = ida_kernels(system)
        stats.compile_seconds += compile_seconds + dae_compile
        stats.load_seconds += dae_load
        structure, structure_compile, structure_load = jacobian_structure(system)
        stats.compile_seconds += structure_compile
        stats.load_seconds += structure_load
        sparse = choose_backend(structure, options.linear_solver) == "sparse"
        callbacks = _Callbacks(dae, system.n_x, stats, structure if sparse else None)
        with warnings.catch_warnings():  # with our jacfn its own sparse approximation is unused
            warnings.filterwarnings("ignore", "Custom sparse Jacobian", UserWarning)
            solver = ida_class(
                callbacks.residual,
                jacfn=callbacks.jacobian,
                algebraic_idx=list(range(system.n_x, system.n_x + system.n_z)),
                rtol=options.rtol,
                atol=options.atol,
                first_step=options.first_step or 0.0,
                max_step=options.max_step or 0.0,
                max_order=options.max_order,
                linsolver="sparse" if sparse else "dense",
                sparsity=structure.csc(np.ones(structure.nnz)) if sparse else None,
            )
        x, z = initial_state(system, scenario)
        point = point_kernels(system)
        before = point.compile_seconds + point.load_seconds
        try:
            yield from _segments(
                system, scenario, kernels, structure, point, sparse, solver, callbacks, x, z,
                options, stats, builder,
            )  # fmt: skip
        finally:  # the batched f/g of the sparse z solves compile on first use
            stats.compile_seconds += point.compile_seconds + point.load_seconds - before

    return stepper


def _segments(
    system: DAESystem,
    scenario: Scenario,
    kernels,
    structure: JacobianStructure,
    point,
    sparse: bool,
    solver,
    callbacks: _Callbacks,
    x: np.ndarray,
    z: np.ndarray,
    options: IdaOptions,
    stats: Stats,
    builder: TrajectoryBuilder,
) -> Iterator[Advance]:
    """Every segment of the scenario (an event restarts IDA)."""
    for segment in segments(system, scenario):
        ode, z = begin_segment(system, kernels, segment, x, z, stats, builder)
        # z at step ends and samples: Newton on the sparse g_z on large networks (the reduced
        # ODE's dense autodiff g_z costs seconds per call at thousands of buses)
        solve_z = ode.solve_z
        if sparse:
            evaluator = DAEEvaluator(system, segment.params, "sparse", stats, point, structure)
            solve_z = evaluator.consistent_z
        x, z = yield from _segment_steps(
            solver,
            callbacks,
            ode,
            solve_z,
            segment.t_start,
            segment.t_end,
            x,
            z,
            options,
            stats,
            builder,
            is_last=segment.t_end >= scenario.t_end,
        )


def _segment_steps(
    solver,
    callbacks: _Callbacks,
    ode: ReducedODE,
    solve_z,
    t_start: float,
    t_end: float,
    x: np.ndarray,
    z: np.ndarray,
    options: IdaOptions,
    stats: Stats,
    builder: TrajectoryBuilder,
    *,
    is_last: bool,
) -> Generator[Advance, None, tuple[np.ndarray, np.ndarray]]:
    n = len(x)
    callbacks.p = ode.p
    yp0 = np.asarray(callbacks.kernels.derivative(jnp.asarray(x), jnp.asarray(z), ode.p))
    solver.init_step(t_start, np.concatenate([x, z]), yp0)
    t, stalled = t_start, 0
    while t < t_end:
        callbacks.begin(t)
        out = solver.step(t_end, method="onestep", tstop=t_end)
        if not out.success:
            reason = _REASONS.get(int(out.status), FailureReason.INTERNAL_ERROR)
            raise StepFailure(reason, f"IDA flag {out.status}: {out.message}", float(out.t))
        t_new = float(out.t)
        if t_new <= t:
            # after interpolating samples, IDA_ONE_STEP first re-reports the step end t_n
            stalled += 1
            if stalled > 1:
                raise StepFailure(
                    FailureReason.INTERNAL_ERROR, f"IDA does not advance ({out.message})", t
                )
            continue
        stalled = 0
        stats.accepted += 1
        stats.rejected += max(0, len(callbacks.times) - 1)
        stats.newton_iterations += callbacks.calls
        x_new = np.array(out.y[:n])
        bad = check_state(x_new)
        if bad is not None:
            raise StepFailure(bad, "the state is no longer finite and bounded", t_new)
        if stats.accepted > options.max_steps:
            raise StepFailure(
                FailureReason.MAX_STEPS, f"more than {options.max_steps} accepted steps", t_new
            )
        z_new = solve_z(x_new, np.array(out.y[n:]))
        done = int(out.status) == IDA_TSTOP_RETURN or t_new >= t_end
        _fill_samples(
            solver, builder, ode, solve_z, (t, x, z), (t_new, x_new, z_new), last=done and is_last
        )
        ode.z = z_new
        builder.accept(t_new, x_new, z_new)
        t, x, z = t_new, x_new, z_new
        yield Advance(t, x, z, ode)
        if done:
            break
    return x, z


def _fill_samples(
    solver, builder: TrajectoryBuilder, ode: ReducedODE, solve_z, start, end, *, last: bool
):
    """Samples in [t0, t1) (closed when ``last``): the step points' own values at the ends, IDA's
    interpolant inside, z re-solved there."""
    t0, x0, z0 = start
    t1, x1, z1 = end
    n = len(x0)
    for i in builder.sample_indices(t0, t1, last):
        ts = float(builder.t_eval[i])
        if ts == t0:
            xi, zi = x0, z0
        elif ts >= t1:
            xi, zi = x1, z1
        else:
            out = solver.step(ts, method="normal")
            xi = np.array(out.y[:n])
            zi = solve_z(xi, np.array(out.y[n:]))
        builder.x_eval[i], builder.z_eval[i] = xi, zi
        builder.y_eval[i] = ode.outputs(xi, zi)
