"""The campaign spec and its expansion into scenarios and runs.

Two stages, both reporting errors as ``(loc, message)`` pairs that name the field:

1. ``CampaignCreate`` (pydantic, ``extra=forbid``) checks the structure, the network name, the
   method names and every swept option configuration against ``solvers.catalogue``.
2. ``expand`` checks what needs settings or the built network (horizon and run-count limits,
   disturbance element names, event times) and returns the scenarios and runs to store.

Expansion: scenarios = disturbances x initial-condition instances (``ic_seed = seed + k``),
runs = scenarios x configurations, where an option given as a list is a sweep and the
configurations of a method are the cartesian product of its sweeps. Disturbances are listed
explicitly or produced by generators (``generate``: every branch trip, a fault at every bus, ...;
``raptorgrid.campaign_gen``). With ``reference`` set, each scenario also gets one reference run
(flagged ``is_reference``) that scoring compares every other run of the scenario with, on the
evaluation grid ``linspace(0, t_end, n_eval)``, against the ``thresholds``.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

import raptorgrid.case_store  # noqa: F401  (case:<id> networks)
from models.disturbances import Disturbance, NoDisturbance
from models.library import build_system, is_stored_case, network_names
from models.naming import unknown_name
from raptorgrid.campaign_gen import DisturbanceGenerator
from raptorgrid.settings import Settings
from raptorgrid.spec_errors import Loc, SpecError
from solvers.catalogue import METHODS, UnknownMethodError, validate_options

MAX_CAMPAIGN_SAMPLES = 200_000_000
"""Largest runs x n_eval of one campaign (each sample is a row of every state and output)."""
MAX_METHODS = 100
"""Most methods one campaign may list."""
MAX_CAMPAIGN_CONFIGURATIONS = 10_000
"""Most configurations of all methods together (each is at least one run: the default
``max_runs_per_campaign``), counted before any is validated."""

CCT_KINDS = ("bus_fault", "line_fault")
"""Disturbances whose clearing time a CCT campaign searches (each probe moves ``t_clear``)."""
ELEMENT_FIELDS = ("bus", "branch", "generator", "load", "source", "input", "state")
"""Fields of a disturbance that name a network element (checked against the built network)."""


class InitialConditions(BaseModel):
    """``count`` seeded instances around the equilibrium (seed + k, k < count)."""

    model_config = ConfigDict(extra="forbid")

    count: int = Field(1, ge=1, le=10_000)
    seed: int = Field(0, ge=0, le=2**31 - 1)
    spread: float = Field(0.0, ge=0.0, le=100.0)


class MethodSweep(BaseModel):
    """A method and its options; an option given as a list is swept."""

    model_config = ConfigDict(extra="forbid")

    method: str = Field(json_schema_extra={"enum": sorted(METHODS)})
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("method")
    @classmethod
    def _known_method(cls, value: str) -> str:
        try:
            validate_options(value, {})
        except UnknownMethodError as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("options")
    @classmethod
    def _valid_configurations(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        method = info.data.get("method")
        if method is None:  # the method itself was invalid; that error is reported
            return value
        for key, values in value.items():
            if isinstance(values, list) and not values:
                raise ValueError(f"option {key!r}: an empty sweep gives no configuration")
            if isinstance(values, list) and len(values) > MAX_SWEEP_VALUES:
                raise ValueError(
                    f"option {key!r}: {len(values)} values; a sweep lists at most "
                    f"{MAX_SWEEP_VALUES}"
                )
        n_configs = count_configurations(value)
        if n_configs > MAX_SWEEP_CONFIGURATIONS:
            raise ValueError(
                f"the sweep expands to {n_configs} configurations; the limit is "
                f"{MAX_SWEEP_CONFIGURATIONS} per method: sweep fewer values"
            )
        for config in configurations(value):
            try:
                validate_options(method, config)
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(map(str, e['loc'])) or 'options'}: {e['msg']}" for e in exc.errors()
                )
                raise ValueError(
                    f"{method} configuration {config_label(config)}: {problems}"
                ) from None
        return value


class ReferenceSpec(BaseModel):
    """The high-accuracy run of every scenario that the other runs are scored against."""

    model_config = ConfigDict(extra="forbid")

    method: str = "kvaerno5"
    options: dict[str, Any] = Field(default_factory=lambda: {"rtol": 1e-10, "atol": 1e-12})

    @model_validator(mode="after")
    def _valid(self) -> ReferenceSpec:
        try:
            validate_options(self.method, self.options)
        except UnknownMethodError as exc:
            raise ValueError(str(exc)) from None
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()
            )
            raise ValueError(f"reference {self.method} options: {problems}") from None
        return self


class Thresholds(BaseModel):
    """Accuracy qualification (all three must hold, as in the paper's Table I)."""

    model_config = ConfigDict(extra="forbid")

    state_error: float = Field(1e-3, gt=0.0, description="normalized state error, max")
    voltage_mae: float = Field(1e-4, gt=0.0, description="bus-voltage MAE, pu")
    kcl_max: float = Field(1e-6, gt=0.0, description="largest KCL residual, pu")


class CctSearch(BaseModel):
    """A critical-clearing-time campaign (``raptorgrid.repository.cct``): for every bus fault
    and method configuration, the longest fault duration after which the system stays stable
    (TSI > 0 over the horizon, ``scoring.indicators``), found by bisection with every probe a
    run through the queue. The fault's own ``t_clear`` is replaced by each probe's."""

    model_config = ConfigDict(extra="forbid")

    resolution: float = Field(0.005, gt=0.0, le=0.1, description="bracket width to stop at (s)")
    max_clearing: float = Field(
        0.5, gt=0.0, le=5.0, description="longest fault duration searched (s); the first probe"
    )
    window: float = Field(
        1.0, gt=0.0, le=60.0, description="least post-fault time the verdict covers (s)"
    )

    @property
    def most_probes(self) -> int:
        """Probes of one search at most: the longest duration, then bisection of [0, it]."""
        return 1 + math.ceil(math.log2(self.max_clearing / self.resolution))

    @model_validator(mode="after")
    def _bracket(self) -> CctSearch:
        if self.resolution >= self.max_clearing:
            raise ValueError("resolution must be shorter than max_clearing")
        return self


class CampaignCreate(BaseModel):
    """A campaign as submitted (``POST /campaigns``, ``raptorgrid run SPEC``)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    network: str = Field(
        description="a library network (`raptorgrid networks`) or an uploaded case, case:<id>",
        json_schema_extra={
            "anyOf": [{"enum": network_names()}, {"pattern": r"^case:[0-9]+$"}],
        },
    )
    t_end: float = Field(gt=0.0, description="horizon (s); capped by the max_horizon setting")
    n_eval: int = Field(201, ge=2, description="points of the evaluation grid")
    disturbances: list[Disturbance] = Field(default_factory=lambda: [NoDisturbance()])
    generate: list[DisturbanceGenerator] = Field(
        default_factory=list, description="disturbance generators, expanded on the network"
    )
    initial_conditions: InitialConditions = Field(default_factory=InitialConditions)
    methods: list[MethodSweep] = Field(min_length=1, max_length=MAX_METHODS)
    reference: ReferenceSpec | None = Field(
        None, description="one reference run per scenario; {} for kvaerno5 at rtol 1e-10"
    )
    thresholds: Thresholds = Field(default_factory=Thresholds)
    cct: CctSearch | None = Field(
        None, description="search the critical clearing time of each bus fault (docs/results.md)"
    )

    @field_validator("methods", mode="before")
    @classmethod
    def _bounded_methods(cls, value: Any) -> Any:
        """At most ``MAX_METHODS`` methods and ``MAX_CAMPAIGN_CONFIGURATIONS`` configurations in
        all, counted from the raw lists before any method or configuration is validated."""
        if not isinstance(value, list):
            return value
        if len(value) > MAX_METHODS:
            raise ValueError(
                f"{len(value)} methods; a campaign lists at most {MAX_METHODS} methods"
            )
        counts = [
            count_configurations(m["options"])
            for m in value
            if isinstance(m, dict) and isinstance(m.get("options"), dict)
        ]
        # a method past its own limit is refused by its own validator, naming its options
        total = sum(n for n in counts if n <= MAX_SWEEP_CONFIGURATIONS)
        if total > MAX_CAMPAIGN_CONFIGURATIONS:
            raise ValueError(
                f"the methods expand to {total} configurations; a campaign has at most "
                f"{MAX_CAMPAIGN_CONFIGURATIONS} configurations: sweep fewer values or split it"
            )
        return value

    @model_validator(mode="after")
    def _some_disturbance(self) -> CampaignCreate:
        if self.generate and "disturbances" not in self.model_fields_set:
            self.disturbances = []  # generators replace the default "none" disturbance
        if not self.disturbances and not self.generate:
            raise ValueError("give at least one disturbance or generator")
        return self

    @field_validator("network")
    @classmethod
    def _known_network(cls, value: str) -> str:
        """A library network, or an uploaded case ``case:<id>`` (its existence is checked when
        the campaign's disturbances are, since that needs the case store)."""
        if is_stored_case(value):
            from raptorgrid.case_store import stored_case_id

            try:
                stored_case_id(value)
            except KeyError as exc:
                raise ValueError(exc.args[0]) from None
            return value
        if value not in network_names():
            raise ValueError(unknown_name("network", value, network_names()))
        return value


MAX_SWEEP_VALUES = 100
"""Most values one swept option may list."""
MAX_SWEEP_CONFIGURATIONS = 1000
"""Most configurations one method's sweep may expand to (checked arithmetically, before the
product is formed: 3 options of 100 values would otherwise materialize and validate 10^6)."""


def count_configurations(options: dict[str, Any]) -> int:
    """Configurations ``configurations(options)`` would give, without forming them."""
    return math.prod(len(v) if isinstance(v, list) else 1 for v in options.values())


def configurations(options: dict[str, Any]) -> list[dict[str, Any]]:
    """The cartesian product of the swept options (a list value is a sweep)."""
    keys = list(options)
    axes = [v if isinstance(v, list) else [v] for v in options.values()]
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*axes)]


