"""Many scenarios of one network solved together by the fixed-step trapezoid (``trapezoid``).

A campaign's runs of one network and one option set differ only in their events and initial
states, so their trapezoidal steps are the same computation on different numbers. Here a batch
of B scenarios is integrated over the whole horizon by one compiled program: a ``lax.scan`` over
the steps of each event segment, every step a batched chord iteration (the one in
``solvers.trapezoid_kernel``: B residuals, B LU factorizations taken only when some member needs
one) and the dense output of every member recovered by one vmapped algebraic Newton. No Python
runs per step, and B scenarios share each dispatch.

Each member follows the same arithmetic as ``trapezoid`` alone (``solvers.trapezoid``): the same
step grid (t0 + k dt, shortened to land on events and t_end), the same predictor, chord and
refactorization rule, the same consistent z at every segment start, the same cubic Hermite
samples with z re-solved: results agree with the one-at-a-time solve to round-off (tested).
Members may have different event times and counts: segments are aligned by position (the first
segment of every member, then the second, ...) and the scan of a segment runs to the longest
member's step count, the others idle (masked). A member that fails in the batch (a step that
does not converge, a non-finite or diverging state, an algebraic solve that needs the robust
fallback) is solved again alone, so a failure is reported exactly as ``solve`` reports it.

Where the time goes: one trapezoid run alone costs about 1 ms per step on wscc9 and ieee39,
nearly all of it the host's per-step dispatch; inside one program a wscc9 member costs ~29-37 us
per step (23-30x at B = 8-64), an ieee39 member ~0.3-0.36 ms (2.3-2.7x), bounded by the dense
n x n Newton inverse each chord iteration multiplies (``width``; ``benchmarks/batched.py``).

Scope: the simultaneous scheme and the delayed one (``trapezoid-delayed``: each step's
network stage, controller states held, then its controller stage on the controller states
alone, each with its own Newton inverses, as ``solvers.trapezoid`` runs them), with a dense
Newton matrix (up to ``BATCH_DENSE_MAX`` unknowns); other methods and larger systems are solved
one after the other by ``solve_batch``. The delayed scheme alone pays the host loop twice per
step (emt_gfl at dt 1e-4: 1.8-1.9x the simultaneous scheme's CPU alone, 1.05-1.15x batched;
``benchmarks/delayed_control.py``, docs/paper.md).
A batch is split into programs of ``width`` members whose stored steps stay under
``BATCH_BYTES``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import models.jaxconfig  # noqa: F401
from models.dae import DAESystem, Scenario
from models.executables import compiled_once
from models.kernels import newton_solver
from solvers.catalogue import TrapezoidOptions
from solvers.reduced import ALGEBRAIC_TOL
from solvers.result import SolveResult, Stats
from solvers.trajectory import DIVERGENCE_LIMIT, TrajectoryBuilder, segments
from solvers.trapezoid import GRID_EPS, controller_mask, step_grid
from solvers.trapezoid_kernel import CONVERGED, _chord, controller_residual, step_residual

BATCH_DENSE_MAX = 600
"""Largest n_x + n_z solved in a batch: B dense LUs of this size per refactorization."""
BATCH_BYTES = 256 * 2**20
"""Upper bound on the steps a batch keeps in memory (x, z, f per step and member, float64)."""
MAX_WIDTH = 32
INVERSE_BYTES = 4 * 2**20
"""Members per program (``width``): every chord iteration multiplies each member's residual by
its n x n Newton inverse, so a program's iteration time grows with B n^2 once the inverses leave
the cache, and it runs until its slowest member converges. Measured (``benchmarks/batched.py``,
1 s bus faults, dt 1 ms, CPU ms per run): wscc9 (45 unknowns) 55 / 51 / 53 / 74 at B = 4 / 16 /
32 / 64; ieee39 (201 unknowns) 590 / 420 / 450 / 1,370 at B = 4 / 8 / 16 / 64. So 32 for wscc9,
8 for ieee39."""
MIN_BUCKET = 8
"""Smallest scan length: segment step counts are rounded up to a power of two (at least this),
so campaigns whose event times differ reuse one compiled program."""


METHODS = ("trapezoid", "trapezoid-delayed")
"""The schemes solved here: simultaneous, and delayed (``solvers.trapezoid``: two masked stages
per step, the controller states one step behind)."""


def batchable(system: DAESystem, method: str, options: TrapezoidOptions | Any) -> bool:
    """Whether ``method`` with ``options`` on ``system`` is solved here as a batch (the delayed
    scheme only where the system declares controller states: without, ``trapezoid-delayed``
    is an input error that ``solve`` reports)."""
    if method not in METHODS or options.linear_solver == "sparse":
        return False
    if method == "trapezoid-delayed" and not system.controller_states:
        return False
    return system.n_x + system.n_z <= BATCH_DENSE_MAX


@dataclass
class _Plan:
    """The host's description of one batch: each member's steps flattened over its segments
    (end times, segment position, whether the step opens a segment; padded to a common
    length), and every segment position's parameters (leaves stacked (S, B, ...); a member with
    fewer segments repeats its last)."""

    params: dict[str, np.ndarray]
    t0: np.ndarray  # (B,)
    t_new: np.ndarray  # (B, K)
    seg: np.ndarray  # (B, K) int
    first: np.ndarray  # (B, K) bool
    count: np.ndarray  # (B,)
    segments: list[list]  # per member, its Segment objects


def _bucket(n: int) -> int:
    return max(MIN_BUCKET, 1 << max(0, int(n - 1).bit_length()))


def _plan(system: DAESystem, scenarios: list[Scenario], dt: float) -> _Plan:
    per_member = [list(segments(system, sc)) for sc in scenarios]
    n_seg = max(len(segs) for segs in per_member)
    grids = [
        [step_grid(seg.t_start, seg.t_end, sc.t0, dt) for seg in segs]
        for sc, segs in zip(scenarios, per_member, strict=True)
    ]
    count = np.array([sum(len(g) for g in gs) for gs in grids])
    n_b, k = len(scenarios), _bucket(int(count.max()))
    t_new, seg = np.zeros((n_b, k)), np.zeros((n_b, k), np.int32)
    first = np.zeros((n_b, k), bool)
    for b, gs in enumerate(grids):
        flat = np.concatenate(gs)
        t_new[b, : len(flat)], t_new[b, len(flat) :] = flat, flat[-1]
        seg[b, : len(flat)] = np.repeat(np.arange(len(gs)), [len(g) for g in gs])
        seg[b, len(flat) :] = len(gs) - 1
        first[b, np.cumsum([0] + [len(g) for g in gs[:-1]])] = True
    params = {
        name: np.stack(
            [
                np.stack(
                    [
                        np.asarray(segs[min(s, len(segs) - 1)].params[name], float)
                        for segs in per_member
                    ]
                )  # fmt: skip
                for s in range(n_seg)
            ]
        )
        for name in per_member[0][0].params
    }
    t0 = np.array([sc.t0 for sc in scenarios], float)
    return _Plan(params, t0, t_new, seg, first, count, per_member)


def _horizon_function(system: DAESystem, method: str = "trapezoid"):
    """The compiled program: one scan over the flattened steps; a step that opens a segment
    first solves its consistent z (the post-event point, recorded in ``starts``). A step is a
    batched chord iteration on the solo step's residual (``trapezoid_kernel.step_residual``)
    over every state (simultaneous), or, delayed, that iteration with the controller states
    held (the network stage) then one on the controller states alone
    (``trapezoid_kernel.controller_residual``), each stage with its own Newton inverses."""
    f, g = system.f, system.g
    newton = jax.vmap(newton_solver(g))
    f_b, g_b = jax.vmap(f), jax.vmap(g)
    delayed = method == "trapezoid-delayed"
    controllers = controller_mask(system) if delayed else np.zeros(system.n_x)
    mask = jnp.asarray(1.0 - controllers)
    index = np.flatnonzero(controllers)
    residual, bounds = step_residual(system)
    bounds_b = jax.vmap(bounds)
    residual_b = jax.vmap(residual, in_axes=(0, 0, 0, 0, 0, None, 0, 0))
    jacobian_b = jax.vmap(jax.jacfwd(residual), in_axes=(0, 0, 0, 0, 0, None, 0, 0))
    c_residual, _ = controller_residual(system, index)
    c_residual_b = jax.vmap(c_residual)
    c_jacobian_b = jax.vmap(jax.jacfwd(c_residual))
    at = jnp.asarray(index)
    n_x = system.n_x

    def batched_chord(residual_of, jacobian_of, w0, inverse, stale, tol, max_iter, done):
        """A stage's batched chord iteration with each member's Newton inverse."""
        return _chord(
            residual_of,
            lambda w, _: jnp.linalg.inv(jacobian_of(w)),
            lambda inverse, r: jnp.einsum("bij,bj->bi", inverse, r),
            w0, inverse, stale, tol, max_iter, done=done,
        )  # fmt: skip

    def counted(work, members, it, n_fac):
        """A stage's Newton iterations, factorizations and f evaluations (one per iteration
        and one after) added to ``members``' counters, as the solo loop counts them."""
        return work.at[:3].add(jnp.where(members, jnp.stack([it, n_fac, it + 1]), 0))

    def network_stage(x, z, fx, h, p, lim, *iteration):
        args = (x, fx, h, p, mask, x, lim)
        w0 = jnp.concatenate([mask * (x + h[:, None] * fx) + (1.0 - mask) * x, z], axis=1)
        w, inv, it, n_fac, status = batched_chord(
            lambda w: residual_b(w, *args), lambda w: jacobian_b(w, *args), w0, *iteration
        )
        return w[:, :n_x], w[:, n_x:], inv, it, n_fac, status

    def controller_stage(x, fx, h, p, lim, x_net, z1, *iteration):
        args = (x_net, z1, x, fx, h, p, lim)
        c0 = x[:, at] + h[:, None] * fx[:, at]
        c, inv, it, n_fac, status = batched_chord(
            lambda c: c_residual_b(c, *args), lambda c: c_jacobian_b(c, *args), c0, *iteration
        )
        return x_net.at[:, at].set(c), z1, inv, it, n_fac, status

    def run(x, z, params, t0, t_new, seg, first, count, tol, max_iter):
        n_b, n_z = z.shape
        n = n_x + n_z
        members = jnp.arange(n_b)
        n_seg = jax.tree_util.tree_leaves(params)[0].shape[0]

        def begin(x, z, fx, starts, opens, p, s, ok, work):
            """Consistent z (and f) where a segment opens, recorded as its start point."""
            z_new, alg_it = newton(x, z, p)
            ok = ok & (~opens | (jnp.max(jnp.abs(g_b(x, z_new, p)), axis=1) <= ALGEBRAIC_TOL))
            z = jnp.where(opens[:, None], z_new, z)
            fx = jnp.where(opens[:, None], f_b(x, z, p), fx)
            starts = tuple(
                buf.at[s, members].set(jnp.where(opens[:, None], v, buf[s, members]))
                for buf, v in zip(starts, (x, z, fx), strict=True)
            )
            work = work.at[3].add(jnp.where(opens, alg_it, 0)).at[2].add(opens)
            return z, fx, starts, ok, work

        def body(carry, k):
            x, z, fx, t, inverse, h_prev, ok, work, starts = carry
            active = (k < count) & ok
            s = seg[:, k]
            p = jax.tree_util.tree_map(lambda a: a[s, members], params)
            opens = first[:, k] & active
            z, fx, starts, ok, work = jax.lax.cond(
                jnp.any(opens),
                lambda: begin(x, z, fx, starts, opens, p, s, ok, work),
                lambda: (z, fx, starts, ok, work),
            )
            active = active & ok
            h = jnp.where(active, t_new[:, k] - t, 1.0)
            stale = opens | ~(jnp.abs(h - h_prev) <= GRID_EPS * h)
            lim = bounds_b(x, z, p)
            x1, z1, inv_net, it, n_fac, status = network_stage(
                x, z, fx, h, p, lim, inverse[0], stale, tol, max_iter, ~active
            )
            work = counted(work, active, it, n_fac)
            converged = active & (status == CONVERGED)
            inverse_n = (inv_net,)
            if delayed:
                x1, z1, inv_c, it, n_fac, status = controller_stage(
                    x, fx, h, p, lim, x1, z1, inverse[1], stale, tol, max_iter, ~converged
                )
                work = counted(work, converged, it, n_fac)
                converged = converged & (status == CONVERGED)
                inverse_n = (inv_net, inv_c)
            f1 = f_b(x1, z1, p)
            size = jnp.max(jnp.abs(x1), axis=1)
            good = converged & jnp.isfinite(size) & (size <= DIVERGENCE_LIMIT)
            accept = active & good
            ok = ok & (~active | good)
            keep = accept[:, None]
            carry = (
                jnp.where(keep, x1, x),
                jnp.where(keep, z1, z),
                jnp.where(keep, f1, fx),
                jnp.where(accept, t_new[:, k], t),
                tuple(
                    jnp.where(accept[:, None, None], new, old)
                    for new, old in zip(inverse_n, inverse, strict=True)
                ),
                jnp.where(accept, h, h_prev),
                ok,
                work,
                starts,
            )
            return carry, (x1, z1, f1)

        def maybe(carry, k):
            busy = jnp.any((k < count) & carry[6])
            idle = (carry, (carry[0], carry[1], carry[2]))
            return jax.lax.cond(busy, lambda: body(carry, k), lambda: idle)

        starts = tuple(jnp.zeros((n_seg, n_b, m)) for m in (n_x, n_z, n_x))
        inverses = (jnp.zeros((n_b, n, n)),) + (
            (jnp.zeros((n_b, len(index), len(index))),) if delayed else ()
        )
        fx = f_b(x, z, jax.tree_util.tree_map(lambda a: a[0], params))
        init = (
            x, z, fx, t0, inverses, jnp.full(n_b, jnp.nan),
            jnp.ones(n_b, bool), jnp.zeros((4, n_b), jnp.int32), starts,
        )  # fmt: skip
        carry, steps = jax.lax.scan(maybe, init, jnp.arange(t_new.shape[1]))
        return carry[8], steps, carry[6], carry[7]

    return run


