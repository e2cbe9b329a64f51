"""RAPTOR over a whole horizon, as a stepper of the one driver (``solvers.stepping``).

Per interval try it chooses the shape-parameter level from h * rho (rho: spectral radius of the
reduced Jacobian at the interval start, estimated on the sparse operator), the draw (a chord
failure redraws; an accuracy rejection only shortens), and whether to continue from the
previous coefficients (same draw, smooth stretch) or start fresh (after events and
rejections). The Jacobian is kept across intervals while the chord iteration contracts fast,
and the factorizations while J and h stay (``H_KEEP``); streaming, progress, time limits and
failure mapping are the driver's. The attempt and the dense output are compiled once per
system structure, backend and shapes (``interval.compiled``).

The compiled calls go out as ``Call`` requests: a run alone serves each at once; runs solved
together (``solvers.raptor.batch``) pass them on, and the batch serves all members' calls of one
round by one vectorized dispatch. The control logic is the same code either way.
"""

from __future__ import annotations

import weakref
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from models.dae import DAESystem, Scenario
from models.kernels import SAMPLE_BATCH
from models.sparsity import JacobianStructure, jacobian_structure
from solvers.dae_eval import DAEEvaluator, point_kernels
from solvers.raptor.basis import BankSet, build_banks, collocation_points
from solvers.raptor.control import PIController, starting_interval
from solvers.raptor.interval import STATUS_CONVERGED, compiled, make_attempt, make_dense
from solvers.raptor.options import RaptorOptions
from solvers.reduced import ALGEBRAIC_TOL
from solvers.result import Stats
from solvers.shifted_lu import choose_backend, make_linalg
from solvers.status import FailureReason
from solvers.stepping import Advance, StepFailure, initial_state
from solvers.trajectory import TrajectoryBuilder, check_state, segments

STRETCH = 1.1
"""If the remaining time to the segment end is below STRETCH * h, take it exactly (RPNN rule)."""
H_KEEP = 1.2
"""While the Jacobian is kept, a proposed growth of the interval by at most this factor is not
taken, so the next attempt reuses the factorizations (Radau5's hysteresis, quot2 = 1.2)."""
POWER_STEPS = 8
"""Block power-iteration steps of ``spectral_radius``: the estimate rho * c^(1/k) is within a
factor 2.4 for start-vector weights c in [1e-3, 1e3], enough to choose a shape-parameter level
(levels are a decade of h * rho apart): 8 and 16 steps gave the same intervals on wscc9, ieee39
and ieee118 (bus faults, rtol 1e-6), and each step is a sparse g_z solve on large networks."""
POWER_BLOCK = 4
"""Random start vectors of the block power iteration."""
ATTAINABLE_RTOL = 1e-9
"""Smallest rtol RAPTOR meets within 10x (``benchmarks/raptor_attainable.py``; measured:
docs/measurements.md, ``ATTAINABLE_RTOL``): the basis
reproduces smooth trajectories only to about that level per interval
(``Bank.consistency_error``). A smaller rtol still runs, with a warning on the result."""


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


@dataclass
class Call:
    """A compiled call a run needs (``kind``: ``"attempt"`` or ``"dense"``, with its positional
    arguments); whoever serves it sets ``result`` before the run resumes."""

    kind: str
    code: _Compiled
    args: tuple
    result: Any = None
    error: Exception | None = None
    """A runtime error of the compiled code (a KLU refactorization found singular), raised
    again where the run reads the result, so the run handles it (``_refactor_failed``)."""

    def serve(self) -> None:
        try:
            self.result = getattr(self.code, self.kind)(*self.args)
        except jax.errors.JaxRuntimeError as exc:
            self.error = exc

    def output(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.result


def _served(calls: Generator, gather: bool) -> Generator:
    """Pass ``calls``' advances on; serve each ``Call`` at once, or pass it on too when
    ``gather`` (the consumer serves it). Returns what ``calls`` returns."""
    try:
        while True:
            try:
                item = next(calls)
            except StopIteration as stop:
                return stop.value
            if isinstance(item, Call) and not gather:
                item.serve()
            else:
                yield item
    finally:
        calls.close()


class _Compiled:
    """The compiled attempt and dense output of one system, backend and configuration, with
    the linear-algebra state they share (KLU handles)."""

    def __init__(self, system, structure: JacobianStructure, banks: BankSet, opts, backend):
        self.linalg = _linalg_for(structure, backend, banks.stacked["slot_owner"].shape[1])
        self.handles = self.linalg.handles()
        self.device_banks = {k: jnp.asarray(v) for k, v in banks.stacked.items()}
        n_x, n_z = system.n_x, system.n_z
        x, z = np.asarray(system.x0, float), np.asarray(system.z0, float)
        p = {k: jnp.asarray(v, jnp.float64) for k, v in system.params.items()}
        self.no_factors = _no_factors(self.linalg, structure, self.handles, self.device_banks)
        args = _attempt_args(
            x,
            z,
            x,
            1e-3,
            p,
            np.zeros(structure.nnz),
            self.handles,
            self.device_banks,
            0,
            np.zeros((opts.n_rbf, n_x)),
            0.0,
            opts,
            self.no_factors,
        )
        key = (
            "attempt",
            backend,
            opts.max_newton,
            opts.n_rbf,
            opts.n_colloc,
            self.device_banks["q"].shape[0],
            self.device_banks["slot_owner"].shape[1],
        )
        self.attempt, seconds, load = compiled(
            system, key, lambda: make_attempt(system, self.linalg, opts.max_newton), args
        )
        gz_example = jax.eval_shape(
            lambda: self.linalg.factor_algebraic(jnp.zeros(structure.nnz), self.handles)
        )
        gz_example = jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), gz_example)
        dense_args = (
            x,
            np.zeros((SAMPLE_BATCH, opts.n_colloc)),
            np.zeros((opts.n_colloc, n_x)),
            np.zeros((SAMPLE_BATCH, n_z)),
            p,
            gz_example,
        )
        self.dense, dense_seconds, dense_load = compiled(
            system,
            ("dense", backend, opts.n_colloc),
            lambda: make_dense(system, self.linalg),
            dense_args,
        )
        self.compile_seconds = seconds + dense_seconds
        self.load_seconds = load + dense_load


