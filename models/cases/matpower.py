"""MATPOWER cases as data for the generic assembler: power flow -> devices -> DAE at equilibrium.

Source network: a ``pandapower.networks`` case (``case14``, ``case39``, ``case57``, ``case118``), a
MATPOWER ``.m`` file (parsed as data) or a pandapower JSON file (``models.cases.matpower_io``).
Operating point: the project's power flow (``models.powerflow``) on the grid pandapower's converter
gives (``models.cases.pandapower_grid``).

This module only turns a case into data: a ``models.grid.Grid`` (network, solved operating
point, static loads), one ``GeneratorSlot`` per generator and a list of ``BusDevice`` instances;
``models.assembly.assemble`` builds the DAE. Devices (``models.devices``, each with its equations
and initialization twin):

* every generator: two-axis machine (``two_axis``; ``sixth_order`` with ``CaseConfig.machine``) +
  exciter (IEEE DC1A by default, or SEXS: ``CaseConfig.exciter``) + TGOV1 governor
  (``tgov1_smooth``), data on the machine rating converted to the system base; machine data by
  the rating rule of ``models.cases.typical_data`` unless ``generator_data`` gives a machine's
  own values (``published_generator_data(case)``: the published data of case14 and case39,
  ``models/data/ieee{14,39}_dynamic.json``, which the model library passes by default);
* bus devices: induction motors (``induction_motor``, 3rd order) and grid-following inverters
  (``gfl_inverter``): by default one of each, at the two load buses without a generator that carry
  the largest active load (motor at the largest); the motor serves ``motor_share`` of that bus's
  active load and the inverter injects ``inverter_share`` of its bus's active load at Q = 0; the
  rest of each bus's power-flow load stays a static load, so the power flow is reproduced exactly
  (the static part absorbs the motor's reactive power with opposite sign, like a local capacitor);
* static loads: ZIP (``models.components.loads``), constant impedance by default
  (``CaseConfig.zip_fractions``);
* network: branch-list KCL in rectangular coordinates (``models.network``), branches in MATPOWER
  row order (lines and transformers interleaved as in the case file).

Variables (pu on the system base unless stated; the assembler's layout):

* x = [per generator in case order: delta, omega, Eq_p, Ed_p, <exciter states>, Pv, Pt]
  + [per motor: s, er_p, em_p] + [per inverter: theta, eps, Pf, Qf, xP, xQ, i_d, i_q, gd, gq];
* z = [Vr of every bus, Vi of every bus, Id of every generator, Iq of every generator];
* g = [Re KCL per bus, Im KCL per bus, d-stator per generator, q-stator per generator].

A tripped generator (``gen_status`` 0) keeps its states; its stator equations become Id = Iq = 0.
Names: buses ``bus{n}``, branches ``br_{f}_{t}`` (``_2``, ... for parallel ones, MATPOWER's f, t),
generators ``gen{bus}`` (``_2``, ...), motors ``mot{bus}``, inverters ``inv{bus}``, loads by bus.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from models.assembly import BusDevice, Device, GeneratorSlot, assemble
from models.cases import typical_data as td
from models.cases.equilibrium import unique_names
from models.cases.matpower_io import NetworkSource, network_source
from models.cases.pandapower_grid import solved_pandapower_grid
from models.components.validation import number
from models.dae import DAESystem
from models.devices import (
    GFL_INVERTER,
    IEEE_DC1A,
    INDUCTION_MOTOR,
    SEXS_SMOOTH,
    SIXTH_ORDER,
    TGOV1_SMOOTH,
    TWO_AXIS,
)
from models.devices.sixth_order import validate_sixth_order
from models.devices.tgov1_smooth import validate_tgov1
from models.devices.two_axis import validate_two_axis
from models.grid import Grid, per_bus

EXCITERS = {"ieee_dc1a": IEEE_DC1A, "sexs": SEXS_SMOOTH}
"""Exciter name (``CaseConfig.exciter``) -> device model."""
MACHINES = {
    "two_axis": (TWO_AXIS, validate_two_axis),
    "sixth_order": (SIXTH_ORDER, validate_sixth_order),
}
"""Machine name -> (device model, validator of its data)."""
MACHINE_IMPEDANCES = ("Rs", "xd", "xd_p", "xd_pp", "xq", "xq_p", "xq_pp")
"""Machine fields scaled by S_base / S_rated to the system base (H and D by the inverse)."""
MOTOR_IMPEDANCES = ("rs", "xs", "xm", "rr", "xr")
INVERTER_IMPEDANCES = ("kp_c", "ki_c", "Lf", "Rf")
"""Inverter fields that are impedances (V/A), scaled by S_base / S_inv."""
DATA_DIR = Path(__file__).resolve().parent.parent / "data"
ELEMENT_KINDS = ("motor", "inverter")
BRANCH_FIELDS = ("branch_from", "branch_to", "branch_r", "branch_x", "branch_b", "branch_tap",
                 "branch_shift", "branch_status", "branch_g")  # fmt: skip
"""The grid's per-branch arrays, reordered together into MATPOWER row order."""
"""Bus-device kinds every MATPOWER case names (possibly none of them)."""


