"""RAPTOR over a whole horizon, as a stepper of the one driver (``solvers.stepping``).

Per interval try it chooses the shape-parameter level from h * rho (rho: spectral radius of the
reduced Jacobian at the interval start, estimated on the sparse operator), the draw by the
attempt counter (a rejection redraws), and whether to continue from the previous coefficients
(same draw, smooth stretch) or start fresh (after events and rejections). The Jacobian is kept
across intervals while the chord iteration contracts fast, and the factorizations are kept
while h is also unchanged (the controller holds h when it would grow by less than
``hold_growth``, as Radau5 does); streaming, progress, time limits and failure mapping are the
driver's.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from models.dae import DAESystem, Scenario
from models.kernels import SAMPLE_BATCH
from models.sparsity import jacobian_structure
from solvers.dae_eval import DAEEvaluator, JacobianAt, point_kernels
from solvers.raptor.basis import BankSet, build_banks, collocation_points
from solvers.raptor.control import PIController, starting_interval
from solvers.raptor.interval import AttemptResult, ChordFactors, IntervalSolver
from solvers.raptor.options import RaptorOptions
from solvers.reduced import ALGEBRAIC_TOL
from solvers.result import SolveResult, Stats
from solvers.shifted_lu import ShiftedLU, choose_backend
from solvers.status import FailureReason
from solvers.stepping import Advance, StepFailure, initial_state, run_stepper
from solvers.trajectory import TrajectoryBuilder, check_state, segments

STRETCH = 1.1
"""If the remaining time to the segment end is below STRETCH * h, take it exactly (RPNN rule)."""
POWER_STEPS = 16
"""Block power-iteration steps of ``spectral_radius``: the estimate rho * c^(1/k) is within
a factor 1.5 for start-vector weights c in [1e-3, 1e3], ample for choosing a shape-parameter level
(levels are a decade of h * rho apart)."""
POWER_BLOCK = 4
"""Random start vectors of the block power iteration."""


def spectral_radius(matvec, n: int) -> float:
    """Estimate of the largest |eigenvalue| of the operator ``matvec`` (n x n; 1/s for the
    reduced Jacobian: the fastest local time scale is 1/rho) by Gelfand's formula
    rho = lim |A^k V|^(1/k) on a seeded block of start vectors, renormalized every step: k
    operator products (sparse ones here) instead of an O(n^3) eigenvalue solve, and robust to
    complex dominant pairs, where the plain power iteration's ratio oscillates."""
    if n == 0:
        return 0.0
    v = np.random.default_rng(0).standard_normal((n, POWER_BLOCK))
    v /= np.linalg.norm(v)
    log_growth = 0.0
    for _ in range(POWER_STEPS):
        v = matvec(v)
        norm = float(np.linalg.norm(v))
        if not np.isfinite(norm) or norm == 0.0:
            return 0.0 if norm == 0.0 else float("inf")
        log_growth += np.log(norm)
        v /= norm
    return float(np.exp(log_growth / POWER_STEPS))


def level_for(h_rho: float, thresholds: tuple[float, ...]) -> int:
    return int(np.searchsorted(np.asarray(thresholds), h_rho, side="right"))


def banks_for(options: RaptorOptions) -> BankSet:
    return build_banks(
        options.n_rbf,
        options.n_colloc,
        options.seed,
        tuple(options.a_max_levels),
        options.draws,
        options.continuation if options.continuation > 0 else 1e-3,
    )


def raptor_steps(method: str = "raptor"):
    """The stepper (``solvers.stepping.Stepper``) of RAPTOR."""

    def stepper(
        system: DAESystem,
        scenario: Scenario,
        options: RaptorOptions,
        stats: Stats,
        builder: TrajectoryBuilder,
    ) -> Iterator[Advance]:
        structure, structure_seconds = jacobian_structure(system)
        kernels = point_kernels(system)
        compiled_before = kernels.compile_seconds
        banks = banks_for(options)
        lu = ShiftedLU(structure, choose_backend(structure, options.linear_solver))
        solver = IntervalSolver(lu, options.n_colloc)
        x, z = initial_state(system, scenario)
        try:
            for segment in segments(system, scenario):
                ev = DAEEvaluator(system, segment.params, lu.backend, stats, kernels, structure)
                z = ev.consistent_z(x, z)
                if segment.event is not None:
                    builder.events.append({"time": segment.t_start, "label": segment.event.label})
                builder.accept(segment.t_start, x, z)
                x, z = yield from _segment(
                    solver,
                    banks,
                    ev,
                    options,
                    stats,
                    builder,
                    segment.t_start,
                    segment.t_end,
                    x,
                    z,
                    is_last=segment.t_end >= scenario.t_end,
                )
        finally:
            stats.compile_seconds += structure_seconds + kernels.compile_seconds - compiled_before
            stats.lu_factorizations += lu.factorizations
            stats.symbolic_analyses += lu.analyses

    return stepper


def run_raptor(
    system: DAESystem,
    scenario: Scenario,
    options: RaptorOptions,
    *,
    method: str = "raptor",
    progress=None,
) -> SolveResult:
    """Integrate ``scenario`` with RAPTOR (see the package docs)."""
    return run_stepper(
        raptor_steps(method), system, scenario, options, method=method, progress=progress
    )