def _no_factors(linalg, structure: JacobianStructure, handles, banks) -> tuple:
    """Placeholder 'previous factorizations' of a first attempt (zeros of the shapes the dense
    backend returns; KLU keeps its factorizations in the handles and needs none)."""
    if linalg.backend != "dense":
        return ()
    slot_lam = banks["lam"][0][banks["slot_owner"][0]]

    def shapes():
        jvals = jnp.zeros(structure.nnz)
        slots = linalg.factor_shifted(jvals, 1e-3 * slot_lam, handles, "slots")
        filt = linalg.factor_shifted(jvals, jnp.ones(1), handles, "filter")
        return slots, filt, linalg.factor_algebraic(jvals, handles)

    return jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), jax.eval_shape(shapes))


_LINALG: weakref.WeakKeyDictionary[JacobianStructure, dict] = weakref.WeakKeyDictionary()
_CODE: weakref.WeakKeyDictionary[DAESystem, dict] = weakref.WeakKeyDictionary()


def compiled_code(
    system: DAESystem,
    structure: JacobianStructure,
    banks: BankSet,
    opts: RaptorOptions,
    backend: str,
) -> tuple[_Compiled, bool]:
    """The system's ``_Compiled`` for this backend and configuration, built once per process
    (building it traces placeholder shapes: built per run, a warm wscc9 fault run cost 115 ms
    of CPU instead of 77 ms, ieee39 179 instead of 155 ms); returns (code, whether it was built
    by this call)."""
    per_system = _CODE.setdefault(system, {})
    key = (backend, opts.max_newton, opts.n_rbf, opts.n_colloc, opts.seed,
           tuple(opts.a_max_levels), opts.draws, opts.continuation)  # fmt: skip
    if key in per_system:
        return per_system[key], False
    per_system[key] = _Compiled(system, structure, banks, opts, backend)
    return per_system[key], True


def _linalg_for(structure: JacobianStructure, backend: str, n_slots: int):
    """One linear-algebra object (and so one set of KLU handles and symbolic analyses) per
    structure, backend and slot count, kept as long as the structure."""
    per_structure = _LINALG.setdefault(structure, {})
    if (backend, n_slots) not in per_structure:
        per_structure[backend, n_slots] = make_linalg(structure, backend, n_slots)
    return per_structure[backend, n_slots]


def _attempt_args(
    x, z, f, h, p, jvals, handles, banks, idx, w_prev, mu, opts, kept=(), refactor=True
) -> tuple:
    """Arguments of the compiled attempt (host arrays passed as NumPy: no per-argument
    dispatch)."""
    f64 = np.float64
    return (
        np.asarray(x, f64),
        np.asarray(z, f64),
        np.asarray(f, f64),
        f64(h),
        p,
        np.asarray(jvals, f64),
        handles,
        banks,
        np.int32(idx),
        np.asarray(w_prev, f64),
        f64(mu),
        f64(opts.rtol),
        f64(opts.atol),
        f64(opts.chord_tol),
        f64(opts.predictor == "linearly_implicit"),
        kept,
        np.int32(refactor),
    )