def config_label(options: dict[str, Any]) -> str:
    """A short, stable label of one configuration: ``rtol=1e-06,atol=1e-08`` or ``default``."""
    if not options:
        return "default"
    return ",".join(f"{k}={json.dumps(v) if isinstance(v, str) else v}" for k, v in options.items())


@dataclass(frozen=True)
class ScenarioPlan:
    index: int
    disturbance: dict[str, Any]
    ic_seed: int
    ic_spread: float
    label: str


@dataclass(frozen=True)
class RunPlan:
    scenario_index: int
    method: str
    options: dict[str, Any]
    config_label: str
    is_reference: bool = False
    clearing_time: float | None = None
    """A CCT probe's fault duration (s), replacing the disturbance's own."""


@dataclass(frozen=True)
class Expansion:
    scenarios: list[ScenarioPlan]
    runs: list[RunPlan]


def _disturbance_label(disturbance: Any) -> str:
    if getattr(disturbance, "steps", None):
        return "+".join(_disturbance_label(step) for step in disturbance.steps)
    fields = [getattr(disturbance, f, None) for f in ELEMENT_FIELDS]
    if disturbance.kind == "line_fault":  # which end of the branch is faulted
        fields.append(f"{disturbance.end} end")
    return ":".join([disturbance.kind, *(str(v) for v in fields if v is not None)])


