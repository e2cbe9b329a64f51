"""Uploaded case files, validated as data: MATPOWER ``.m`` text, pandapower JSON, or a PSS/E
``.raw`` + ``.dyr`` pair (a JSON object ``{"raw": text, "dyr": text, "raw_file", "dyr_file",
"substitute", "load_conversion"}``, read by ``models.psse``: parsed, power flow solved and every
dynamic record attached and checked, nothing compiled).

Nothing is executed and nothing is imported on the file's say-so: MATPOWER files are parsed as
text (the ``mpc.baseMVA``, ``mpc.bus``, ``mpc.gen`` and ``mpc.branch`` matrices), pandapower
files with ``json.loads`` (no object hooks) and a whitelist of the ``_module``/``_class`` tags
``pandapower.from_json`` would follow later, so a stored file can never name arbitrary code.
Errors are ``CaseError`` with the location (``body``, a table, a line) and what is wrong.
"""

from __future__ import annotations

import json
import math
import re
from enum import StrEnum
from typing import Any

from raptorgrid.text_checks import find_invalid_text, invalid_text


class CaseFormat(StrEnum):
    MATPOWER = "matpower"
    PANDAPOWER = "pandapower"
    PSSE = "psse"


class CaseError(ValueError):
    """A refused case file: ``loc`` names where (``("body", "mpc.bus", "line 3")``)."""

    def __init__(self, loc: tuple[str, ...], message: str) -> None:
        self.loc, self.message = loc, message
        super().__init__(f"{'.'.join(loc)}: {message}")

    def __reduce__(self) -> tuple:
        return CaseError, (self.loc, self.message)  # crosses the check's process boundary


MATPOWER_COLUMNS = {"bus": 13, "gen": 10, "branch": 13}
"""Least columns of each required MATPOWER matrix (MATPOWER manual, appendix B)."""

MAX_ROWS = 100_000
"""Most rows of one table: bigger grids are out of scope for a transient campaign."""

ALLOWED_TAGS = {
    ("pandapower.auxiliary", "pandapowerNet"),
    ("pandas.core.frame", "DataFrame"),
    ("pandas.core.series", "Series"),
    ("builtins", "dict"),
    ("builtins", "list"),
    ("builtins", "tuple"),
}
"""The only ``_module``/``_class`` pairs accepted in pandapower JSON."""

_MATRIX_START = re.compile(r"mpc\.(\w+)\s*=\s*\[")
_MATRIX_END = re.compile(r"\]\s*;")
MAX_JSON_DEPTH = 64
"""Deepest nesting of an uploaded JSON document (pandapower files nest a few levels)."""
_SCALAR = re.compile(r"mpc\.baseMVA\s*=\s*([-+0-9.eE]+)\s*;")


