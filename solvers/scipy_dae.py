"""SciPy's Radau and BDF on the semi-explicit DAE, with sparse linear algebra (large networks).

SciPy's integrators take an ODE y' = F(t, y) and no mass matrix. The reduced ODE (z eliminated,
``solvers.scipy_ivp``) keeps the exact-Jacobian advantage but its Jacobian f_x - f_z g_z^-1 g_x
fills in (15 % dense on IEEE 118, against 0.6 % for the DAE's) and every right-hand side solves
g = 0 by Newton. Here the DAE x' = f(x, z), 0 = g(x, z) is integrated in its epsilon-embedding

    x' = f(x, z),        eps z' = g(x, z),

an ODE in (x, z) whose exact Jacobian [[f_x, f_z], [g_x / eps, g_z / eps]] has the DAE's own
sparsity (the coloured Jacobian of ``models.sparsity``; SciPy factors it with SuperLU), and whose
right-hand side is one evaluation of f and g. Where g_z's eigenvalues lie in the left half-plane
(``embedding_stable``: the RMS networks; not the dq networks, for which the formulation is
refused) the algebraic variables relax to g = 0 on the time
scale eps |g_z^-1| (eps = ``EPS_PER_RTOL`` x rtol, at most ``EPS_MAX`` s): for an L-stable method
(Radau) and BDF these modes are infinitely stiff and damped in one step, and z stays within
O(eps |z'|) of the constraint (measured against the reduced ODE: docs/measurements.md,
``solvers.scipy_dae``).

Reported z at steps and samples is made consistent (sparse Newton on g_z, one iteration as a
rule), so trajectories satisfy g = 0 like every other method's.
"""

from __future__ import annotations

import weakref
from collections.abc import Generator, Iterator

import numpy as np
import scipy.sparse as sp
from scipy.integrate import BDF, OdeSolver, Radau

from models.dae import DAESystem, Scenario
from models.sparsity import JacobianStructure, jacobian_structure
from solvers.catalogue import ImplicitRungeKuttaOptions
from solvers.dae_eval import DAEEvaluator, point_kernels
from solvers.result import Stats
from solvers.scipy_work import WorkMeter
from solvers.status import FailureReason
from solvers.stepping import Advance, StepFailure, initial_state
from solvers.trajectory import TrajectoryBuilder, check_state, segments

CLASSES: dict[str, type[OdeSolver]] = {"radau": Radau, "bdf": BDF}
EPS_PER_RTOL = 1e-3
EPS_MAX = 1e-8
"""eps = min(EPS_MAX, EPS_PER_RTOL * rtol) seconds (see the module docstring)."""


def epsilon(rtol: float) -> float:
    return min(EPS_MAX, EPS_PER_RTOL * rtol)


EMBEDDING_CHECK_MAX_NZ = 2000
"""Largest n_z whose g_z spectrum ``embedding_stable`` computes (dense eigenvalues, ~1 s)."""
_STABLE: weakref.WeakKeyDictionary[DAESystem, bool | None] = weakref.WeakKeyDictionary()


def embedding_stable(system: DAESystem) -> bool | None:
    """Whether the embedding's fast subsystem eps z' = g(x, z) is stable at the system's
    equilibrium: every eigenvalue of g_z with a negative real part (then z relaxes to g = 0 on
    the time scale eps / |lambda|). When one has a positive real part the embedded ODE has
    modes growing like exp(lambda t / eps): at loose tolerances Radau's large steps damp them
    (its stability function vanishes at infinity) and the run looks right, but a tight
    tolerance resolves them and the state blows up at t ~ 60 eps (dq_ieee118, rtol 1e-10: at
    t = 7e-12 s; which networks have such modes: docs/measurements.md). Computed once per
    system with dense eigenvalues up to
    ``EMBEDDING_CHECK_MAX_NZ`` algebraic variables; None (not checked) above."""
    if system in _STABLE:
        return _STABLE[system]
    verdict: bool | None = None
    if system.n_z == 0:
        verdict = True
    elif system.n_z <= EMBEDDING_CHECK_MAX_NZ:
        structure = jacobian_structure(system)[0]
        p = {k: np.asarray(v, dtype=float) for k, v in system.params.items()}
        values = np.asarray(structure.values(structure.x0, structure.z0, p))
        g_z = structure.csc(values)[system.n_x :, system.n_x :].toarray()
        verdict = bool(np.linalg.eigvals(g_z).real.max() < 0.0)
    _STABLE[system] = verdict
    return verdict