def network_system(spec: CampaignCreate):  # noqa: ANN201 - a DAESystem
    """The campaign's network, built (once per process); an uploaded case that is missing or
    cannot be built is a ``SpecError`` on ``network``."""
    try:
        return build_system(spec.network)
    except KeyError as exc:
        raise SpecError([(("network",), str(exc.args[0]))]) from None
    except (ValueError, RuntimeError) as exc:
        if not is_stored_case(spec.network):
            raise
        raise SpecError([(("network",), f"{spec.network} cannot be built: {exc}")]) from None


def all_disturbances(spec: CampaignCreate) -> list[Any]:
    """The explicit disturbances, then those of every generator (builds the network)."""
    out = list(spec.disturbances)
    if spec.generate:
        system = network_system(spec)
        for i, generator in enumerate(spec.generate):
            try:
                out.extend(generator.disturbances(system))
            except ValueError as exc:
                raise SpecError([(("generate", i), str(exc))]) from None
    return out


def _offending_field(disturbance: Any, exc: KeyError) -> str:
    """The element field whose value the lookup error names (else the first one present)."""
    present = [f for f in ELEMENT_FIELDS if getattr(disturbance, f, None) is not None]
    named = [f for f in present if f"'{getattr(disturbance, f)}'" in str(exc.args[0])]
    return (named or present or ["kind"])[0]


def check_disturbances(spec: CampaignCreate) -> list[tuple[Loc, str]]:
    """Element names against the built network, and event times against the horizon."""
    system = network_system(spec)
    errors: list[tuple[Loc, str]] = []
    for i, disturbance in enumerate(spec.disturbances):
        parts = [((), disturbance)]
        if getattr(disturbance, "steps", None):
            parts = [(("steps", j), step) for j, step in enumerate(disturbance.steps)]
        failed = False
        for where, part in parts:
            try:
                part.events(system)
            except KeyError as exc:
                field = _offending_field(part, exc)
                errors.append((("disturbances", i, *where, field), str(exc.args[0])))
                failed = True
        if failed:
            continue
        if disturbance.last_time() > spec.t_end:
            errors.append(
                (
                    ("disturbances", i),
                    f"the last event (t = {disturbance.last_time()} s) is after the horizon "
                    f"t_end = {spec.t_end} s",
                )
            )
    return errors


