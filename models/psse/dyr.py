"""PSS(R)E dynamic data (``.dyr``): one record per device, ``BUS 'MODEL' ID CON... /``, free
format over as many lines as needed, ended by ``/`` (PSS/E Program Operation Manual, "Dynamics
Data File").

Every record must name a model of ``models.devices.MODELS`` with exactly its number of values.
Unsupported models are gathered into one error that lists each with its lines. With
``substitute=True`` an unsupported exciter, governor or stabilizer is left out instead (the
machine keeps its initial field voltage, mechanical torque or no stabilizing signal) and each
substitution is returned as a warning. Records whose first field is not a bus number (ANDES's
``Line 'Toggle' ...`` event records) are not PSS/E device records: they are listed as warnings
and read past, since a campaign's disturbances define the events.
"""

from __future__ import annotations

from dataclasses import dataclass

from models.devices import MODELS
from models.psse.records import PsseError, split_record

KNOWN_UNSUPPORTED_ROLES = {
    "ESST4B": "exciter", "EXST2": "exciter",
    "GGOV1": "governor",
    "PSS2A": "stabilizer", "PSS2B": "stabilizer",
    "GENTPJ": "machine",
}  # fmt: skip
"""Roles of models met in planners' files but not (yet) supported: what a substitution drops."""


@dataclass(frozen=True)
class DyrRecord:
    bus: int
    model: str
    id: str
    values: tuple[float, ...]
    line: int


@dataclass(frozen=True)
class DyrData:
    records: tuple[DyrRecord, ...]
    warnings: tuple[str, ...]


def _records(text: str, file: str):
    """(first line, fields) of each ``/``-terminated record."""
    fields: list[str | None] = []
    start = 0
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or (not fields and stripped.startswith(("//", "@!"))):
            continue
        try:
            part = split_record(line)
        except ValueError as exc:
            raise PsseError(file, number, "dynamic record", str(exc)) from None
        if not fields:
            start = number
        fields.extend(part)
        if _terminated(line):
            yield start, fields
            fields = []
    if fields:
        raise PsseError(file, start, "dynamic record", "the record is not ended by '/'")


def _terminated(line: str) -> bool:
    quote = ""
    for ch in line:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "/":
            return True
    return False


def parse_dyr(text: str, file: str = "case.dyr", substitute: bool = False) -> DyrData:
    """Read a ``.dyr`` file; see the module docstring."""
    records, warnings = [], []
    unsupported: dict[str, list[int]] = {}
    for line, fields in _records(text, file):
        if len(fields) < 3 or fields[1] is None:
            raise PsseError(file, line, "dynamic record", "expected BUS 'MODEL' ID values /")
        try:
            bus = int(fields[0] or "")
        except ValueError:
            warnings.append(
                f"{file}, line {line}: '{fields[1]}' record for {fields[0]!r} is not a PSS/E "
                "device record (an ANDES event); read past"
            )
            continue
        model = fields[1].strip().upper()
        if model not in MODELS:
            unsupported.setdefault(model, []).append(line)
            continue
        spec = MODELS[model]
        values = fields[3:]
        if len(values) != len(spec.params):
            raise PsseError(
                file, line, f"{model} record",
                f"{model} has {len(spec.params)} values ({', '.join(spec.params)}); "
                f"{len(values)} given",
            )  # fmt: skip
        numbers = []
        for name, value in zip(spec.params, values, strict=True):
            try:
                numbers.append(float(value or ""))
            except ValueError:
                raise PsseError(
                    file, line, f"{model} record", f"field {name} = {value!r} is not a number"
                ) from None
        records.append(DyrRecord(bus, model, (fields[2] or "1").strip(), tuple(numbers), line))
    if unsupported:
        droppable = {m: ls for m, ls in unsupported.items() if _droppable(m)}
        if not substitute or len(droppable) < len(unsupported):
            listed = "; ".join(
                f"{m} (line{'s' if len(ls) > 1 else ''} {', '.join(map(str, ls))})"
                for m, ls in sorted(unsupported.items())
            )
            supported = ", ".join(sorted(MODELS))
            hint = (
                " (substitution leaves out exciters, governors and stabilizers only)"
                if substitute
                else "; ask for substitution to leave unsupported exciters, governors and "
                "stabilizers out"
            )
            raise PsseError(
                file, 0, "dynamic data",
                f"unsupported dynamic models: {listed}. Supported: {supported}{hint}",
            )  # fmt: skip
        for model, lines in sorted(droppable.items()):
            role = KNOWN_UNSUPPORTED_ROLES[model]
            kept = {
                "exciter": "its machine keeps its initial field voltage",
                "governor": "its machine keeps its initial mechanical torque",
                "stabilizer": "no stabilizing signal",
            }[role]
            warnings.append(
                f"{file}: {model} {role} at lines {', '.join(map(str, lines))} left out "
                f"(unsupported; {kept})"
            )
    return DyrData(tuple(records), tuple(warnings))


def _droppable(model: str) -> bool:
    return KNOWN_UNSUPPORTED_ROLES.get(model) in ("exciter", "governor", "stabilizer")