class EmbeddedDAE:
    """Right-hand side and sparse Jacobian of the epsilon-embedding for one segment."""

    def __init__(self, evaluator: DAEEvaluator, structure: JacobianStructure, eps: float):
        self.ev, self.structure, self.eps = evaluator, structure, eps
        self.n_x = structure.n_x
        scale = np.r_[np.ones(structure.n_x), np.full(structure.n_z, 1.0 / eps)]
        self._row_scale = scale[structure.rows]

    def rhs(self, t: float, w: np.ndarray) -> np.ndarray:
        n_x = self.n_x
        f, g = self.ev.kernels.fg(w[None, :n_x], w[None, n_x:], self.ev.p)
        self.ev.stats.rhs_evaluations += 1
        return np.concatenate([f[0], g[0] / self.eps])

    def jacobian(self, t: float, w: np.ndarray) -> sp.csc_matrix:
        values = self.ev.jacobian_values(w[: self.n_x], w[self.n_x :])
        return self.structure.csc(values * self._row_scale)

    def sparsity(self) -> sp.csc_matrix:
        return self.structure.csc(np.ones(self.structure.nnz))


def dae_steps(method: str):
    """The stepper (``solvers.stepping.Stepper``) of Radau or BDF on the embedded DAE."""
    solver_class = CLASSES[method]

    def stepper(
        system: DAESystem,
        scenario: Scenario,
        options: ImplicitRungeKuttaOptions,
        stats: Stats,
        builder: TrajectoryBuilder,
    ) -> Iterator[Advance]:
        structure, compile_s, load_s = jacobian_structure(system)
        stats.compile_seconds += compile_s
        stats.load_seconds += load_s
        point = point_kernels(system)
        before = point.compile_seconds + point.load_seconds
        x, z = initial_state(system, scenario)
        try:
            for segment in segments(system, scenario):
                ev = DAEEvaluator(system, segment.params, "sparse", stats, point, structure)
                z = ev.consistent_z(x, z)
                if segment.event is not None:
                    builder.events.append({"time": segment.t_start, "label": segment.event.label})
                builder.accept(segment.t_start, x, z)
                dae = EmbeddedDAE(ev, structure, epsilon(options.rtol))
                x, z = yield from _segment_steps(
                    solver_class,
                    dae,
                    segment.t_start,
                    segment.t_end,
                    x,
                    z,
                    options,
                    stats,
                    builder,
                    is_last=segment.t_end >= scenario.t_end,
                )
        finally:  # the batched f/g compile on first use
            stats.compile_seconds += point.compile_seconds + point.load_seconds - before

    return stepper


def _segment_steps(
    solver_class: type[OdeSolver],
    dae: EmbeddedDAE,
    t_start: float,
    t_end: float,
    x: np.ndarray,
    z: np.ndarray,
    options: ImplicitRungeKuttaOptions,
    stats: Stats,
    builder: TrajectoryBuilder,
    *,
    is_last: bool,
) -> Generator[Advance, None, tuple[np.ndarray, np.ndarray]]:
    n_x = len(x)
    meter = WorkMeter(dae, n_x + len(z), finite_difference_jacobian=not options.exact_jacobian)
    jac_args = {"jac": dae.jacobian} if options.exact_jacobian else {"jac_sparsity": dae.sparsity()}
    # the tolerances apply to x and z alike (z in the same pu as the network's voltages)
    solver = solver_class(
        meter.rhs,
        t_start,
        np.concatenate([x, z]),
        t_end,
        rtol=options.rtol,
        atol=options.atol,
        first_step=options.first_step,
        max_step=options.max_step if options.max_step is not None else np.inf,
        **jac_args,
    )
    while solver.status == "running":
        meter.begin(solver)
        message = solver.step()
        if solver.status == "failed":
            method = solver_class.__name__.lower()
            raise StepFailure(FailureReason.STEP_SIZE_TOO_SMALL, f"{method}: {message}", solver.t)
        work = meter.end(solver)
        stats.accepted += work.accepted
        stats.rejected += work.attempts - work.accepted
        stats.newton_iterations += work.newton_iterations
        stats.lu_factorizations += work.lu_factorizations
        bad = check_state(solver.y[:n_x])
        if bad is not None:
            raise StepFailure(bad, "the state is no longer finite and bounded", solver.t)
        if stats.accepted > options.max_steps:
            raise StepFailure(
                FailureReason.MAX_STEPS, f"more than {options.max_steps} accepted steps", solver.t
            )
        x = np.array(solver.y[:n_x])
        z = dae.ev.consistent_z(x, solver.y[n_x:])
        builder.accept(solver.t, x, z)
        done = solver.status == "finished"
        _fill_samples(builder, dae, solver, last=done and is_last)
        yield Advance(float(solver.t), x, z, dae.ev)
    return x, z


def _fill_samples(builder: TrajectoryBuilder, dae: EmbeddedDAE, solver, *, last: bool) -> None:
    """Samples in [t_old, t) (closed when ``last``) from the step's interpolant, z made
    consistent at each (warm-started from the interpolated z)."""
    dense = solver.dense_output()
    n_x = dae.n_x
    for i in builder.sample_indices(solver.t_old, solver.t, last):
        w = dense(builder.t_eval[i])
        xi = w[:n_x]
        zi = dae.ev.consistent_z(xi, w[n_x:])
        builder.x_eval[i], builder.z_eval[i] = xi, zi
        builder.y_eval[i] = dae.ev.outputs(xi, zi)
