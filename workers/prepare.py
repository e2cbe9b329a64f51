"""A claimed run made ready to solve (its system and scenario built from its inputs; the initial
states of runs claimed together solved together) and, once solved, ready to publish."""

from __future__ import annotations

import logging
import time
import traceback
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError
from raptorgrid import repository as repo
from raptorgrid.tables import CampaignStatus
from raptorgrid.zarr_store import run_arrays

from workers.context import WorkerContext, finish_attempt
from workers.lease import RunCancelled
from workers.publish import Solved

if TYPE_CHECKING:
    import numpy as np

    from solvers.result import SolveResult

log = logging.getLogger(__name__)


@cache
def _disturbance_adapter() -> TypeAdapter:
    """The validator of a stored disturbance (built once: building it costs ~0.6 ms)."""
    from models.disturbances import Disturbance

    return TypeAdapter(Disturbance)


@dataclass
class Prepared:
    """A claimed run ready to solve: its inputs, network system and scenario."""

    claim: repo.Claim
    inputs: repo.RunInputs
    system: Any
    scenario: Any
    inputs_mark: float
    """``time.perf_counter()`` when its build began, back-dated by its share of its group's
    initial states (``group_initial_states``): its overhead after the claim starts there."""


def prepare_run(
    ctx: WorkerContext,
    claim: repo.Claim,
    phases: dict[str, float],
    inputs: repo.RunInputs,
    initial_state: tuple[np.ndarray, np.ndarray] | None = None,
) -> Prepared | str:
    """Build a claimed run's system and scenario from its inputs (read in its claim's
    transaction, or with its batch's); a cancelled campaign raises ``RunCancelled``; invalid
    inputs are recorded as a failed run ("invalid-input"). ``initial_state``: its perturbed
    initial state when already solved with its group's (``group_initial_states``)."""
    from models.library import build_system
    from models.scenarios import make_scenario
    from solvers import validate_options
    from solvers.status import FailureReason, RunStatus

    shared = phases.get("build", 0.0)  # its share of the group's initial states, if any
    mark = time.perf_counter()
    if inputs.campaign_status == CampaignStatus.CANCELLED.value:
        raise RunCancelled(f"run {claim.run_id}: campaign cancelled")
    try:
        system = build_system(inputs.network)
        disturbance = _disturbance_adapter().validate_python(inputs.disturbance)
        scenario = make_scenario(
            system,
            disturbance,
            t_end=inputs.t_end,
            ic_seed=inputs.ic_seed,
            ic_spread=inputs.ic_spread,
            n_eval=inputs.n_eval,
            label=inputs.scenario_label,
            initial_state=initial_state,
        )
        validate_options(inputs.method, inputs.options)
    except (KeyError, ValueError, ValidationError) as exc:
        message = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        finish_attempt(
            ctx,
            claim,
            RunStatus.FAILED,
            reason=FailureReason.INVALID_INPUT.value,
            message=message,
            traceback=traceback.format_exc(),
        )
        return "invalid-input"
    phases["build"] = shared + time.perf_counter() - mark
    return Prepared(claim, inputs, system, scenario, mark - shared)


def group_initial_states(
    claimed: dict[int, tuple[repo.Claim, repo.RunInputs]],
    reraise: tuple[type[BaseException], ...] = (),
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """The perturbed initial states of runs claimed together, solved together per network
    (``models.scenarios.perturbed_initial_states``, bit for bit the states solved alone; a
    run's own algebraic Newton was ~1 ms of a 35 ms wscc9 run's 1.0 ms build, mostly JAX's host
    overhead, in cold caches after the previous solve); run id -> (x0, z0). Runs left out (no
    perturbation, not converged, invalid network) are built alone by ``prepare_run``, which
    records their errors. ``reraise``: exceptions that are not this solve's to absorb (Celery's
    soft time limit)."""
    from models.library import build_system
    from models.scenarios import perturbed_initial_states

    by_network: dict[str, list[repo.RunInputs]] = {}
    for _, inputs in claimed.values():
        by_network.setdefault(inputs.network, []).append(inputs)
    states: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for network, runs in by_network.items():
        try:
            solved = perturbed_initial_states(
                build_system(network), [(r.ic_seed, r.ic_spread) for r in runs]
            )
        except reraise:
            raise
        except (KeyError, ValueError):
            continue  # invalid inputs: each run's build records them
        except Exception:  # an optimization only: each run's build meets it and records it
            log.exception("network %r: solving the initial states together failed", network)
            continue
        for r in runs:
            if (r.ic_seed, r.ic_spread) in solved:
                states[r.run_id] = solved[r.ic_seed, r.ic_spread]
    return states


def solved_run(
    prepared: Prepared,
    result: SolveResult,
    phases: dict[str, float],
    call_seconds: float,
    *,
    batched: bool = False,
) -> Solved:
    """The solved run with its Zarr arrays, ready to publish (``commit``); ``call_seconds``:
    this run's share of the method call (kernels, compile/load and solve). Its time before
    publishing besides the call: alone, everything since its inputs were read; ``batched``
    (solved with others), its own claim share, build and arrays (the time since its inputs
    were read spans the other members' builds and the whole call)."""
    claim, inputs = prepared.claim, prepared.inputs
    phases["solve"] = call_seconds
    mark = time.perf_counter()
    arrays = run_arrays(
        result,
        attrs={
            "run_id": claim.run_id,
            "campaign_id": inputs.campaign_id,
            "attempt": claim.attempt,
            "network": inputs.network,
            "scenario": inputs.scenario_label,
        },
    )
    return Solved(
        claim=claim,
        campaign_id=inputs.campaign_id,
        probe=inputs.clearing_time is not None,
        result=result,
        arrays=arrays,
        before_seconds=(
            phases["claim"] + phases["build"] + time.perf_counter() - mark
            if batched
            else phases["claim"] + time.perf_counter() - prepared.inputs_mark - call_seconds
        ),
        phases=phases,
    )