def raptor_steps(method: str = "raptor", *, gather: bool = False, backend: str | None = None):
    """The stepper (``solvers.stepping.Stepper``) of RAPTOR. ``gather``: pass the compiled
    calls on as ``Call`` items for the consumer to serve (runs solved together); ``backend``
    overrides the option's choice of linear algebra (the batch's dense one)."""

    def stepper(
        system: DAESystem,
        scenario: Scenario,
        options: RaptorOptions,
        stats: Stats,
        builder: TrajectoryBuilder,
    ) -> Iterator[Advance]:
        structure, structure_compile, structure_load = jacobian_structure(system)
        kernels = point_kernels(system)
        kernels_before = (kernels.compile_seconds, kernels.load_seconds)
        banks = banks_for(options)
        chosen = backend or choose_backend(structure, options.linear_solver)
        analyses_before = _analyses(structure, chosen)
        code, built = compiled_code(system, structure, banks, options, chosen)
        stats.compile_seconds += structure_compile + (code.compile_seconds if built else 0.0)
        stats.load_seconds += structure_load + (code.load_seconds if built else 0.0)
        stats.symbolic_analyses += _analyses(structure, chosen) - analyses_before
        if options.rtol < ATTAINABLE_RTOL:
            builder.warnings.append(
                f"rtol {options.rtol:g} is below RAPTOR's attainable accuracy (about "
                f"{ATTAINABLE_RTOL:g}, docs/raptor.md): the error may exceed the tolerance; use "
                "radau for tighter results"
            )
        x, z = initial_state(system, scenario)
        try:
            for segment in segments(system, scenario):
                ev = DAEEvaluator(system, segment.params, chosen, stats, kernels, structure)
                z = ev.consistent_z(x, z)
                if segment.event is not None:
                    builder.events.append({"time": segment.t_start, "label": segment.event.label})
                builder.accept(segment.t_start, x, z)
                with code.linalg.lock:
                    x, z = yield from _served(
                        _segment(
                            code,
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
                        ),
                        gather,
                    )
        finally:
            stats.compile_seconds += kernels.compile_seconds - kernels_before[0]
            stats.load_seconds += kernels.load_seconds - kernels_before[1]

    return stepper


def _analyses(structure: JacobianStructure, backend: str) -> int:
    """Symbolic analyses done so far for ``structure`` with ``backend`` (KLU's, in this
    process)."""
    return sum(
        getattr(linalg, "analyses", 0)
        for (kind, _), linalg in _LINALG.get(structure, {}).items()
        if kind == backend
    )


def _segment(
    code: _Compiled,
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
) -> Iterator[Advance | Call]:
    f_k = ev.f(x, z)

    def f_at(x_new: np.ndarray) -> np.ndarray:
        return ev.f(x_new, ev.consistent_z(x_new, z))

    h = opts.first_step or starting_interval(x, f_k, f_at, opts.rtol, opts.atol, opts.order_hint)
    h_cap = opts.max_interval or np.inf
    controller = PIController(opts.safety, opts.k_i, opts.k_p, opts.fac_min, opts.fac_max)
    n_slots = banks.stacked["slot_owner"].shape[1]
    jvals: np.ndarray | None = None
    jac_version = 0
    factors, factored_for = code.no_factors, None  # factorizations kept, and their (J, h, bank)
    repivoted_for = None  # the (J, h, bank) whose KLU pivots were chosen afresh
    jac_fresh = False
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
        if jvals is None:
            jvals = ev.jacobian_values(x, z)
            if opts.level_thresholds:  # only the level needs rho (one level by default)
                rho = spectral_radius(ev.algebraic_lu(jvals).reduced_matvec, x.size)
            jac_fresh, jac_version = True, jac_version + 1
        level = level_for(h * rho, tuple(opts.level_thresholds))
        idx = banks.flat_index(level, draw)
        mu = opts.continuation if (idx == prev_idx and not controller.just_rejected) else 0.0
        refactor = factored_for != (jac_version, h, idx)
        call = Call(
            "attempt",
            code,
            _attempt_args(
                x,
                z,
                f_k,
                h,
                ev.p,
                jvals,
                code.handles,
                code.device_banks,
                idx,
                w_prev * (h / h_prev),
                mu,
                opts,
                factors,
                refactor,
            ),
        )
        yield call
        try:
            raw = call.output()
            kept, factored_for = raw.pop("factors"), (jac_version, h, idx)
            if code.linalg.backend == "dense":  # KLU keeps its factorizations in the handles
                factors = kept
            out = jax.device_get(raw)
        except jax.errors.JaxRuntimeError as exc:
            factored_for = None
            if _refactor_failed(exc) and (jac_version, h, idx) != repivoted_for:
                repivoted_for = (jac_version, h, idx)  # once per matrix: then a rejection
                if _repivot(code, banks, jvals, h, idx, stats):
                    continue
            if not _refactor_failed(exc):
                raise
            stats.rejected += 1
            h = controller.rejected(h, np.inf)
            jvals, draw = None, draw + 1
            continue
        iterations = int(out["newton_iterations"])
        stats.newton_iterations += iterations
        stats.algebraic_iterations += int(out["alg_iterations"])
        if refactor:
            stats.lu_factorizations += n_slots + 2  # slots, filter, g_z
        stats.rhs_evaluations += opts.n_colloc * (iterations * (1 + 1) + 1) + 1
        ok = int(out["status"]) == STATUS_CONVERGED and float(out["g_end"]) <= ALGEBRAIC_TOL
        if not ok:
            if not jac_fresh:  # convergence slowed with an old Jacobian: refresh, same h
                jvals = None
                continue
            stats.rejected += 1
            h = controller.rejected(h, np.inf)
            draw += 1
            continue
        err = float(out["err"])
        if err > 1.0:  # too inaccurate: shorter, same draw (the draws are kept best first, so
            # redrawing here moved to less consistent bases: ieee14 fault 33 + 13 intervals
            # with a redraw, 30 + 7 without)
            stats.rejected += 1
            h = controller.rejected(h, err)
            continue
        # accepted
        yield from _dense_samples(
            code,
            ev,
            builder,
            banks.bank(level, draw),
            t,
            h,
            x,
            z,
            out,
            last=is_last and t + h >= t_end,
        )
        x, z, f_k = np.asarray(out["x_end"]), np.asarray(out["z_end"]), np.asarray(out["f_end"])
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
        prev_idx, w_prev, h_prev = idx, np.asarray(out["w"]), h
        h = controller.accepted(h, err)
        if float(out["rate_max"]) < opts.jacobian_reuse_rate:
            jac_fresh = False
            if 1.0 <= h / h_prev <= H_KEEP:  # keep h, and so the factorizations
                h = h_prev
        else:
            jvals = None
        yield Advance(t, x, z, ev)
    return x, z