@dataclass(frozen=True)
class CaseConfig:
    """Modelling choices of a built case (the defaults are the paper's configuration)."""

    exciter: str = "ieee_dc1a"
    machine: str = "two_axis"
    zip_fractions: tuple[float, float, float] = (1.0, 0.0, 0.0)
    n_motors: int = 1
    n_inverters: int = 1
    motor_buses: tuple[int, ...] | None = None
    inverter_buses: tuple[int, ...] | None = None
    motor_share: float = 0.3
    inverter_share: float = 0.2

    def __post_init__(self) -> None:
        if self.exciter not in EXCITERS:
            raise KeyError(f"unknown exciter {self.exciter!r}; valid: {sorted(EXCITERS)}")
        if self.machine not in MACHINES:
            raise KeyError(f"unknown machine {self.machine!r}; valid: {sorted(MACHINES)}")
        if not (0.0 < self.motor_share < 1.0 and 0.0 < self.inverter_share < 1.0):
            raise ValueError("motor_share and inverter_share must lie in (0, 1)")


def _reordered(pf: Grid, rows: np.ndarray) -> dict:
    """The grid's per-branch arrays in the order ``rows``."""
    return {k: None if getattr(pf, k) is None else getattr(pf, k)[rows] for k in BRANCH_FIELDS}


def _bus_load(pf: Grid) -> np.ndarray:
    """P + jQ consumed at each bus (pu; the MATPOWER loads are constant power)."""
    return per_bus(pf, pf.load_bus, pf.load_s + pf.load_i + pf.load_y)


def _generator_slots(
    pf: Grid, rule: Mapping, config: CaseConfig, generator_data: Mapping | None
) -> tuple[tuple[str, ...], np.ndarray, list[str], list[GeneratorSlot]]:
    """Names, ratings (MVA), data classes and slots (machine, exciter, governor on the system
    base) of the generators."""
    model, validate = MACHINES[config.machine]
    names = pf.gen_names
    own = _own_generator_data(generator_data, names, config.exciter, validate)
    s_gen = np.abs(pf.gen_s) * pf.sbase
    ratings, classes, slots = [], [], []
    for k, name in enumerate(names):
        entry = own.get(name)
        v_gen = float(np.abs(pf.voltage[pf.gen_bus[k]]))
        rule_rating = td.machine_rating(rule, s_gen[k], pf.gen_s[k].imag * pf.sbase, v_gen)
        if entry is not None:
            rating = rule_rating if entry["mva"] is None else entry["mva"]
            base = rating if entry["machine_base_mva"] is None else entry["machine_base_mva"]
            cls, machine = "published", entry["machine"]
            exc_data = entry["exciter"] or rule["exciters"][config.exciter]
            gov_data = entry["governor"] or rule["governor"]
        else:
            rating = base = rule_rating
            klass = td.machine_class(rule, rating)
            cls = klass["class"]
            machine = validate(f"typical data, machine class {cls!r}", klass["raw_machine"])
            exc_data, gov_data = rule["exciters"][config.exciter], rule["governor"]
        ratings.append(rating)
        classes.append(cls)
        machine_to_sys = pf.sbase / float(base)
        to_sys = pf.sbase / float(rating)
        machine_params = {
            key: machine[key] * machine_to_sys
            if key in MACHINE_IMPEDANCES
            else machine[key] / machine_to_sys
            if key in ("H", "D")
            else machine[key]
            for key in model.params
        }
        governor = {
            key: gov_data[key] * to_sys
            if key == "R"
            else gov_data[key] / to_sys
            if key == "Dt"
            else gov_data[key]
            for key in TGOV1_SMOOTH.params
        }
        exciter = EXCITERS[config.exciter]
        exciter_params = {key: exc_data[key] for key in exciter.params}
        where = f"generator {name}"
        slots.append(
            GeneratorSlot(
                Device(model, machine_params, f"{where}, machine"),
                Device(exciter, exciter_params, f"{where}, exciter"),
                Device(TGOV1_SMOOTH, governor, f"{where}, governor"),
            )
        )
    return names, np.asarray(ratings, dtype=np.float64), classes, slots


