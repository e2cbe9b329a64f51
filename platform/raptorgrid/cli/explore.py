"""Exploration commands that need no queue: ``simulate``, ``solvers``, ``networks``."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from raptorgrid.cli.errors import EXIT_FAILED, UserError, err_console, fail, under, user_errors
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


PLOTTED_KINDS = ("omega", "V")
"""Outputs ``--plot`` draws (rotor speeds, bus voltage magnitudes; per unit), when present."""


def write_outputs(result, out: Path | None, plot: Path | None, title: str) -> None:  # noqa: ANN001
    """``--out``: the run as the platform stores it (``zarr_store.result_dataset``), in Zarr or
    NetCDF by the suffix; ``--plot``: the speeds and bus voltages (or the first outputs of a
    network without them) against time, one panel per kind."""
    from raptorgrid.zarr_store import result_dataset, write_dataset

    if out is not None:
        dataset = result_dataset(result)
        if out.suffix == ".zarr":
            write_dataset(out, dataset)
        else:
            dataset.to_netcdf(out, engine="scipy")
        err_console.print(f"wrote {out}", highlight=False, soft_wrap=True)
    if plot is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        names = list(result.output_names)
        groups = [
            (kind, [i for i, n in enumerate(names) if n.split("[", 1)[0] == kind])
            for kind in PLOTTED_KINDS
        ]
        groups = [(kind, idx) for kind, idx in groups if idx] or [("outputs", list(range(4)))]
        fig, axes = plt.subplots(len(groups), 1, figsize=(8, 3 * len(groups)), squeeze=False)
        for ax, (kind, idx) in zip(axes[:, 0], groups, strict=True):
            for i in idx[: len(names)]:
                ax.plot(result.t_eval, result.y_eval[:, i], lw=1, label=names[i])
            ax.set_ylabel(f"{kind} (pu)" if kind in PLOTTED_KINDS else kind)
            ax.grid(alpha=0.3)
            if len(idx) <= 10:
                ax.legend(fontsize=7, ncol=2)
        axes[-1, 0].set_xlabel("time (s)")
        axes[0, 0].set_title(title)
        fig.tight_layout()
        fig.savefig(plot, dpi=110)
        plt.close(fig)
        err_console.print(f"wrote {plot}", highlight=False, soft_wrap=True)


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
    out: Annotated[
        Path | None,
        typer.Option(help="write the trajectories: FILE.zarr (Zarr) or FILE.nc (NetCDF)"),
    ] = None,
    plot: Annotated[
        Path | None, typer.Option(help="write a PNG of speeds and bus voltages against time")
    ] = None,
) -> None:
    """Solve one scenario here and now (no database, no queue)."""
    if out is not None and out.suffix not in (".zarr", ".nc"):
        raise fail(f"--out: {out} must end in .zarr or .nc")
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
        err_console.print(
            f"solving {network} with {method}: the first solve of a network structure compiles "
            "it (seconds to a minute); later ones load it",
            highlight=False,
            soft_wrap=True,
        )
        result = solve(system, scenario, method, **options)
    write_outputs(result, out, plot, f"{network} / {parsed.kind} / {method}")
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


def stored_networks() -> list[dict]:
    """The model library's networks from its metadata file (``models.library.SUMMARY_FILE``),
    read without importing the ``models`` package, whose import brings JAX (seconds)."""
    spec = importlib.util.find_spec("models")
    if spec is None or not spec.submodule_search_locations:
        raise UserError("the models package is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "networks.json"
    stored = json.loads(path.read_text())
    return [{"name": name, **stored[name]} for name in sorted(stored)]


def networks(
    as_json: Annotated[bool, typer.Option("--json")] = False,
    build: Annotated[
        bool, typer.Option("--build", help="build each network for its full details (minutes)")
    ] = False,
) -> None:
    """The networks and their sizes (from stored metadata; --build builds each one)."""
    if build:
        from models.library import network_info, network_names

        infos = [network_info(name) for name in network_names()]
    else:
        infos = stored_networks()
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