def _text(data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CaseError(("body",), f"not UTF-8 text (byte {exc.start})") from None
    reason = invalid_text(text)
    if reason is not None:
        raise CaseError(("body",), reason)
    return text


def _matrices(text: str) -> dict[str, str]:
    """``{name: body}`` of every ``mpc.<name> = [ ... ];``, read in one pass (a later one of a
    name wins). Each body ends at the first ``]`` followed by ``;``; a start without one means
    no later start has one either, so the scan stops: linear in the text, where one lazy
    pattern rescanned to the end of the file from every ``mpc.``."""
    found: dict[str, str] = {}
    position = 0
    while (start := _MATRIX_START.search(text, position)) is not None:
        end = _MATRIX_END.search(text, start.end())
        if end is None:
            break
        found[start.group(1)] = text[start.end() : end.start()]
        position = end.end()
    return found


def _json_document(data: bytes) -> Any:
    """The parsed JSON of an upload: nesting beyond ``MAX_JSON_DEPTH`` and refused strings
    (``raptorgrid.text_checks``) are ``CaseError``s naming where."""
    try:
        document = json.loads(_text(data))
    except json.JSONDecodeError as exc:
        raise CaseError(("body",), f"invalid JSON at line {exc.lineno}: {exc.msg}") from None
    except RecursionError:
        raise CaseError(("body",), f"JSON nested more than {MAX_JSON_DEPTH} levels") from None
    stack: list[tuple[Any, int]] = [(document, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise CaseError(("body",), f"JSON nested more than {MAX_JSON_DEPTH} levels")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    problem = find_invalid_text(document)
    if problem is not None:
        loc, reason = problem
        raise CaseError(("body", *map(str, loc)), reason)
    return document


def _strip_comments(text: str) -> str:
    return "\n".join(line.split("%", 1)[0] for line in text.splitlines())


def _matrix(name: str, body: str) -> list[list[float]]:
    rows: list[list[float]] = []
    for i, raw in enumerate(re.split(r"[;\n]", body), start=1):
        cells = raw.replace(",", " ").split()
        if not cells:
            continue
        try:
            row = [float(c) for c in cells]
        except ValueError:
            bad = next(c for c in cells if not _is_number(c))
            raise CaseError(
                ("body", f"mpc.{name}", f"row {i}"), f"{bad!r} is not a number"
            ) from None
        if not all(math.isfinite(v) for v in row):
            raise CaseError(("body", f"mpc.{name}", f"row {i}"), "values must be finite")
        rows.append(row)
        if len(rows) > MAX_ROWS:
            raise CaseError(("body", f"mpc.{name}"), f"more than {MAX_ROWS} rows")
    return rows


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def parse_matpower(data: bytes) -> dict[str, Any]:
    """Check a MATPOWER case as text; returns its summary (sizes and base MVA)."""
    text = _strip_comments(_text(data))
    if not re.search(r"function\s+mpc\s*=\s*\w+", text):
        raise CaseError(("body",), "not a MATPOWER case: no 'function mpc = <name>' line")
    base = _SCALAR.search(text)
    if base is None:
        raise CaseError(("body", "mpc.baseMVA"), "missing 'mpc.baseMVA = <number>;'")
    matrices = _matrices(text)
    summary: dict[str, Any] = {"base_mva": float(base.group(1))}
    for name, least in MATPOWER_COLUMNS.items():
        if name not in matrices:
            raise CaseError(("body", f"mpc.{name}"), f"missing matrix 'mpc.{name} = [...];'")
        rows = _matrix(name, matrices[name])
        if not rows:
            raise CaseError(("body", f"mpc.{name}"), "the matrix is empty")
        short = next((i for i, r in enumerate(rows, 1) if len(r) < least), None)
        if short is not None:
            raise CaseError(
                ("body", f"mpc.{name}", f"row {short}"), f"needs at least {least} columns"
            )
        summary[f"n_{name}"] = len(rows)
    buses = {int(r[0]) for r in _matrix("bus", matrices["bus"])}
    for name, column in (("gen", 0), ("branch", 0), ("branch", 1)):
        for i, row in enumerate(_matrix(name, matrices[name]), start=1):
            if int(row[column]) not in buses:
                raise CaseError(
                    ("body", f"mpc.{name}", f"row {i}"), f"bus {int(row[column])} is not in mpc.bus"
                )
    return summary


def _check_tags(document: Any) -> None:
    """Every ``_module``/``_class`` tag is in ``ALLOWED_TAGS`` (an explicit stack, no recursion;
    the first offending object in document order is named)."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(document, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            if "_module" in node or "_class" in node:
                tag = (node.get("_module"), node.get("_class"))
                if tag not in ALLOWED_TAGS:
                    raise CaseError(
                        ("body", *path), f"object type {tag[0]}.{tag[1]} is not allowed"
                    )
            stack.extend((value, (*path, str(key))) for key, value in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((value, path) for value in reversed(node))


def _table_rows(table: Any, loc: tuple[str, ...]) -> int:
    inner = table.get("_object") if isinstance(table, dict) else None
    try:
        frame = json.loads(inner) if isinstance(inner, str) else inner
        return len(frame["index"])
    except (ValueError, TypeError, KeyError, RecursionError):
        raise CaseError(loc, "not a pandas DataFrame in 'split' orientation") from None


def parse_pandapower(data: bytes) -> dict[str, Any]:
    """Check a pandapower network JSON (``pandapower.to_json``); returns its summary."""
    document = _json_document(data)
    if not isinstance(document, dict) or document.get("_class") != "pandapowerNet":
        raise CaseError(("body", "_class"), "not a pandapower network (expected 'pandapowerNet')")
    _check_tags(document)
    tables = document.get("_object")
    if not isinstance(tables, dict) or "bus" not in tables:
        raise CaseError(("body", "_object", "bus"), "the network has no bus table")
    summary: dict[str, Any] = {}
    for name in ("bus", "gen", "line", "trafo", "load"):
        if name in tables:
            summary[f"n_{name}"] = _table_rows(tables[name], ("body", "_object", name))
    if summary["n_bus"] < 1:
        raise CaseError(("body", "_object", "bus"), "the network has no buses")
    return summary


PSSE_KEYS = {"raw", "dyr", "raw_file", "dyr_file", "substitute", "load_conversion", "strict"}


def parse_psse(data: bytes) -> dict[str, Any]:
    """Check a PSS/E pair (see the module docstring); errors name the file (``raw``/``dyr``),
    the line and the record or field."""
    from models.psse.case import load_psse_case
    from models.psse.records import PsseError

    document = _json_document(data)
    if not isinstance(document, dict):
        raise CaseError(("body",), 'expected {"raw": <.raw text>, "dyr": <.dyr text>, ...}')
    unknown = sorted(set(document) - PSSE_KEYS)
    if unknown:
        raise CaseError(("body", unknown[0]), f"unknown field; valid: {sorted(PSSE_KEYS)}")
    for key in ("raw", "dyr"):
        if not isinstance(document.get(key), str) or not document[key].strip():
            raise CaseError(("body", key), f"the .{key} file's text is required")
    for key in ("raw_file", "dyr_file"):
        if key in document and not (
            isinstance(document[key], str) and 0 < len(document[key]) < 200
        ):
            raise CaseError(("body", key), "a file name of 1 to 199 characters")
    for key in ("substitute", "strict"):
        if not isinstance(document.get(key, False), bool):
            raise CaseError(("body", key), "true or false")
    conversion = document.get("load_conversion")
    if conversion is not None and not (
        isinstance(conversion, list) and len(conversion) == 4
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in conversion)
    ):  # fmt: skip
        raise CaseError(("body", "load_conversion"), "four fractions [P->I, P->Z, Q->I, Q->Z]")
    from raptorgrid.case_store import psse_options

    options = psse_options(document)
    names = {options["raw_file"]: "raw", options["dyr_file"]: "dyr"}
    try:
        case = load_psse_case(document["raw"], document["dyr"], "upload", **options)
    except PsseError as exc:
        where = names.get(exc.file, "raw")
        loc = ("body", where) + ((f"line {exc.line}",) if exc.line else ())
        raise CaseError(loc, str(exc)) from None
    except (ValueError, RuntimeError) as exc:
        raise CaseError(("body", "dyr"), str(exc)) from None
    grid = case.grid
    models = sorted(
        {
            d.model.name
            for s in case.slots
            for d in (s.machine, s.exciter, s.governor, s.stabilizer)
            if d
        }
    )
    return {
        "n_bus": len(grid.bus_names),
        "n_branch": int(grid.branch_r.size),
        "n_generator": len(grid.gen_names),
        "models": models,
        "raw_file": options["raw_file"],
        "dyr_file": options["dyr_file"],
        "warnings": list(case.warnings),
    }


def parse_case(data: bytes, fmt: CaseFormat) -> dict[str, Any]:
    """Validate ``data`` as ``fmt``; returns a summary to store beside the file."""
    if not data.strip():
        raise CaseError(("body",), "the file is empty")
    if fmt is CaseFormat.MATPOWER:
        return parse_matpower(data)
    if fmt is CaseFormat.PSSE:
        return parse_psse(data)
    return parse_pandapower(data)
