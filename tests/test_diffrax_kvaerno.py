"""Kvaerno5 at the reference tolerance (solvers.diffrax_kvaerno): the stage solver converges on a
vector field whose rounding noise is above kappa * atol (where diffrax's default stage solver
stalls), the quintic dense output is exact on quintics, and on the IEEE 14-bus system the
rtol 1e-10 reference completes and agrees with Radau."""

from __future__ import annotations

import diffrax as dfx
import jax.numpy as jnp
import numpy as np
import pytest

import models.jaxconfig  # noqa: F401
from models.disturbances import BusFault, LoadStep
from models.library import build_system
from models.scenarios import make_scenario
from solvers import solve
from solvers.diffrax_kvaerno import StateScaledChord, kvaerno5

RTOL, ATOL = 1e-10, 1e-12
"""The platform's reference tolerances (platform/raptorgrid/spec.py)."""


def _noisy_equilibrium(t, y, args):
    """y = 1 is an equilibrium (modes -1 and -1e3) up to a 3e-13 deterministic 'rounding'
    term that changes with the last bits of y, as the reduced power-system vector fields do
    (~2e-13 on the IEEE 39-bus case)."""
    lam = jnp.array([-1.0, -1e3])
    return lam * (y - 1.0) + 3e-13 * jnp.sin(1e17 * y)


def _solve(solver, max_steps=2000):
    return dfx.diffeqsolve(
        dfx.ODETerm(_noisy_equilibrium),
        solver,
        0.0,
        1.0,
        None,
        jnp.array([1.0, 1.0]),
        None,
        stepsize_controller=dfx.PIDController(rtol=RTOL, atol=ATOL, pcoeff=0.3, icoeff=0.3),
        max_steps=max_steps,
        throw=False,
    )


def test_stage_solver_converges_at_the_noise_floor():
    ours = _solve(kvaerno5(RTOL, ATOL))
    assert ours.result == dfx.RESULTS.successful
    assert int(ours.stats["num_accepted_steps"]) < 100
    # the cause, pinned: diffrax's default measures the stage correction in f-space against
    # atol, below the noise, and the step collapses
    default = _solve(dfx.Kvaerno5())
    assert default.result == dfx.RESULTS.max_steps_reached


def test_stage_solver_rejects_a_foreign_argument_layout():
    finder = StateScaledChord(rtol=RTOL, atol=ATOL)
    with pytest.raises(TypeError, match="stage arguments"):
        finder.init(lambda y, a: (y, None), jnp.zeros(2), (1, 2), {}, None, None, frozenset())


def test_quintic_dense_output_is_exact_on_quintics():
    """y' = (5 t^4, 4 t^3): the quintic Hermite interpolant reproduces y = (t^5, t^4) between
    steps; diffrax's cubic one does not."""
    term = dfx.ODETerm(lambda t, y, args: jnp.stack([5 * t**4, 4 * t**3]))
    ts = jnp.linspace(0.05, 0.95, 7)
    exact = np.stack([np.asarray(ts) ** 5, np.asarray(ts) ** 4], axis=1)

    def samples(solver):
        sol = dfx.diffeqsolve(
            term,
            solver,
            0.0,
            1.0,
            0.5,
            jnp.zeros(2),
            None,
            saveat=dfx.SaveAt(ts=ts),
            stepsize_controller=dfx.ConstantStepSize(),
        )
        return np.asarray(sol.ys)

    assert np.max(np.abs(samples(kvaerno5(RTOL, ATOL)) - exact)) < 1e-12
    cubic = dfx.Kvaerno5(root_finder=StateScaledChord(rtol=RTOL, atol=ATOL))
    assert np.max(np.abs(samples(cubic) - exact)) > 1e-4


@pytest.mark.parametrize("kind", ["fault", "load_step"])
def test_reference_completes_on_ieee14_and_agrees_with_radau(kind):
    """Kvaerno5 at the reference tolerances completes 1 s of an IEEE 14-bus fault and load step
    (it used to stall on the IEEE cases; measured 316 and 183 steps, ~1e-9 from Radau) and
    agrees with Radau at the same tolerances."""
    system = build_system("ieee14")
    bus = system.names["load"][int(np.argmax(system.params["load_g"]))]
    disturbance = (
        BusFault(bus=bus, t_fault=0.1, t_clear=0.2)
        if kind == "fault"
        else LoadStep(bus=bus, t=0.1, scale=1.2)
    )
    scenario = make_scenario(system, disturbance, t_end=1.0)
    reference = solve(system, scenario, "kvaerno5", rtol=RTOL, atol=ATOL)
    assert reference.succeeded, reference.message
    assert reference.stats.accepted < 2000 and reference.stats.rejected < 200
    radau = solve(system, scenario, "radau", rtol=RTOL, atol=ATOL)
    assert radau.succeeded, radau.message
    scale = np.maximum(1.0, np.max(np.abs(radau.x_eval), axis=0))
    assert np.max(np.abs(reference.x_eval - radau.x_eval) / scale) < 1e-7
    assert np.max(np.abs(reference.y_eval - radau.y_eval)) < 1e-7