def _own_generator_data(
    data: Mapping | None, names: tuple[str, ...], exciter: str, validate=validate_two_axis
) -> dict:
    """Validated per-generator data ``{"source", "generators": [{"name", "mva", "machine_base_mva",
    "machine", "exciter", "governor"}]}``, keyed by generator name; unknown names raise
    ``KeyError``. ``machine`` is on ``machine_base_mva`` (default: ``mva``); ``mva`` is the
    machine rating, the base of the governor data (default: the rule's rating); a missing
    ``exciter`` or ``governor`` takes the rule's typical one."""
    if data is None:
        return {}
    if not str(data.get("source", "")).strip():
        raise ValueError("generator data: field 'source' (the data's reference) is missing")
    out = {}
    for k, entry in enumerate(data.get("generators", [])):
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if name not in names:
            raise KeyError(f"generator data entry {k}: unknown generator {name!r}; valid: {names}")
        device = f"generator {name}"
        if name in out:
            raise ValueError(f"{device}: listed twice")
        bases = {}
        for field_name in ("mva", "machine_base_mva"):
            if field_name in entry:
                value = number(device, entry, field_name)
                if not value > 0:
                    raise ValueError(f"{device}: field {field_name!r} must be > 0, got {value!r}")
                bases[field_name] = value
        exc_data = entry.get("exciter")
        if exc_data is not None and (
            not isinstance(exc_data, Mapping) or exc_data.get("model") != exciter
        ):
            raise ValueError(f"{device}: field 'exciter' must have model {exciter!r}")
        gov_data = entry.get("governor")
        out[name] = {
            "mva": bases.get("mva"),
            "machine_base_mva": bases.get("machine_base_mva"),
            "machine": validate(f"{device}, machine", entry.get("machine", {})),
            "exciter": None
            if exc_data is None
            else td.EXCITER_VALIDATORS[exciter](f"{device}, exciter", exc_data),
            "governor": None
            if gov_data is None
            else validate_tgov1(f"{device}, governor", gov_data),
        }
    return out


PUBLISHED_DATA = {
    "case14": DATA_DIR / "ieee14_dynamic.json",
    "case39": DATA_DIR / "ieee39_dynamic.json",
}
"""Cases with published dynamic data (``generator_data`` files); the others use the rule."""


def published_generator_data(case: str) -> dict | None:
    """The published ``generator_data`` document of a ``pandapower.networks`` case (JSON), or
    ``None`` where none is published (its machines then follow the rule by rating)."""
    path = PUBLISHED_DATA.get(case)
    if path is None:
        return None
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def _device_buses(pf: Grid, config: CaseConfig) -> tuple[np.ndarray, np.ndarray]:
    """ppc positions of the motor and inverter buses (explicit bus numbers or the default rule)."""
    gen_set = set(int(i) for i in pf.gen_bus)
    load_p = _bus_load(pf).real
    candidates = [
        int(i) for i in np.argsort(-load_p, kind="stable") if load_p[i] > 0 and i not in gen_set
    ]
    number_to_pos = {int(b): i for i, b in enumerate(pf.numbers)}

    def explicit(buses: tuple[int, ...], what: str) -> list[int]:
        out = []
        for b in buses:
            if b not in number_to_pos or load_p[number_to_pos[b]] <= 0:
                valid = sorted(int(pf.numbers[i]) for i in candidates)
                raise KeyError(f"{what} bus {b} carries no active load; valid: {valid}")
            out.append(number_to_pos[b])
        return out

    motors = (
        explicit(config.motor_buses, "motor")
        if config.motor_buses is not None
        else candidates[: config.n_motors]
    )
    rest = [i for i in candidates if i not in motors]
    inverters = (
        explicit(config.inverter_buses, "inverter")
        if config.inverter_buses is not None
        else rest[: config.n_inverters]
    )
    if len(set(motors)) != len(motors) or len(set(inverters)) != len(inverters):
        raise ValueError("at most one motor and one inverter per bus")
    return np.asarray(motors, dtype=np.int64), np.asarray(inverters, dtype=np.int64)


