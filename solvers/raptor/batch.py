"""Many scenarios of one network solved together by RAPTOR, vectorized across them.

Each member runs RAPTOR's own stepper (``solvers.raptor.runner``: the same interval control,
Jacobian and factorization reuse, redraws, events and dense output, so the same decisions as a
run alone), but its compiled calls come out as ``Call`` requests instead of being dispatched
one by one. The members advance in lockstep rounds: in each round every unfinished member is
run to its next call, and the round's attempts are served by one dispatch of the attempt
vmapped across members (``jax.vmap`` of ``interval.make_attempt``: one program evaluates every
member's collocation residuals, factorizations and chord iterations), the dense outputs by one
of the vmapped dense output. What stays per member on the host is the control logic and the
occasional Jacobian evaluation.

Why lockstep on the host rather than the whole interval loop inside ``lax.while_loop``: a run
is 16-40 intervals, each decision (accept, reject, redraw, reuse J or h, segment ends, sample
placement) cheap on the host and branchy in a program, and under ``vmap`` a loop runs until its
slowest member ends; the rounds already share each dispatch across the members.

Where it pays: nowhere measured yet, so the platform does not select it (``solvers.api.
batch_solver`` solves RAPTOR runs one after the other); ``solve_raptor_batch`` is called directly
by ``benchmarks/batched.py --method raptor`` and the tests. On this project's CPUs an attempt
is bound by its LAPACK work, not by dispatch, so a vmapped attempt costs each member what it
costs alone; on a GPU every compiled call is a device round trip and the members' host work
between the batched attempts (Jacobian evaluations, control) still runs one member at a time
(both measured: docs/platform.md, the batched runs, and docs/measurements.md). Gathering the
Jacobian evaluations into vmapped calls too is what an accelerator needs first
(``solvers.raptor.device`` runs the whole interval loop on the device).
``MAX_WIDTH``: on XLA:CPU (jaxlib 0.10.2) a 16-member wscc9 attempt never returned (all
threads waiting; unchanged with ``--xla_cpu_multi_thread_eigen=false``, with the ynn fusion off
and with BLAS threads unlimited), 8 members always did.

Scope: the dense linear algebra (``shifted_lu.DenseLinalg``: stateless, so members share it;
KLU keeps its factorizations in per-structure handles and cannot be vmapped): dense complex LUs
per member and slot, so networks of a few hundred unknowns (ieee39's 201 are inside). A member's
vmapped factorizations are taken in every round (a ``lax.cond`` on a batched flag evaluates both
branches), and kept only where the member's own rule says so, so its values are those of the run
alone; they agree with it to round-off (tested).
A member that fails in the batch comes back None, for the caller to solve alone.
"""

from __future__ import annotations

import time
from typing import Any

import jax
import numpy as np

from models.dae import DAESystem, Scenario
from solvers.raptor.interval import compiled, make_attempt, make_dense
from solvers.raptor.options import RaptorOptions
from solvers.raptor.runner import Call, raptor_steps
from solvers.result import SolveResult
from solvers.stepping import StepRun

MAX_WIDTH = 8
"""Members per vectorized dispatch on XLA:CPU; larger batches are split (see the module doc for
why 8)."""
MAX_WIDTH_ACCELERATOR = 64
"""Members per vectorized dispatch on an accelerator, where one program of more members costs
little more than one of eight."""


def max_width() -> int:
    """Members per vectorized dispatch on JAX's default backend."""
    return MAX_WIDTH if jax.default_backend() == "cpu" else MAX_WIDTH_ACCELERATOR


_SHARED = {"attempt": (6, 7), "dense": ()}
"""Positions of the arguments every member shares (KLU handles and the basis banks)."""
_PARAMS = 4
"""Position of the parameters (the segment's) in both calls' arguments."""


def solve_raptor_batch(
    system: DAESystem, scenarios: list[Scenario], options: RaptorOptions
) -> list[SolveResult | None]:
    """The members' results (None for a member that failed here: the caller solves it alone);
    ``solve_seconds`` and the vectorized programs' compile seconds are each member's share."""
    results: list[SolveResult | None] = []
    width = max_width()
    for start in range(0, len(scenarios), width):
        results.extend(_solve_group(system, scenarios[start : start + width], options))
    return results


