"""SciPy's adaptive integrators on the reduced ODE, driven step by step (Radau and BDF on large
networks: on the DAE itself, ``solvers.scipy_dae``).

Stepping the ``OdeSolver`` object directly (not ``solve_ivp``) lets the caller see every accepted
step (progress, cancellation, streaming), restarts integration exactly at each event with a
consistent algebraic re-solve, and counts work that ``solve_ivp`` does not report (rejected
attempts and Newton iterations, derived exactly per class in ``solvers.scipy_work``). The
implicit methods get the exact reduced Jacobian unless ``exact_jacobian=False``; the Newton work
inside every RHS and Jacobian evaluation is counted by ``ReducedODE``.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator

import numpy as np
from scipy.integrate import BDF, DOP853, LSODA, RK45, OdeSolver, Radau
from scipy.sparse import csc_matrix

from models.dae import DAESystem, Scenario
from models.kernels import kernels_for
from solvers.catalogue import ExplicitRungeKuttaOptions, ImplicitRungeKuttaOptions
from solvers.reduced import ReducedODE
from solvers.result import Stats
from solvers.scipy_dae import dae_steps, embedding_stable
from solvers.scipy_work import WorkMeter
from solvers.status import FailureReason
from solvers.stepping import (
    Advance,
    StepFailure,
    at_rest,
    begin_segment,
    initial_state,
    rest_advance,
)
from solvers.trajectory import TrajectoryBuilder, check_state, segments

SOLVER_CLASSES: dict[str, type[OdeSolver]] = {
    "radau": Radau,
    "bdf": BDF,
    "lsoda": LSODA,
    "rk45": RK45,
    "dop853": DOP853,
}
"""Method name -> SciPy class; the implicit ones (Radau, BDF, LSODA) accept a Jacobian."""
IMPLICIT = frozenset({"radau", "bdf", "lsoda"})
"""Methods that take ``jac``."""
SPARSE_CAPABLE = frozenset({"radau", "bdf"})
"""Methods whose SciPy class factorizes a sparse Jacobian with SuperLU (LSODA needs it dense)."""
DAE_CAPABLE = frozenset({"radau", "bdf"})
"""Methods that integrate the epsilon-embedded DAE (``solvers.scipy_dae``)."""
AUTO_DAE_MIN_N = 400
"""``formulation='auto'`` integrates the DAE above this many unknowns (n_x + n_z), where it
costs less than the reduced ODE (measured: docs/measurements.md, ``AUTO_DAE_MIN_N``)."""
SPARSE_MIN_STATES = 150
"""From this many states on, a Jacobian with at most ``SPARSE_MAX_DENSITY`` non-zeros is handed
over in CSC form. The dq networks' reduced Jacobians are block-local (IEEE 118 dq: 1341 states);
a dense complex LU of that size costs seconds, SuperLU milliseconds."""
SPARSE_MAX_DENSITY = 0.1


class _SparseWhenSparse:
    """The exact Jacobian, returned as ``scipy.sparse.csc_matrix`` when the first evaluation
    is sparse enough (SciPy picks dense or sparse LU from the first call, so the choice is made
    once and kept). Where the kernels take the reduced Jacobian by its coloured pattern
    (``models.kernels``, dq networks) the pattern decides and the CSC matrix is built from the
    entries alone."""

    def __init__(self, ode: ReducedODE) -> None:
        self.ode = ode
        pattern = ode.jacobian_pattern
        self.sparse: bool | None = (
            None if pattern is None else pattern.red_nnz <= SPARSE_MAX_DENSITY * pattern.n_x**2
        )

    def __call__(self, t: float, x: np.ndarray):  # noqa: ANN204
        if self.sparse:
            return self.ode.sparse_jacobian(t, x)
        jac = self.ode.jacobian(t, x)
        if self.sparse is None:
            self.sparse = bool(np.count_nonzero(jac) <= SPARSE_MAX_DENSITY * jac.size)
        return csc_matrix(jac) if self.sparse else jac


LSODA_ISTATE_MEANING = {
    -1: "excess work done on this call",
    -2: "excess accuracy requested (tolerances too small)",
    -3: "illegal input detected",
    -4: "repeated error test failures",
    -5: "repeated convergence failures (perhaps bad Jacobian or wrong tolerances)",
    -6: "an error weight became zero (atol = 0 and a state vanished)",
    -7: "work space insufficient",
}
"""ODEPACK's LSODA istate codes (its documentation's wording)."""

ScipyOptions = ImplicitRungeKuttaOptions | ExplicitRungeKuttaOptions


def scipy_steps(method: str):
    """The stepper (``solvers.stepping.Stepper``) of SciPy method ``method``."""
    solver_class = SOLVER_CLASSES[method]

    def stepper(
        system: DAESystem,
        scenario: Scenario,
        options: ScipyOptions,
        stats: Stats,
        builder: TrajectoryBuilder,
    ) -> Iterator[Advance]:
        if _formulation(system, method, options) == "dae":
            yield from dae_steps(method)(system, scenario, options, stats, builder)
            return
        kernels, compile_seconds = kernels_for(system)
        stats.compile_seconds += compile_seconds
        x, z = initial_state(system, scenario)
        for segment in segments(system, scenario):
            ode, z = begin_segment(system, kernels, segment, x, z, stats, builder)
            last = segment.t_end >= scenario.t_end
            span = segment.t_end - segment.t_start
            if at_rest(ode.rhs(segment.t_start, x), x, span, options.rtol, options.atol):
                yield rest_advance(
                    ode, segment.t_start, segment.t_end, x, z, stats, builder, last=last
                )
                continue
            x, z = yield from _segment_steps(
                solver_class,
                method,
                ode,
                segment.t_start,
                segment.t_end,
                x,
                options,
                stats,
                builder,
                is_last=last,
            )

    return stepper


def _formulation(system: DAESystem, method: str, options: ScipyOptions) -> str:
    """``reduced`` or ``dae`` for this run (``ImplicitRungeKuttaOptions.formulation``)."""
    requested = getattr(options, "formulation", "reduced")
    if requested == "dae" and method not in DAE_CAPABLE:
        raise StepFailure(
            FailureReason.INVALID_INPUT,
            f"formulation 'dae' is available for {sorted(DAE_CAPABLE)}, not {method} (it needs "
            "a sparse LU); use formulation 'reduced'",
            0.0,
        )
    if requested == "auto":
        large = system.n_x + system.n_z > AUTO_DAE_MIN_N
        usable = large and method in DAE_CAPABLE and embedding_stable(system) is not False
        return "dae" if usable else "reduced"
    if requested == "dae" and embedding_stable(system) is False:
        raise StepFailure(
            FailureReason.INVALID_INPUT,
            f"formulation 'dae' integrates eps z' = g(x, z), which needs every eigenvalue of g_z "
            f"in the left half-plane; system {system.name!r} has some in the right half-plane, "
            "so the embedded ODE grows without bound at tight tolerances: use formulation "
            "'reduced' or the method 'ida'",
            0.0,
        )
    return requested


def _segment_steps(
    solver_class: type[OdeSolver],
    method: str,
    ode: ReducedODE,
    t_start: float,
    t_end: float,
    x: np.ndarray,
    options: ScipyOptions,
    stats: Stats,
    builder: TrajectoryBuilder,
    *,
    is_last: bool,
) -> Generator[Advance, None, tuple[np.ndarray, np.ndarray]]:
    exact_jacobian = method in IMPLICIT and getattr(options, "exact_jacobian", False)
    differenced = method in IMPLICIT and not exact_jacobian
    meter = WorkMeter(ode, len(x), finite_difference_jacobian=differenced)
    jac = ode.jacobian
    if exact_jacobian and method in SPARSE_CAPABLE and len(x) >= SPARSE_MIN_STATES:
        jac = _SparseWhenSparse(ode)
    kwargs = {"jac": jac if exact_jacobian else None} if method in IMPLICIT else {}
    solver = solver_class(
        meter.rhs,
        t_start,
        x,
        t_end,
        rtol=options.rtol,
        atol=options.atol,
        first_step=options.first_step,
        max_step=options.max_step if options.max_step is not None else np.inf,
        **kwargs,
    )
    z = ode.z.copy()
    while solver.status == "running":
        meter.begin(solver)
        message = solver.step()
        if solver.status == "failed":
            raise StepFailure(*_failure(solver, method, message), solver.t)
        work = meter.end(solver)
        stats.accepted += work.accepted
        stats.rejected += work.attempts - work.accepted
        stats.newton_iterations += work.newton_iterations
        stats.lu_factorizations += work.lu_factorizations
        bad = check_state(solver.y)
        if bad is not None:
            raise StepFailure(bad, "the state is no longer finite and bounded", solver.t)
        if stats.accepted > options.max_steps:
            raise StepFailure(
                FailureReason.MAX_STEPS, f"more than {options.max_steps} accepted steps", solver.t
            )
        z = ode.solve_z(solver.y)
        builder.accept(solver.t, solver.y, z)
        done = solver.status == "finished"
        dense = solver.dense_output()
        fill_samples(builder, ode, solver.t_old, solver.t, dense, last=done and is_last)
        yield Advance(float(solver.t), np.array(solver.y), z, ode)
    return np.array(solver.y), z


def _failure(solver: OdeSolver, method: str, message: str | None) -> tuple[FailureReason, str]:
    if isinstance(solver, LSODA):
        istate = int(solver._lsoda_solver._integrator.istate)
        meaning = LSODA_ISTATE_MEANING.get(istate, "unknown istate")
        reason = FailureReason.NEWTON_FAILED if istate == -5 else FailureReason.STEP_SIZE_TOO_SMALL
        return reason, f"{method}: LSODA istate {istate}, {meaning}"
    return FailureReason.STEP_SIZE_TOO_SMALL, f"{method}: {message}"


def fill_samples(
    builder: TrajectoryBuilder, ode: ReducedODE, t_lo: float, t_hi: float, dense, *, last: bool
) -> None:
    """Dense samples in [t_lo, t_hi) (closed when ``last``) from the step's interpolant, with z
    re-solved consistently at each sample (warm-started along the samples)."""
    z_guess = ode.z.copy()
    for i in builder.sample_indices(t_lo, t_hi, last):
        xi = dense(builder.t_eval[i])
        zi = ode.solve_z(xi, z_guess)
        z_guess = zi
        builder.x_eval[i], builder.z_eval[i] = xi, zi
        builder.y_eval[i] = ode.outputs(xi, zi)