def _bus_devices(pf: Grid, config: CaseConfig, rule: Mapping) -> list[BusDevice]:
    """The motors (drawing ``motor_share`` of their bus's active load) and inverters (injecting
    ``inverter_share`` of theirs at Q = 0), data from the rule converted to the system base by
    the device's rating."""
    base = pf.sbase
    load_p = _bus_load(pf).real
    mot_bus, inv_bus = _device_buses(pf, config)
    devices = []
    for b in mot_bus:
        p_mot = config.motor_share * load_p[b]
        to_sys = base / (p_mot * base / rule["motor_pf"])
        params = {
            key: value * to_sys
            if key in MOTOR_IMPEDANCES
            else value / to_sys
            if key == "H"
            else value
            for key, value in ((k, rule["motor"][k]) for k in INDUCTION_MOTOR.params)
        }
        name = f"mot{int(pf.numbers[b])}"
        device = Device(INDUCTION_MOTOR, params, f"motor {name}")
        devices.append(BusDevice(name, int(b), device, complex(-p_mot)))
    for b in inv_bus:
        p_inv = config.inverter_share * load_p[b]
        to_sys = 1.0 / (rule["inverter_margin"] * p_inv)
        params = {
            key: rule["inverter"][key] * to_sys
            if key in INVERTER_IMPEDANCES
            else rule["inverter"][key]
            for key in GFL_INVERTER.params
        }
        name = f"inv{int(pf.numbers[b])}"
        device = Device(GFL_INVERTER, params, f"inverter {name}")
        devices.append(BusDevice(name, int(b), device, complex(p_inv)))
    return devices


def build_matpower_case(
    source: str | Path | NetworkSource,
    *,
    name: str | None = None,
    config: CaseConfig | None = None,
    typical_data: Mapping | None = None,
    generator_data: Mapping | None = None,
) -> DAESystem:
    """The DAE of a MATPOWER case at its power-flow equilibrium (see the module docstring).

    ``source``: a case name (``case14`` ...), a ``.m`` / ``.json`` path or a ``NetworkSource``.
    ``typical_data`` defaults to ``models/data/typical_dynamic_data.json``; ``generator_data``
    optionally gives some generators their own (published) data.
    """
    start = time.perf_counter()
    config = config or CaseConfig()
    src = source if isinstance(source, NetworkSource) else network_source(source)
    rule = td.validate_typical_data(
        td.load_typical_data() if typical_data is None else typical_data
    )
    if config.exciter not in rule["exciters"]:
        raise ValueError(f"typical data has no exciter {config.exciter!r}")
    pf = solved_pandapower_grid(src.net, src.name)
    rows = src.branch_rows(pf.numbers, pf.branch_from, pf.branch_to)
    pairs = src.matpower_pairs or [
        (int(pf.numbers[f]), int(pf.numbers[t]))
        for f, t in zip(pf.branch_from, pf.branch_to, strict=True)
    ]
    gen_names, ratings, classes, slots = _generator_slots(pf, rule, config, generator_data)
    bus_devices = _bus_devices(pf, config, rule)
    case_name = name or src.name
    grid = replace(
        pf,
        name=case_name,
        branch_names=unique_names(f"br_{f_}_{t_}" for f_, t_ in pairs),
        **_reordered(pf, rows),
        load_fractions=config.zip_fractions,
        gen_mbase=np.full(len(gen_names), float(pf.sbase)),  # data on the system base
        info={
            **pf.info,
            "exciter": config.exciter,
            "machine": config.machine,
            "generator_mva": {n: float(m) for n, m in zip(gen_names, ratings, strict=True)},
            "generator_class": dict(zip(gen_names, classes, strict=True)),
            "sources": (
                f"network: {src.name} via pandapower's converter (MATPOWER branch order); "
                "operating point: the project's power flow; "
                + (
                    f"published dynamic data: {generator_data['source']}; "
                    if generator_data is not None
                    else ""
                )
                + f"dynamic data by rule: {rule['source']}"
            ),
        },
    )
    motors = [d.name for d in bus_devices if d.device.model.kind == "motor"]
    inverters = [d.name for d in bus_devices if d.device.model.kind == "inverter"]
    description = (
        f"{case_name}: {len(slots)} {config.machine} machines with {config.exciter} exciters and "
        f"TGOV1 governors, {len(motors)} induction motor(s) at {motors}, {len(inverters)} "
        f"grid-following inverter(s) at {inverters}, ZIP loads {config.zip_fractions}"
    )
    return assemble(
        grid, slots, description, bus_devices, element_kinds=ELEMENT_KINDS, started=start
    )
