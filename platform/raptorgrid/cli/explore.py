"""Exploration commands that need no queue: ``simulate``, ``solvers``, ``networks``."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from raptorgrid.cli.errors import EXIT_FAILED, UserError, under, user_errors
from raptorgrid.cli.render import console

OUTPUTS_PER_KIND = 3
"""Named outputs of each kind (V, theta, omega, ...) printed at the end time by ``simulate``."""


def _value(text: str) -> Any:
    """A command-line value: JSON when it parses (numbers, booleans, lists), else the text."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_disturbance(text: str) -> Any:
    """A disturbance from JSON or shorthand ``KIND[:ELEMENT][,key=value...]``, e.g. ``none``,
    ``bus_fault:bus7,t_clear=0.25``, ``branch_trip:branch=br_4_5,t=0.5``."""
    from pydantic import TypeAdapter

    from models.disturbances import Disturbance
    from raptorgrid.spec import ELEMENT_FIELDS

    text = text.strip()
    if text.startswith("{"):
        data = json.loads(text)
    else:
        kind, _, rest = text.partition(":")
        data: dict[str, Any] = {"kind": kind.strip()}
        for item in filter(None, (p.strip() for p in rest.split(","))):
            key, eq, value = item.partition("=")
            if eq:
                data[key.strip()] = _value(value.strip())
            else:  # the element the disturbance acts on
                field = {"bus_fault": "bus", "load_step": "bus", "branch_trip": "branch"}.get(
                    data["kind"], ELEMENT_FIELDS[0]
                )
                data[field] = item
    return TypeAdapter(Disturbance).validate_python(data)


def parse_options(items: list[str]) -> dict[str, Any]:
    options = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise UserError(f"--option {item!r}: write key=value, e.g. --option rtol=1e-6")
        options[key.strip()] = _value(value.strip())
    return options


def _shown_outputs(names: tuple[str, ...]) -> list[int]:
    shown, per_kind = [], {}
    for i, name in enumerate(names):
        kind = name.split("[", 1)[0]
        if per_kind.get(kind, 0) < OUTPUTS_PER_KIND:
            per_kind[kind] = per_kind.get(kind, 0) + 1
            shown.append(i)
    return shown


def simulate(
    network: Annotated[str, typer.Argument(help="network name (see `raptorgrid networks`)")],
    disturbance: Annotated[
        str, typer.Option(help="JSON or shorthand, e.g. bus_fault:bus7,t_clear=0.2")
    ] = "none",
    method: Annotated[str, typer.Option(help="method (see `raptorgrid solvers`)")] = "radau",
    option: Annotated[
        list[str] | None, typer.Option("--option", "-o", help="method option key=value")
    ] = None,
    t_end: Annotated[float, typer.Option(help="horizon (s)")] = 1.0,
    n_eval: Annotated[int, typer.Option(help="evaluation points")] = 201,
    ic_seed: Annotated[int, typer.Option(help="initial-condition seed")] = 0,
    ic_spread: Annotated[float, typer.Option(help="initial-condition spread")] = 0.0,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
) -> None:
    """Solve one scenario here and now (no database, no queue)."""
    with user_errors():
        from models.library import build_system
        from models.scenarios import make_scenario
        from solvers import solve, validate_options
        from solvers.catalogue import get_method

        system = build_system(network)
        get_method(method)  # an unknown method is the method's error, not the options'
        with under("--option"):
            options = parse_options(option or [])
            validate_options(method, options)
        with under("--disturbance"):
            parsed = parse_disturbance(disturbance)
            scenario = make_scenario(
                system, parsed, t_end=t_end, ic_seed=ic_seed, ic_spread=ic_spread, n_eval=n_eval
            )
        result = solve(system, scenario, method, **options)
    final = {name: float(result.y_eval[-1, i]) for i, name in enumerate(result.output_names)}
    if as_json:
        payload = {
            "network": network,
            "disturbance": parsed.model_dump(mode="json"),
            "method": method,
            "options": options,
            "status": result.status.value,
            "reason": result.reason.value if result.reason else None,
            "message": result.message,
            "stats": result.stats.as_dict(),
            "t_end": float(result.t_eval[-1]),
            "outputs": final,
        }
        typer.echo(json.dumps(payload, indent=2))
    else:
        console.print(f"{network} / {parsed.kind} / {method}: [bold]{result.status.value}[/]")
        if result.message:
            console.print(result.message, highlight=False, markup=False)
        stats = Table("counter", "value", title="stats")
        for key, value in result.stats.as_dict().items():
            stats.add_row(key, f"{value:.3f}" if isinstance(value, float) else str(value))
        console.print(stats)
        outputs = Table("output", f"value at t = {result.t_eval[-1]:g} s")
        for i in _shown_outputs(result.output_names):
            outputs.add_row(escape(result.output_names[i]), f"{result.y_eval[-1, i]:.6g}")
        console.print(outputs)
    if not result.succeeded:
        raise typer.Exit(EXIT_FAILED)


def solvers(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """The method catalogue: names, families, guidance and options with defaults."""
    from solvers.catalogue import catalogue

    entries = catalogue()
    if as_json:
        typer.echo(json.dumps(entries, indent=2))
        return
    table = Table("method", "family", "options (default)", "guidance")
    for entry in entries:
        props = entry["options"].get("properties", {})
        options = ", ".join(f"{k}={v.get('default')}" for k, v in props.items())
        table.add_row(entry["name"], entry["family"], options, entry["guidance"])
    console.print(table)


def networks(
    as_json: Annotated[bool, typer.Option("--json")] = False,
    build: Annotated[
        bool, typer.Option("--build", help="build each network for its full details (minutes)")
    ] = False,
) -> None:
    """The networks and their sizes (from stored metadata; --build builds each one)."""
    from models.library import network_info, network_names, network_summary

    describe = network_info if build else network_summary
    infos = [describe(name) for name in network_names()]
    if as_json:
        typer.echo(json.dumps(infos, indent=2, default=str))
        return
    table = Table("network", "buses", "states (n_x)", "algebraic (n_z)", "description")
    for info in infos:
        table.add_row(
            info["name"],
            str(info["n_bus"]),
            str(info["n_x"]),
            str(info["n_z"]),
            info["description"],
        )
    console.print(table)


def register(app: typer.Typer) -> None:
    app.command()(simulate)
    app.command()(solvers)
    app.command()(networks)