def _refactor_failed(exc: Exception) -> bool:
    """Whether ``exc`` is KLU reporting a refactorization singular (klujax's message)."""
    return "refactor" in str(exc) and "singular" in str(exc)


def _repivot(code: _Compiled, banks: BankSet, jvals, h: float, idx: int, stats: Stats) -> bool:
    """New KLU numeric factorizations (fresh pivots) at this Jacobian, h and bank, and the
    compiled code's handles replaced; False when the matrices are singular anyway."""
    lam = banks.stacked["lam"][idx][banks.stacked["slot_owner"][idx]]
    try:
        code.linalg.repivot(np.asarray(jvals), h * np.asarray(lam), h)
    except jax.errors.JaxRuntimeError:
        return False
    code.handles = code.linalg.handles()
    stats.lu_factorizations += len(lam) + 2
    return True


def _dense_samples(
    code: _Compiled,
    ev: DAEEvaluator,
    builder: TrajectoryBuilder,
    bank,
    t_k: float,
    h: float,
    x_k: np.ndarray,
    z_k: np.ndarray,
    out: dict,
    *,
    last: bool,
) -> Iterator[Call]:
    """x from the interval's own representation at the grid points in [t_k, t_k + h) (closed
    when ``last``); z made consistent at each by simplified Newton with the interval's g_z,
    warm-started from the nearest collocation point's z (no integration); samples where that
    does not converge go through the robust solve."""
    idx = builder.sample_indices(t_k, t_k + h, last)
    if len(idx) == 0:
        return
    s = np.clip((builder.t_eval[idx] - t_k) / h, 0.0, 1.0)
    rows = bank.value_rows(s)
    s_nodes = np.concatenate([[0.0], collocation_points(out["y"].shape[0])])
    z_nodes = np.concatenate([z_k[None, :], out["zc"]])
    guesses = z_nodes[np.abs(s[:, None] - s_nodes[None, :]).argmin(axis=1)]
    for start in range(0, len(idx), SAMPLE_BATCH):
        chunk = slice(start, min(start + SAMPLE_BATCH, len(idx)))
        n = chunk.stop - chunk.start
        pad = SAMPLE_BATCH - n
        call = Call(
            "dense",
            code,
            (
                x_k,
                np.concatenate([rows[chunk], np.repeat(rows[chunk][-1:], pad, 0)]),
                out["y"],
                np.concatenate([guesses[chunk], np.repeat(guesses[chunk][-1:], pad, 0)]),
                ev.p,
                out["gz"],
            ),
        )
        yield call
        xs, zs, ys, residual = jax.device_get(call.result)
        xs, zs, ys = xs[:n], np.array(zs[:n]), np.array(ys[:n])
        for i in np.flatnonzero(~(residual[:n] <= ALGEBRAIC_TOL)):
            zs[i] = ev.consistent_z(xs[i], guesses[chunk][i])
            ys[i] = ev.outputs(xs[i], zs[i])
        where = idx[chunk]
        builder.x_eval[where], builder.z_eval[where], builder.y_eval[where] = xs, zs, ys