def _recover_function(system: DAESystem):
    """z re-solved at interpolated samples, and the outputs, for samples of any member and
    segment (each sample gathers its own parameters)."""
    newton = newton_solver(system.g)
    outputs = system.outputs or (lambda x, z, p: jnp.zeros(0))

    def one(x, z, exact, p):
        z = jnp.where(exact, z, newton(x, z, p)[0])
        return z, outputs(x, z, p), jnp.max(jnp.abs(system.g(x, z, p)))

    def run(xs, zs, exact, seg, member, params):
        p = jax.tree_util.tree_map(lambda a: a[seg, member], params)
        return jax.vmap(one)(xs, zs, exact, p)

    return run


def _compiled(system: DAESystem, role: str, fn_of, args) -> tuple[Any, float, float]:
    """``fn_of(system)`` compiled for the shapes of ``args`` (``models.executables``: kept in
    this process, loaded by other processes). Returns it and the seconds this call spent
    compiling and loading."""
    shapes = tuple(np.shape(a) for a in jax.tree_util.tree_leaves(args))
    return compiled_once(
        system, (f"trapezoid batch {role}", shapes), lambda: fn_of(system), lambda: args
    )


def _chunks(system: DAESystem, scenarios: list[Scenario], dt: float) -> list[list[int]]:
    """Member indices split into programs of at most ``width(system)`` members, each storing at
    most ``BATCH_BYTES`` of steps."""
    horizon = max(sc.t_end - sc.t0 for sc in scenarios)
    per_member = 8 * (2 * system.n_x + system.n_z) * 2 * (horizon / dt + 8)  # steps, padded
    size = max(1, min(width(system), int(BATCH_BYTES // per_member)))
    idx = list(range(len(scenarios)))
    return [idx[i : i + size] for i in range(0, len(idx), size)]


def width(system: DAESystem) -> int:
    """Members per program: a power of two, at most ``MAX_WIDTH``, such that the members' Newton
    inverses fit in ``INVERSE_BYTES`` (each chord iteration streams them once)."""
    n = system.n_x + system.n_z
    fit = max(1, int(INVERSE_BYTES // (8 * n * n)))
    return min(MAX_WIDTH, 1 << (fit.bit_length() - 1))


def solve_trapezoid_batch(
    system: DAESystem,
    scenarios: list[Scenario],
    options: TrapezoidOptions,
    method: str = "trapezoid",
) -> list[SolveResult | None]:
    """Solve ``scenarios`` together with ``method`` (``METHODS``); None for each member that
    failed in the batch (the caller solves those alone, ``solve_batch``). Each result's
    ``solve_seconds`` is its share of the batch's solve time, ``compile_seconds`` its share of
    the compiling."""
    results: list[SolveResult | None] = [None] * len(scenarios)
    for chunk in _chunks(system, scenarios, options.dt):
        members = [scenarios[i] for i in chunk]
        for i, result in zip(chunk, _solve_chunk(system, members, options, method), strict=True):
            results[i] = result
    return results


def _solve_chunk(system, scenarios, options, method: str) -> list[SolveResult | None]:
    start = time.perf_counter()
    n_b = len(scenarios)
    # members padded to a power of two (copies of the last): one program per bucket
    scenarios = scenarios + [scenarios[-1]] * (_bucket(n_b) - n_b if n_b > 1 else 0)
    plan = _plan(system, scenarios, options.dt)
    x0 = np.stack([np.asarray(system.x0 if sc.x0 is None else sc.x0, float) for sc in scenarios])
    z0 = np.stack([np.asarray(system.z0 if sc.z0 is None else sc.z0, float) for sc in scenarios])
    args = (
        x0,
        z0,
        plan.params,
        plan.t0,
        plan.t_new,
        plan.seg,
        plan.first,
        plan.count,
        np.float64(options.newton_tol),
        np.int32(options.max_newton),
    )
    program, compile_s, load_s = _compiled(
        system, "horizon" if method == "trapezoid" else f"horizon {method}",
        lambda s: _horizon_function(s, method), args,
    )  # fmt: skip
    starts, steps, ok, work = jax.device_get(program(*args))
    builders = [TrajectoryBuilder(system, sc, sc.evaluation_grid()) for sc in scenarios]
    samples = _collect(plan, starts, steps, ok, builders)
    compile_fill, load_fill = _fill(system, plan, samples, builders)
    compile_s, load_s = compile_s + compile_fill, load_s + load_fill
    elapsed = time.perf_counter() - start
    results: list[SolveResult | None] = []
    for b, builder in enumerate(builders[:n_b]):
        if not ok[b] or np.isnan(builder.x_eval).any():
            results.append(None)
            continue
        stats = Stats(
            accepted=int(plan.count[b]),
            newton_iterations=int(work[0, b]),
            lu_factorizations=int(work[1, b]),
            jacobian_evaluations=int(work[1, b]),
            rhs_evaluations=int(work[2, b]),
            algebraic_iterations=int(work[3, b]),
            compile_seconds=compile_s / n_b,
            load_seconds=load_s / n_b,
            solve_seconds=max(0.0, elapsed - compile_s - load_s) / n_b,
        )
        results.append(builder.result(method=method, options=options.model_dump(), stats=stats))
    return results


@dataclass
class _Samples:
    """Dense-output requests of one member: its sample indices, the interpolated x, the z
    guess, the segment position of each (where its parameters are) and whether it sits on a
    step point (``exact``: x and z are the step's)."""

    member: int
    index: np.ndarray
    x: np.ndarray
    z: np.ndarray
    seg: np.ndarray
    exact: np.ndarray


def _collect(plan: _Plan, starts, steps, ok, builders) -> list[_Samples]:
    """Accepted points into each member's builder, and its samples: on a step point exact,
    else the cubic Hermite interpolant of (x, f) at the step's two ends with z to re-solve,
    each sample in the step [t0, t1) that holds it (the last step closed), as
    ``solvers.trapezoid._fill_samples`` does one step at a time."""
    out = []
    xs, zs, fs = steps
    for b, builder in enumerate(builders):
        if not ok[b]:
            continue
        count = int(plan.count[b])
        seg, first = plan.seg[b, :count], plan.first[b, :count]
        t1 = plan.t_new[b, :count]
        x1, z1, f1 = xs[:count, b], zs[:count, b], fs[:count, b]
        # each step's start: the segment's start point where it opens one, else the last step
        opens = np.nonzero(first)[0]
        t0 = np.concatenate([[plan.t0[b]], t1[:-1]])
        x0, z0, f0 = (np.concatenate([v[:1], v[:-1]]) for v in (x1, z1, f1))
        for k in opens:
            segment = plan.segments[b][seg[k]]
            t0[k] = segment.t_start
            x0[k], z0[k], f0[k] = (buf[seg[k], b] for buf in starts)
            if segment.event is not None:
                builder.events.append({"time": segment.t_start, "label": segment.event.label})
        # accepted points: every step's end, with each segment's start point before its first
        order = np.argsort(np.concatenate([np.arange(count), opens - 0.5]), kind="stable")
        builder.accept_many(
            np.concatenate([t1, t0[opens]])[order],
            np.concatenate([x1, x0[opens]])[order],
            np.concatenate([z1, z0[opens]])[order],
        )
        ts = builder.t_eval
        k = np.minimum(np.searchsorted(t1, ts, side="right"), count - 1)
        h = t1[k] - t0[k]
        at0 = np.abs(ts - t0[k]) <= GRID_EPS * h
        at1 = ~at0 & (np.abs(ts - t1[k]) <= GRID_EPS * h)
        u = ((ts - t0[k]) / h)[:, None]
        hh = h[:, None]
        x = (
            (2 * u**3 - 3 * u**2 + 1) * x0[k]
            + (u**3 - 2 * u**2 + u) * hh * f0[k]
            + (-2 * u**3 + 3 * u**2) * x1[k]
            + (u**3 - u**2) * hh * f1[k]
        )
        x = np.where(at0[:, None], x0[k], np.where(at1[:, None], x1[k], x))
        z = np.where(at0[:, None], z0[k], z1[k])
        out.append(_Samples(b, np.arange(len(ts)), x, z, seg[k], at0 | at1))
    return out


def _fill(system, plan: _Plan, requests: list[_Samples], builders) -> tuple[float, float]:
    """Solve every sample's z in one call (padded to a power of two) and store the samples;
    returns the seconds spent compiling and loading. A sample whose Newton does not converge
    is left NaN: its member is then solved alone."""
    if not requests:
        return 0.0, 0.0
    n = sum(len(r.index) for r in requests)
    size = _bucket(n)
    pad = size - n

    def stacked(name: str, fill) -> np.ndarray:  # noqa: ANN001
        parts = [getattr(r, name) for r in requests]
        return np.concatenate(parts + [np.repeat(fill(parts[0][:1]), pad, axis=0)])

    xs, zs = stacked("x", lambda v: v), stacked("z", lambda v: v)
    exact = stacked("exact", np.ones_like).astype(bool)
    seg = stacked("seg", np.zeros_like).astype(np.int32)
    member = np.concatenate(
        [np.full(len(r.index), r.member, np.int32) for r in requests] + [np.zeros(pad, np.int32)]
    )
    args = (xs, zs, exact, seg, member, plan.params)
    program, compile_s, load_s = _compiled(system, "recover", _recover_function, args)
    z_out, y_out, residual = jax.device_get(program(*args))
    # a step point keeps its step's z (the delayed scheme's lags its controllers: g != 0 there)
    good = (exact | (residual <= ALGEBRAIC_TOL)) & np.all(np.isfinite(z_out), axis=1)
    start = 0
    for r in requests:
        rows = slice(start, start + len(r.index))
        keep = good[rows]  # the others stay NaN: the member is solved alone
        builder = builders[r.member]
        builder.x_eval[r.index[keep]] = r.x[keep]
        builder.z_eval[r.index[keep]] = z_out[rows][keep]
        builder.y_eval[r.index[keep]] = y_out[rows][keep]
        start += len(r.index)
    return compile_s, load_s
