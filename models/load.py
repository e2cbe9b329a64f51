"""A planner's or researcher's own case files as a system, from Python: ``load_case``.

    from models.load import load_case
    system = load_case("savnw.raw", "savnw.dyr")        # PSS/E: the DAE of the pair
    grid = load_case("savnw.raw")                        # PSS/E without .dyr: the solved network
    system = load_case("case30.m")                       # MATPOWER (dynamic data by rule)
    system = load_case("net.json")                       # pandapower JSON (dynamic data by rule)
    print(system.info["warnings"])                       # what was assumed, substituted or noted

A source is a path (``str`` or ``Path``) or, for PSS/E, the file's text (a string holding a line
break). PSS/E pairs go through ``models.psse.case`` (the ``.raw`` revision 32-35 reader, the
``.dyr`` models of ``models.devices.MODELS``; ``substitute`` and ``load_conversion`` as there: the
dynamics keep the load records' constant-current and constant-admittance parts and convert their
constant-power parts to constant admittance, PSS/E's CONL practice, unless ``load_conversion``
says otherwise: ``None`` keeps them as given);
without a ``.dyr`` the result is the network at its power flow (``models.grid.Grid``), since the
dynamic models come only from the ``.dyr``. MATPOWER ``.m`` and pandapower ``.json`` files go
through ``models.cases.matpower.build_matpower_case`` (machines, exciters and governors by the
typical-data rule, options ``config``, ``typical_data``, ``generator_data``). Errors name the
file, line and record (``PsseError``) or the field (``ValueError``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, overload

from models.dae import DAESystem
from models.grid import Grid

PSSE_SUFFIXES = (".raw",)
MATPOWER_SUFFIXES = (".m", ".json")


def _text(source: str | Path, default_name: str) -> tuple[str, str]:
    """(text, file name) of a path or of a text given inline."""
    if isinstance(source, str) and "\n" in source:
        return source, default_name
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    return path.read_text(encoding="utf-8", errors="strict"), path.name


@overload
def load_case(source: str | Path, dyr: None = None, **options: Any) -> DAESystem | Grid: ...
@overload
def load_case(source: str | Path, dyr: str | Path, **options: Any) -> DAESystem: ...
def load_case(
    source: str | Path, dyr: str | Path | None = None, *, name: str | None = None, **options: Any
) -> DAESystem | Grid:
    """The system of a case file (see the module docstring); ``name`` defaults to the file's
    stem."""
    suffix = Path(str(source)).suffix.lower() if "\n" not in str(source) else ".raw"
    if suffix in MATPOWER_SUFFIXES:
        if dyr is not None:
            raise ValueError(f"dyr: a .dyr goes with a PSS/E .raw, not a {suffix} file")
        from models.cases.matpower import build_matpower_case

        return build_matpower_case(Path(source), name=name, **options)
    if suffix not in PSSE_SUFFIXES:
        valid = ", ".join(PSSE_SUFFIXES + MATPOWER_SUFFIXES)
        raise ValueError(f"source: unknown case format {suffix or '(none)'!r}; valid: {valid}")
    raw_text, raw_file = _text(source, "case.raw")
    case_name = name or Path(raw_file).stem
    if dyr is None:
        from dataclasses import replace

        from models.powerflow import solve_power_flow
        from models.psse.network import build_network
        from models.psse.raw import parse_raw

        if options:
            raise TypeError(f"options {sorted(options)} apply to a .raw with its .dyr only")
        network = build_network(parse_raw(raw_text, raw_file))
        solved = solve_power_flow(network.grid)
        warnings = (*network.notes, *solved.info["q_violations"])
        return replace(solved, name=case_name, info={**solved.info, "warnings": warnings})
    from models.psse.case import build_psse_case

    dyr_text, dyr_file = _text(dyr, "case.dyr")
    return build_psse_case(raw_text, dyr_text, case_name, raw_file=raw_file, dyr_file=dyr_file,
                           **options)  # fmt: skip