def _check_generated(spec: CampaignCreate, disturbances: list[Any]) -> list[tuple[Loc, str]]:
    generated = disturbances[len(spec.disturbances) :]
    late = [d for d in generated if d.last_time() > spec.t_end]
    if late:
        return [
            (
                ("generate",),
                f"{len(late)} generated disturbances have events after the horizon t_end = "
                f"{spec.t_end} s (e.g. {_disturbance_label(late[0])} at {late[0].last_time()} s)",
            )
        ]
    return []


def _cct_errors(spec: CampaignCreate, disturbances: list[Any]) -> list[tuple[Loc, str]]:
    """A CCT campaign searches bus faults, has no reference, and a horizon that leaves the
    verdict's window after the longest fault searched."""
    cct = spec.cct
    errors: list[tuple[Loc, str]] = []
    if spec.reference is not None:
        errors.append((("reference",), "a CCT campaign has no reference: each probe is judged "
                       "by its own stability verdict"))  # fmt: skip
    for i, d in enumerate(disturbances):
        if d.kind not in CCT_KINDS:
            where = ("disturbances", i) if i < len(spec.disturbances) else ("generate",)
            message = (
                "a CCT campaign searches the clearing time of bus faults and line faults "
                f"(bus_fault, line_fault), not {d.kind}"
            )
            errors.append(((*where, "kind"), message))
            break
        need = d.t_fault + cct.max_clearing + cct.window
        if spec.t_end < need:
            errors.append((("t_end",), f"t_end must be at least t_fault + cct.max_clearing + "
                           f"cct.window = {need:g} s (fault {_disturbance_label(d)})"))  # fmt: skip
            break
    return errors


def expand(spec: CampaignCreate, *, settings: Settings) -> Expansion:
    """Scenarios and runs of ``spec``; raises ``SpecError`` naming every offending field."""
    disturbances = all_disturbances(spec)
    errors: list[tuple[Loc, str]] = []
    if spec.t_end > settings.max_horizon:
        errors.append((("t_end",), f"the horizon is limited to {settings.max_horizon} s"))
    if spec.n_eval > settings.max_eval_points:
        errors.append((("n_eval",), f"n_eval is limited to {settings.max_eval_points} points"))
    configs = [
        (sweep.method, config) for sweep in spec.methods for config in configurations(sweep.options)
    ]
    ic = spec.initial_conditions
    n_scenarios = len(disturbances) * ic.count
    per_scenario = len(configs) + (spec.reference is not None)
    if spec.cct is not None:  # every search probes at most this often
        per_scenario = len(configs) * spec.cct.most_probes
    n_runs = n_scenarios * per_scenario
    if n_runs > settings.max_runs_per_campaign:
        reference = " + 1 reference" if spec.reference is not None else ""
        errors.append(
            (
                ("methods",),
                f"the campaign expands to {n_runs} runs ({len(disturbances)} disturbances x "
                f"{ic.count} initial conditions x ({len(configs)} configurations{reference})); "
                f"the limit is {settings.max_runs_per_campaign} runs per campaign: split it",
            )
        )
    elif n_runs * spec.n_eval > MAX_CAMPAIGN_SAMPLES:
        errors.append(
            (
                ("n_eval",),
                f"{n_runs} runs x {spec.n_eval} evaluation points exceed the limit of "
                f"{MAX_CAMPAIGN_SAMPLES:.0e} stored samples per campaign: lower n_eval or split",
            )
        )
    if spec.cct is not None:
        errors += _cct_errors(spec, disturbances)
    if errors:  # do not check elements for a spec refused anyway
        raise SpecError(errors)
    errors = check_disturbances(spec) + _check_generated(spec, disturbances)
    if errors:
        raise SpecError(errors)
    scenarios = [
        ScenarioPlan(
            index=d * ic.count + k,
            disturbance=disturbance.model_dump(mode="json"),
            ic_seed=ic.seed + k,
            ic_spread=ic.spread,
            label=f"{_disturbance_label(disturbance)}#{k}",
        )
        for d, disturbance in enumerate(disturbances)
        for k in range(ic.count)
    ]
    if spec.cct is not None:  # one search per fault and configuration: its first probe
        first = spec.cct.max_clearing
        runs = [
            RunPlan(s.index, method, config, config_label(config), clearing_time=first)
            for s in scenarios
            for method, config in configs
        ]
        return Expansion(scenarios, runs)
    runs = []
    for scenario in scenarios:
        if spec.reference is not None:
            ref = spec.reference
            label = f"reference:{config_label(ref.options)}"
            runs.append(RunPlan(scenario.index, ref.method, dict(ref.options), label, True))
        runs.extend(
            RunPlan(scenario.index, method, config, config_label(config))
            for method, config in configs
        )
    return Expansion(scenarios, runs)