def _segment(
    solver: IntervalSolver,
    banks: BankSet,
    ev: DAEEvaluator,
    opts: RaptorOptions,
    stats: Stats,
    builder: TrajectoryBuilder,
    t_start: float,
    t_end: float,
    x: np.ndarray,
    z: np.ndarray,
    *,
    is_last: bool,
) -> Iterator[Advance]:
    f_k = ev.f(x, z)

    def f_at(x_new: np.ndarray) -> np.ndarray:
        return ev.f(x_new, ev.consistent_z(x_new, z))

    h = opts.first_step or starting_interval(x, f_k, f_at, opts.rtol, opts.atol, opts.order_hint)
    h_cap = opts.max_interval or np.inf
    controller = PIController(
        opts.safety, opts.k_i, opts.k_p, opts.fac_min, opts.fac_max, opts.hold_growth
    )
    jac: JacobianAt | None = None
    jac_fresh = False
    chord: ChordFactors | None = None
    rho = 0.0
    draw = 0
    prev_idx, w_prev, h_prev = -1, np.zeros((opts.n_rbf, x.size)), 1.0
    t = t_start
    while t < t_end:
        h = min(h, h_cap)
        if t_end - t <= STRETCH * h:
            h = t_end - t
        if h < opts.min_interval:
            raise StepFailure(
                FailureReason.STEP_SIZE_TOO_SMALL,
                f"the interval shrank below min_interval = {opts.min_interval:g} s",
                t,
            )
        if jac is None:
            jac = ev.jacobian(x, z)
            rho, jac_fresh, chord = (
                spectral_radius(jac.algebraic.reduced_matvec, x.size),
                True,
                None,
            )
        level = level_for(h * rho, tuple(opts.level_thresholds))
        idx = banks.flat_index(level, draw)
        bank = banks.bank(level, draw)
        if chord is None or chord.h != h or chord.jac is not jac or prev_idx != idx:
            chord = solver.factorize(h, jac, bank)
        mu = opts.continuation if (idx == prev_idx and not controller.just_rejected) else 0.0
        out: AttemptResult = solver.attempt(
            ev,
            chord,
            bank,
            x,
            z,
            f_k,
            w_prev * (h / h_prev),
            mu,
            rtol=opts.rtol,
            atol=opts.atol,
            kappa=opts.chord_tol,
            implicit=opts.predictor == "linearly_implicit",
            max_newton=opts.max_newton,
        )
        if not (out.converged and out.consistent):
            if not jac_fresh:  # convergence slowed with an old Jacobian: refresh, same h
                jac = None
                continue
            stats.rejected += 1
            h = controller.rejected(h, np.inf)
            draw += 1
            continue
        if out.err > 1.0:
            stats.rejected += 1
            h = controller.rejected(h, out.err)
            draw += 1
            continue
        # accepted
        _dense_samples(ev, builder, bank, jac, t, h, x, z, out, last=is_last and t + h >= t_end)
        x, z, f_k = out.x_end, out.z_end, out.f_end
        t = t_end if t_end - (t + h) <= 1e-14 * max(1.0, abs(t_end)) else t + h
        stats.accepted += 1
        builder.accept(t, x, z)
        bad = check_state(x)
        if bad is not None:
            raise StepFailure(bad, "the state is no longer finite and bounded", t)
        if stats.accepted > opts.max_intervals:
            raise StepFailure(
                FailureReason.MAX_STEPS, f"more than {opts.max_intervals} accepted intervals", t
            )
        prev_idx, w_prev, h_prev = idx, out.w, h
        h = controller.accepted(h, out.err)
        if out.rate_max < opts.jacobian_reuse_rate:
            jac_fresh = False
        else:
            jac = None
        yield Advance(t, x, z, ev)
    return x, z


def _dense_samples(
    ev: DAEEvaluator,
    builder: TrajectoryBuilder,
    bank,
    jac: JacobianAt,
    t_k: float,
    h: float,
    x_k: np.ndarray,
    z_k: np.ndarray,
    out: AttemptResult,
    *,
    last: bool,
) -> None:
    """x from the interval's own representation at the grid points in [t_k, t_k + h) (closed
    when ``last``); z made consistent at each by simplified Newton with the interval's g_z,
    warm-started from the nearest collocation point's z (no integration); samples where that
    does not converge go through the robust solve."""
    idx = builder.sample_indices(t_k, t_k + h, last)
    if len(idx) == 0:
        return
    s = np.clip((builder.t_eval[idx] - t_k) / h, 0.0, 1.0)
    xs_all = x_k + bank.value_rows(s) @ out.y
    s_nodes = np.concatenate([[0.0], collocation_points(out.y.shape[0])])
    z_nodes = np.concatenate([z_k[None, :], out.zc])
    guesses = z_nodes[np.abs(s[:, None] - s_nodes[None, :]).argmin(axis=1)]
    for start in range(0, len(idx), SAMPLE_BATCH):
        chunk = slice(start, min(start + SAMPLE_BATCH, len(idx)))
        n = chunk.stop - chunk.start
        pad = SAMPLE_BATCH - n
        xs = np.concatenate([xs_all[chunk], np.repeat(xs_all[chunk][-1:], pad, 0)])
        guess = np.concatenate([guesses[chunk], np.repeat(guesses[chunk][-1:], pad, 0)])
        zs, _, ok = ev.simplified_newton(xs, guess, jac.algebraic)
        if not ok:
            _, g = ev.kernels.fg(xs, zs, ev.p)
            for i in np.flatnonzero(~(np.max(np.abs(g), axis=1) <= ALGEBRAIC_TOL)):
                zs[i] = ev.consistent_z(xs[i], guess[i])
        ys = ev.kernels.outputs(xs, zs, ev.p)[:n]
        xs, zs = xs[:n], zs[:n]
        where = idx[chunk]
        builder.x_eval[where], builder.z_eval[where], builder.y_eval[where] = xs, zs, ys
