"""Diffrax's Kvaerno5 (the high-accuracy reference), Tsit5 and Dopri5 on the reduced ODE in JAX.

The vector field is ``solvers.jax_reduced``'s (z by Newton inside JAX, dz/dx exact by the
implicit-function theorem, so Kvaerno5's autodiff Jacobian is exact). One segment solve is
compiled ahead of time once per (system, method, sample-buffer size, max_steps, first step
given?) and reused for every scenario: initial state, parameters, segment times, sample times,
tolerances and the step limits are traced arguments. Compile seconds are measured on their own.

Events: the horizon is integrated segment by segment (``solvers.trajectory.segments``); at each
event z is re-solved on the host and the segment's Newton guess is that consistent z. Output:
``SaveAt(ts=...)`` on the scenario's evaluation grid (padded to a power-of-two buffer so that
every scenario with a similar grid shares one executable), diffrax's own dense interpolant, with
z then re-solved on the host at each sample (warm-started, counted). ``t/x/z`` of the result hold
the segment ends (both sides of every event): diffrax keeps its step points only in a buffer of
``max_steps`` rows, which is not returned.

Failures are results: ``throw=False`` and diffrax's ``RESULTS`` mapped to ``FailureReason``
(running out of steps, as the explicit methods do on stiff cases, is ``MAX_STEPS``).

Counters: accepted/rejected steps are diffrax's ``num_accepted_steps``/``num_rejected_steps``.
Newton iterations of Kvaerno5's stage solves, RHS evaluations and the algebraic Newton iterations
inside the vector field happen inside XLA and are not exposed by diffrax: they stay 0.
``algebraic_iterations`` counts the host re-solves (segment ends and samples) only.
"""

from __future__ import annotations

import models.jaxconfig  # noqa: F401  (before diffrax: Equinox reads EQX_ON_ERROR on import)

# isort: split

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import diffrax as dfx
import jax
import jax.numpy as jnp
import numpy as np

from models.dae import DAESystem, Scenario
from models.executables import compiled_once
from models.kernels import as_device_params, kernels_for
from solvers.catalogue import DiffraxOptions
from solvers.diffrax_kvaerno import kvaerno5
from solvers.jax_reduced import reduced_vector_field
from solvers.reduced import ReducedODE
from solvers.result import Stats
from solvers.status import FailureReason
from solvers.stepping import Advance, StepFailure, begin_segment, initial_state
from solvers.trajectory import TrajectoryBuilder, check_state, segments

SOLVERS: dict[str, Callable[[jax.Array, jax.Array], dfx.AbstractSolver]] = {
    "kvaerno5": kvaerno5,
    "tsit5": lambda rtol, atol: dfx.Tsit5(),
    "dopri5": lambda rtol, atol: dfx.Dopri5(),
}
"""Method name -> diffrax solver for the controller's (rtol, atol). Kvaerno5 is
``solvers.diffrax_kvaerno``'s: diffrax's default stage solver tests the correction of the
stage's f against the state atol, which the vector field's rounding noise cannot meet at tight
tolerances (at rtol 1e-10 the step collapsed at t = 3 ms on the IEEE 39-bus case), and its
default dense output is only third-degree."""
SAVE_BUFFER_MIN = 16
"""Smallest sample buffer; buffers are powers of two so similar grids share one executable."""
PID_COEFFICIENTS: dict[str, tuple[float, float]] = {
    "kvaerno5": (0.3, 0.3),
    "tsit5": (0.0, 1.0),
    "dopri5": (0.0, 1.0),
}
"""(pcoeff, icoeff) of the PID step controller per method. Kvaerno5 gets the PI controller
diffrax's documentation suggests for stiff problems: on the WSCC 9-bus fault (rtol 1e-10, atol
1e-12) it takes 199 steps with 16 rejections against the I controller's 391 with 343 (rtol
1e-8: 100/12 against 178/161), 3x faster; (0.2, 0.4) was in between. The explicit methods keep
diffrax's default I controller (they rarely reject on non-stiff cases)."""
_REASONS = {
    "max_steps_reached": FailureReason.MAX_STEPS,
    "dt_min_reached": FailureReason.STEP_SIZE_TOO_SMALL,
    "max_steps_rejected": FailureReason.STEP_SIZE_TOO_SMALL,
    "nonlinear_max_steps_reached": FailureReason.NEWTON_FAILED,
    "nonlinear_divergence": FailureReason.NEWTON_FAILED,
    "singular": FailureReason.NEWTON_FAILED,
    "breakdown": FailureReason.NEWTON_FAILED,
    "stagnation": FailureReason.NEWTON_FAILED,
    "conlim": FailureReason.NEWTON_FAILED,
    "nonfinite": FailureReason.NON_FINITE,
    "nonfinite_input": FailureReason.NON_FINITE,
}
"""diffrax RESULTS name -> failure reason (anything else unsuccessful: INTERNAL_ERROR)."""
RESULT_CODES: dict[int, str] = {
    int(getattr(dfx.RESULTS, name)._value): name for name in dfx.RESULTS._name_to_item
}
"""diffrax's integer result code -> its name."""


@dataclass(frozen=True)
class _Key:
    method: str
    n_save: int
    max_steps: int
    first_step: bool


