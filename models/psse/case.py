"""A PSS(R)E case (``.raw`` + ``.dyr``) as a ``DAESystem``: parse both files, solve the power
flow (``models.psse.network``), attach each ``.dyr`` record to its machine by (bus, machine
ID), and assemble (``models.assembly``). Every in-service machine needs exactly one machine
model (a synchronous machine, or a converter such as REGCA1 with its REECA1 and REPCA1
controls); a record naming a bus and ID without an in-service machine is refused with its
line."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from models.assembly import (
    SLOT_ROLES,
    BusDevice,
    Device,
    GeneratorSlot,
    assemble,
    check_parameters,
    check_slots,
)
from models.assembly.layout import implausible
from models.dae import DAESystem
from models.devices import MODELS
from models.grid import Grid
from models.powerflow import solve_power_flow
from models.psse.dyr import parse_dyr
from models.psse.network import build_network
from models.psse.raw import parse_raw
from models.psse.records import PsseError

LOAD_CONVERSION = (0.0, 1.0, 0.0, 1.0)
"""The default conversion of the loads' constant-power parts for the dynamics, as fractions (P
to I, P to Z, Q to I, Q to Z): every constant-power part to constant admittance at the solved
voltage (PSS/E's CONL, which planners run before a dynamic simulation, and ANDES 2.0.0's ``PQ``
default ``p2z = q2z = 1``). The records' constant-current and constant-admittance parts are kept
as given either way. ``load_conversion=None`` keeps the constant-power parts too: without
PSS/E's low-voltage PQBRAK characteristic (not modelled) a deep fault may then leave the network
with no solution (Kundur's N-1 line trips: 24 of 30 runs)."""
ANDES_LOAD_CONVERSION = LOAD_CONVERSION
"""ANDES's conversion, named where the cross-check asks for it (``tests/psse_crosscheck.py``)."""
ZSORCE_TOLERANCE = 1e-6
"""|ZX - X''d| (pu on MBASE) above which a note records that ZSORCE differs from X''d."""


@dataclass(frozen=True)
class PsseCase:
    """A raw/dyr pair read, solved and attached: what ``assemble`` needs (nothing compiled)."""

    grid: Grid
    slots: tuple[GeneratorSlot, ...]
    description: str
    bus_devices: tuple[BusDevice, ...] = ()
    """Load models (CIM5BL motors) on their loads' buses."""

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(self.grid.info["warnings"])


def build_psse_case(raw_text: str, dyr_text: str, name: str, **options) -> DAESystem:
    """The DAE of a raw/dyr pair (options of ``load_psse_case``). Warnings and notes are in
    ``system.info["warnings"]``."""
    case = load_psse_case(raw_text, dyr_text, name, **options)
    return assemble(case.grid, case.slots, case.description, case.bus_devices)


def load_psse_case(
    raw_text: str,
    dyr_text: str,
    name: str,
    *,
    raw_file: str = "case.raw",
    dyr_file: str = "case.dyr",
    substitute: bool = False,
    load_conversion: tuple[float, float, float, float] | None = LOAD_CONVERSION,
    strict: bool = False,
) -> PsseCase:
    """Parse, solve the power flow, attach the dynamic records and check their parameters;
    ``substitute`` leaves unsupported controllers out with a warning (``models.psse.dyr``).

    Data as given: a value the equations cannot use (a division by zero, a negative time
    constant, an unsolvable initialization) is an error naming its record; a value they can use
    but that fails a plausibility rule of the model (``DeviceModel.plausible``, e.g. GENROU's
    X''d > Xl, which ANDES's own IEEE 39 data break) is a warning, or with ``strict`` an error.

    Loads: the dynamics use each ``.raw`` load record's constant-current (IP + jIQ) and
    constant-admittance (YP - jYQ) parts as given, and its constant-power part (PL + jQL)
    converted by ``load_conversion`` = (P to I, P to Z, Q to I, Q to Z) at the solved voltage
    (``convert_loads``, PSS/E's CONL; default ``LOAD_CONVERSION``, all to constant admittance);
    ``load_conversion=None`` keeps the constant-power parts as given too. A warning on the
    network says which. Raises ``PsseError`` (file, line, record) or ``ValueError`` (a parameter
    value, naming its record)."""
    raw = parse_raw(raw_text, raw_file)
    net = build_network(raw)
    solved = solve_power_flow(net.grid)
    dyr = parse_dyr(dyr_text, dyr_file, substitute=substitute)
    warnings = list(net.notes) + list(dyr.warnings) + list(solved.info["q_violations"])
    fractions = (0.0, 0.0, 0.0, 0.0) if load_conversion is None else tuple(load_conversion)
    load_s, load_i, load_y = convert_loads(
        solved.load_s, solved.load_i, solved.load_y, np.abs(solved.voltage[solved.load_bus]),
        fractions,
    )  # fmt: skip
    slot_of = {(bus, gid.strip()): k for k, (bus, gid) in enumerate(net.gen_ids)}
    bus_devices: list[BusDevice] = []
    on_load: dict[int, str] = {}
    found: list[dict[str, Device]] = [{} for _ in net.gen_ids]
    for rec in dyr.records:
        key = (rec.bus, rec.id)
        if MODELS[rec.model].role == "bus":
            bus_devices.append(_load_model(raw, net.grid, rec, dyr_file, raw_file, on_load,
                                           warnings))  # fmt: skip
            continue
        if key not in slot_of:
            raise PsseError(
                dyr_file, rec.line, f"{rec.model} record",
                f"no in-service machine '{rec.id}' at bus {rec.bus} in {raw_file}",
            )  # fmt: skip
        model = MODELS[rec.model]
        slot = found[slot_of[key]]
        role = "machine" if model.role == "converter" else model.role
        if role in slot:
            raise PsseError(
                dyr_file, rec.line, f"{rec.model} record",
                f"machine '{rec.id}' at bus {rec.bus} already has a {model.role} "
                f"({slot[role].model.name}, {slot[role].where})",
            )  # fmt: skip
        k = slot_of[key]
        params = dict(zip(model.params, rec.values, strict=True))
        if model.role == "machine":
            z = net.gen_zsource[k]
            params["ra"] = z.real
            if model.name == "GENCLS":
                params["xd_p"] = z.imag
            elif abs(z.imag - params.get("Xd_pp", z.imag)) > ZSORCE_TOLERANCE:
                warnings.append(
                    f"{dyr_file}, line {rec.line}: ZSORCE ZX = {z.imag:g} of machine "
                    f"'{rec.id}' at bus {rec.bus} differs from X''d = {params['Xd_pp']:g}; "
                    "X''d is used"
                )
        if model.role == "plant":
            params.update(_monitored_branch(net.grid, params, rec, dyr_file))
            params["fn"] = net.grid.f_hz
        if model.readings is not None:
            warnings += [f"{dyr_file}, line {rec.line}: {rec.model} of machine '{rec.id}' at bus "
                         f"{rec.bus}: {text}" for text in model.readings(params)]  # fmt: skip
        slot[role] = Device(model, params, f"{dyr_file}, line {rec.line}")
    warnings.append(load_model_note(raw_file, fractions))
    for k in on_load:  # a motor's load keeps its parts: the motor takes its constant power
        load_s[k], load_i[k], load_y[k] = solved.load_s[k], solved.load_i[k], solved.load_y[k]
    missing = [solved.gen_names[k] for k, slot in enumerate(found) if "machine" not in slot]
    if missing:
        raise PsseError(
            dyr_file, 0, "dynamic data",
            f"no machine model for the in-service generator(s) {', '.join(missing)} of {raw_file}",
        )  # fmt: skip
    if substitute:  # a stabilizer whose exciter was left out has nothing to add its signal to
        for slot in found:
            if "stabilizer" in slot and "exciter" not in slot:
                pss = slot.pop("stabilizer")
                warnings.append(
                    f"{pss.where}: {pss.model.name} stabilizer left out (its machine has no "
                    "exciter, substituted or absent; no stabilizing signal)"
                )
    implausible_data = [
        f"{text} (a plausibility rule, not needed by the equations; used as given)"
        for role in SLOT_ROLES
        for text in implausible([s.get(role) for s in found])
    ]
    if implausible_data and strict:
        raise ValueError("; ".join(t.split(" (a plausibility rule")[0] for t in implausible_data))
    warnings += implausible_data
    slots = [
        GeneratorSlot(
            s["machine"],
            s.get("exciter"),
            s.get("governor"),
            s.get("stabilizer"),
            s.get("electrical"),
            s.get("plant"),
        )  # fmt: skip
        for s in found
    ]
    grid = replace(
        solved,
        name=name,
        load_s=load_s,
        load_i=load_i,
        load_y=load_y,
        info={
            "sources": f"PSS/E raw {raw_file} (revision {raw.version}) and {dyr_file}",
            "title": " / ".join(t for t in raw.title if t),
            "areas": {str(k): v for k, v in raw.areas.items()},
            "zones": {str(k): v for k, v in raw.zones.items()},
            "bus_area": tuple(int(a) for a in net.bus_area),
            "power_flow_iterations": solved.info["power_flow_iterations"],
            "power_flow_mismatch": solved.info["power_flow_mismatch"],
            "warnings": tuple(warnings),
            "load_conversion": dict(
                zip(("p_to_i", "p_to_z", "q_to_i", "q_to_z"), fractions, strict=True)
            ),
        },
    )
    models = sorted(
        {
            d.model.name
            for s in slots
            for d in (s.machine, s.exciter, s.governor, s.stabilizer, s.electrical, s.plant)
            if d
        }
    )
    motors = f", {len(bus_devices)} CIM5BL motor loads" if bus_devices else ""
    description = (
        f"{name}: PSS/E case {raw_file} + {dyr_file}: {grid.n_bus} buses, "
        f"{grid.n_branch} branches, {len(slots)} machines ({', '.join(models)}){motors}"
    )
    for role in SLOT_ROLES:
        check_parameters(slots, role)
    check_slots(slots)
    return PsseCase(grid, tuple(slots), description, tuple(bus_devices))


def _load_model(raw, grid: Grid, rec, dyr_file: str, raw_file: str, on_load: dict[int, str],
                warnings: list[str]) -> BusDevice:  # fmt: skip
    """A load record's motor (CIM5BL: bus and load ID) as a bus device asked to draw the load's
    constant-power part PL + jQL (``models.devices.cim5``); its motor base MBASE, or PMULT x PL
    where MBASE = 0, as ``scale`` = base / SBASE. Readings go to ``warnings``."""
    model = MODELS[rec.model]
    where = f"{dyr_file}, line {rec.line}"
    what = f"{rec.model} record"
    loads = [k for k, ld in enumerate(raw.loads) if (ld.bus, ld.id.strip()) == (rec.bus, rec.id)]
    if not loads:
        raise PsseError(
            dyr_file,
            rec.line,
            what,
            f"no in-service load '{rec.id}' at bus {rec.bus} in {raw_file}",
        )
    k = loads[0]
    if k in on_load:
        taken = f"load '{rec.id}' at bus {rec.bus} already has a motor ({on_load[k]})"
        raise PsseError(dyr_file, rec.line, what, taken)
    load = raw.loads[k]
    if load.pl <= 0:
        raise PsseError(dyr_file, rec.line, what,
                        f"load '{rec.id}' at bus {rec.bus} has no constant-power P (PL = "
                        f"{load.pl:g} MW) for its motor to draw")  # fmt: skip
    params = dict(zip(model.params, rec.values, strict=True))
    problems = model.check({n: np.array([v]) for n, v in params.items()})
    if problems:
        raise ValueError("; ".join(f"{where}: {rec.model} {name} = {params[name]:g} {why}"
                                   for name, _, why in problems))  # fmt: skip
    base = params["MBASE"] if params["MBASE"] > 0 else params["PMULT"] * load.pl
    params["scale"] = base / grid.sbase
    text = [f"motor base {base:g} MVA" + ("" if params["MBASE"] > 0 else
            f" (MBASE = 0: PMULT {params['PMULT']:g} x PL {load.pl:g} MW)"),
            f"draws the load's constant-power part PL + jQL = {load.pl:g} + j{load.ql:g} MVA "
            "(motor and compensating shunt); its IP, IQ, YP, YQ stay static"]  # fmt: skip
    warnings += [f"{where}: {rec.model} on load '{rec.id}' at bus {rec.bus}: {w}"
                 for w in text + model.readings(params)]  # fmt: skip
    on_load[k] = where
    bus = int(np.flatnonzero(np.asarray(grid.bus_numbers) == rec.bus)[0])
    s = -complex(load.pl, load.ql) / grid.sbase
    return BusDevice(f"cim5_{rec.bus}_{rec.id}", bus, Device(model, params, where), s)


def _monitored_branch(grid: Grid, params: dict, rec, dyr_file: str) -> dict[str, float]:
    """A plant control's measured branch (BUS1 -> BUS2, circuit CKTID) as ``branch`` (position,
    -1 for none: BUS1 = BUS2 = 0) and ``branch_end`` (0: BUS1 is its from end, 1: its to end)."""
    b1, b2 = int(params["BUS1"]), int(params["BUS2"])
    if b1 == 0 and b2 == 0:
        return {"branch": -1.0, "branch_end": 0.0}
    ckt = str(int(params["CKTID"]))
    names = {n: k for k, n in enumerate(grid.branch_names)}
    for name in (f"line_{b1}_{b2}_{ckt}", f"line_{b2}_{b1}_{ckt}", f"xf_{b1}_{b2}_{ckt}",
                 f"xf_{b2}_{b1}_{ckt}"):  # fmt: skip
        if name in names:
            k = names[name]
            numbers = list(grid.bus_numbers)
            at_from = numbers[int(grid.branch_from[k])] == b1
            return {"branch": float(k), "branch_end": 0.0 if at_from else 1.0}
    raise PsseError(dyr_file, rec.line, f"{rec.model} record",
                    f"no branch {b1} - {b2} circuit '{ckt}' in the network")  # fmt: skip


def load_model_note(raw_file: str, fractions) -> str:
    """The warning that says which load model the dynamics use (``load_psse_case``)."""
    p_i, p_z, q_i, q_z = (float(f) for f in fractions)
    if not any(fractions):
        return (
            f"{raw_file}: loads in the dynamics as the load records give them (constant power "
            "PL + jQL, constant current IP + jIQ, constant admittance YP - jYQ, as in the power "
            "flow); no conversion of the constant-power parts (PSS/E CONL) was asked for"
        )
    return (
        f"{raw_file}: loads in the dynamics converted from the power flow's (PSS/E CONL at the "
        f"solved voltages): of the constant-power P {p_i:g} to constant current and {p_z:g} to "
        f"constant admittance, of Q {q_i:g} to constant current and {q_z:g} to constant "
        "admittance; the rest of each constant-power part stays constant power"
    )


def convert_loads(load_s, load_i, load_y, vm, fractions):
    """PSS/E CONL: move the fractions (P to I, P to Z, Q to I, Q to Z) of each constant-power part
    to constant current and constant admittance at the solved voltage magnitudes ``vm``, so the
    initial operating point is unchanged (Siemens PTI, PSS/E Program Operation Manual, "Load
    Conversion"). Returns the new (constant power, constant current, constant admittance)."""
    p_i, p_z, q_i, q_z = fractions
    for name, value in zip(("p_to_i", "p_to_z", "q_to_i", "q_to_z"), fractions, strict=True):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"load_conversion: {name} = {value} must lie in [0, 1]")
    if p_i + p_z > 1.0 or q_i + q_z > 1.0:
        raise ValueError("load_conversion: the fractions of P (and of Q) must sum to <= 1")
    p, q = load_s.real, load_s.imag
    s = (1 - p_i - p_z) * p + 1j * (1 - q_i - q_z) * q
    i = load_i + (p_i * p + 1j * q_i * q) / vm
    y = load_y + (p_z * p + 1j * q_z * q) / vm**2
    return s, i, y