def _width(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


def _solve_group(
    system: DAESystem, scenarios: list[Scenario], options: RaptorOptions
) -> list[SolveResult | None]:
    start = time.perf_counter()
    width = _width(len(scenarios))
    runs = [
        StepRun(raptor_steps(gather=True, backend="dense"), system, sc, options, method="raptor")
        for sc in scenarios
    ]
    steps = [iter(run) for run in runs]
    pending: dict[int, Call] = {}
    memo: dict[tuple, tuple] = {}
    compile_seconds = load_seconds = 0.0
    live = list(range(len(runs)))
    while live:
        for b in live:
            call = _next_call(steps[b])
            if call is not None:
                pending[b] = call
        live = sorted(pending)
        for kind in ("attempt", "dense"):
            members = [b for b in live if pending[b].kind == kind]
            if members:
                calls = [pending[b] for b in members]
                c_s, l_s = _serve(system, options, calls, width, kind, memo)
                compile_seconds, load_seconds = compile_seconds + c_s, load_seconds + l_s
        pending.clear()
    elapsed = time.perf_counter() - start - compile_seconds - load_seconds
    out: list[SolveResult | None] = []
    for run in runs:
        result = run.result
        result.stats.solve_seconds = max(0.0, elapsed) / len(runs)
        result.stats.compile_seconds += compile_seconds / len(runs)
        result.stats.load_seconds += load_seconds / len(runs)
        out.append(result if result.succeeded else None)
    return out


def _next_call(steps) -> Call | None:
    """Run a member to its next compiled call (None once it has finished)."""
    for item in steps:
        if isinstance(item, Call):
            return item
    return None


def _stacked(values: list) -> Any:
    """The members' values of one argument stacked along a new first axis."""
    return jax.tree_util.tree_map(lambda *a: np.stack([np.asarray(v) for v in a]), *values)


def _stacked_params(values: list[dict], memo: dict[tuple, tuple]) -> dict:
    """``_stacked`` for the members' parameter dictionaries, which stay the same objects for a
    whole segment: stacked once per combination (``memo`` keeps them alive, so ids stay
    theirs; one entry per combination of segments, a handful per batch)."""
    key = tuple(id(v) for v in values)
    if key not in memo:
        memo[key] = (values, _stacked(values))
    return memo[key][1]


def _serve(
    system: DAESystem,
    options: RaptorOptions,
    calls: list[Call],
    width: int,
    kind: str,
    memo: dict[tuple, tuple],
) -> tuple[float, float]:
    """Serve ``calls`` (one kind, one per member) by one vectorized dispatch of ``width``
    members (the rest padded with the first call's arguments); returns compile and load
    seconds spent."""
    shared = _SHARED[kind]
    padded = calls + [calls[0]] * (width - len(calls))
    args = tuple(
        calls[0].args[i]
        if i in shared
        else _stacked_params([c.args[i] for c in padded], memo)
        if i == _PARAMS
        else _stacked([c.args[i] for c in padded])
        for i in range(len(calls[0].args))
    )
    code = calls[0].code
    in_axes = tuple(None if i in shared else 0 for i in range(len(args)))
    if kind == "attempt":
        key = ("attempt_batch", width, options.max_newton, options.n_rbf, options.n_colloc,
               args[7]["q"].shape[0], args[7]["slot_owner"].shape[1])  # fmt: skip

        def build():
            return jax.vmap(make_attempt(system, code.linalg, options.max_newton), in_axes)
    else:
        key = ("dense_batch", width, options.n_colloc)

        def build():
            return jax.vmap(make_dense(system, code.linalg), in_axes)

    executable, compile_s, load_s = compiled(system, key, build, args)
    out = jax.device_get(executable(*args))
    for b, call in enumerate(calls):
        call.result = jax.tree_util.tree_map(lambda leaf, b=b: leaf[b], out)
    return compile_s, load_s