def save_buffer_size(n_samples: int) -> int:
    """The padded length of the per-segment sample buffer."""
    return max(SAVE_BUFFER_MIN, 1 << max(0, int(n_samples) - 1).bit_length())


def _segment_function(system: DAESystem, key: _Key) -> Callable:
    vector_field = reduced_vector_field(system)
    term = dfx.ODETerm(vector_field)

    def solve_segment(x0, z_guess, p, t0, t1, ts, rtol, atol, dt0, dtmax):
        pcoeff, icoeff = PID_COEFFICIENTS[key.method]
        controller = dfx.PIDController(
            rtol=rtol, atol=atol, dtmax=dtmax, pcoeff=pcoeff, icoeff=icoeff
        )
        sol = dfx.diffeqsolve(
            term,
            SOLVERS[key.method](rtol, atol),
            t0,
            t1,
            dt0 if key.first_step else None,
            x0,
            (p, z_guess),
            saveat=dfx.SaveAt(ts=ts, t1=True),
            stepsize_controller=controller,
            max_steps=key.max_steps,
            throw=False,
        )
        return (
            sol.ys,
            sol.ts,
            sol.result._value,
            sol.stats["num_accepted_steps"],
            sol.stats["num_rejected_steps"],
        )

    return solve_segment


def compiled_segment_solver(system: DAESystem, key: _Key) -> tuple[Callable, float, float]:
    """The compiled segment solve and the seconds this call spent compiling and loading it
    (both 0 when this process has it; ``models.executables``: a second worker loads it instead
    of tracing and compiling diffrax's solve, ~30 s for Kvaerno5 on ieee14)."""

    def example_args() -> tuple:
        x = jnp.asarray(system.x0, jnp.float64)
        z = jnp.asarray(system.z0, jnp.float64)
        scalar = jnp.asarray(0.0, jnp.float64)
        ts = jnp.zeros(key.n_save, jnp.float64)
        p = as_device_params(system.params)
        return (x, z, p, scalar, scalar, ts, scalar, scalar, scalar, scalar)

    return compiled_once(
        system, ("diffrax segment", key), lambda: _segment_function(system, key), example_args
    )


def diffrax_segments(method: str):
    """A stepper whose advances are whole segments (each one compiled diffrax solve)."""

    def stepper(
        system: DAESystem,
        scenario: Scenario,
        options: DiffraxOptions,
        stats: Stats,
        builder: TrajectoryBuilder,
    ) -> Iterator[Advance]:
        kernels, compile_seconds = kernels_for(system)
        key = _Key(
            method,
            save_buffer_size(len(builder.t_eval)),
            options.max_steps,
            options.first_step is not None,
        )
        solve_segment, segment_compile, segment_load = compiled_segment_solver(system, key)
        stats.compile_seconds += compile_seconds + segment_compile
        stats.load_seconds += segment_load
        limits = (
            jnp.asarray(options.rtol),
            jnp.asarray(options.atol),
            jnp.asarray(options.first_step or 0.0),
            jnp.asarray(options.max_step or jnp.inf),
        )
        x, z = initial_state(system, scenario)
        for segment in segments(system, scenario):
            ode, z = begin_segment(system, kernels, segment, x, z, stats, builder)
            last = segment.t_end >= scenario.t_end
            idx = builder.sample_indices(segment.t_start, segment.t_end, last)
            ts = np.full(key.n_save, segment.t_end)
            ts[: len(idx)] = builder.t_eval[idx]
            ys, ts_out, code, accepted, rejected = solve_segment(
                jnp.asarray(x),
                jnp.asarray(z),
                ode.p,
                jnp.asarray(segment.t_start),
                jnp.asarray(segment.t_end),
                jnp.asarray(ts),
                *limits,
            )
            ys, ts_out = np.asarray(ys), np.asarray(ts_out)
            stats.accepted += int(accepted)
            stats.rejected += int(rejected)
            _fill(builder, ode, idx, ys[: len(idx)])
            name = RESULT_CODES[int(code)]
            if name != "successful":
                reached = ts_out[np.isfinite(ts_out)]
                t_fail = float(reached[-1]) if reached.size else segment.t_start
                detail = f"{method}: {dfx.RESULTS[getattr(dfx.RESULTS, name)]}".strip()
                raise StepFailure(_REASONS.get(name, FailureReason.INTERNAL_ERROR), detail, t_fail)
            x = ys[-1]
            bad = check_state(x)
            if bad is not None:
                raise StepFailure(bad, "the state is no longer finite and bounded", segment.t_end)
            z = ode.solve_z(x)
            builder.accept(segment.t_end, x, z)
            yield Advance(segment.t_end, x, z, ode)

    return stepper


def _fill(builder: TrajectoryBuilder, ode: ReducedODE, idx: np.ndarray, xs: np.ndarray) -> None:
    """Samples reached (finite rows) with z re-solved at each, warm-started along the grid."""
    z_guess = ode.z.copy()
    for i, xi in zip(idx, xs, strict=True):
        if not np.all(np.isfinite(xi)):
            break
        zi = ode.solve_z(xi, z_guess)
        z_guess = zi
        builder.x_eval[i], builder.z_eval[i] = xi, zi
        builder.y_eval[i] = ode.outputs(xi, zi)
