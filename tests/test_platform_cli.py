"""CLI commands that need no services: user errors exit non-zero with a message, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from raptorgrid.cli import app
from raptorgrid.cli.explore import parse_disturbance, parse_options
from typer.testing import CliRunner

runner = CliRunner()


def processes_using(folder: Path) -> list[int]:
    """Pids of live processes whose environment names ``folder`` (the embedded workers')."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if str(folder).encode() in (proc / "environ").read_bytes():
                pids.append(int(proc.name))
        except OSError:  # exited, or not ours to read
            continue
    return pids


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_solvers_json() -> None:
    result = invoke("solvers", "--json")
    assert result.exit_code == 0
    assert "radau" in [m["name"] for m in json.loads(result.stdout)]


def test_disturbance_shorthand() -> None:
    fault = parse_disturbance("bus_fault:bus7,t_clear=0.25")
    assert (fault.kind, fault.bus, fault.t_clear) == ("bus_fault", "bus7", 0.25)
    trip = parse_disturbance('{"kind": "branch_trip", "branch": "br_4_5"}')
    assert trip.branch == "br_4_5"
    assert parse_disturbance("none").kind == "none"
    assert parse_options(["rtol=1e-4", "exact_jacobian=false"]) == {
        "rtol": 1e-4,
        "exact_jacobian": False,
    }


@pytest.mark.slow
def test_simulate_json() -> None:
    result = invoke(
        "simulate", "wscc9", "--disturbance", "bus_fault:bus7", "--method", "radau",
        "--option", "rtol=1e-4", "--t-end", "0.5", "--n-eval", "11", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["status"] == "succeeded" and payload["stats"]["accepted"] > 0
    assert payload["t_end"] == 0.5 and "V[bus7]" in payload["outputs"]


def test_simulate_unknown_bus_is_a_user_error() -> None:
    result = invoke("simulate", "wscc9", "--disturbance", "bus_fault:bus99")
    assert result.exit_code == 2
    assert "bus99" in result.output and "bus7" in result.output
    assert "Traceback" not in result.output


def test_simulate_unknown_method_lists_valid_ones() -> None:
    result = invoke("simulate", "wscc9", "--method", "magic")
    assert result.exit_code == 2 and "radau" in result.output


def test_run_refuses_an_invalid_spec(tmp_path: Path, small_spec: dict, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    small_spec["methods"] = [{"method": "radau", "options": {"rtol": 7}}]
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(small_spec))
    result = invoke("run", str(spec))
    assert result.exit_code == 2
    assert "methods.0.options" in result.output and "Traceback" not in result.output
    # the workers `run` starts before validating are gone with it (killed: nothing was claimed)
    assert list((tmp_path / "raptorgrid-data" / "logs").glob("embedded*.log"))
    assert not processes_using(tmp_path)
    missing = invoke("run", str(tmp_path / "deeply" / ("long-folder-name" * 6) / "nope.json"))
    assert missing.exit_code == 2  # the whole path, not broken by line wrapping
    assert str(tmp_path / "deeply" / ("long-folder-name" * 6) / "nope.json") in missing.output


def test_status_of_unknown_campaign(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert invoke("db", "upgrade").exit_code == 0
    result = invoke("status", "5")
    assert result.exit_code == 2 and "campaign 5 not found" in result.output


def test_results_commands_without_a_database_say_where_they_looked(
    tmp_path: Path, monkeypatch
) -> None:
    """``status``/``report``/``cancel`` with no campaigns database: one clear message naming the
    file and the setting, exit status 2, and no empty database left behind."""
    from raptorgrid.settings import get_settings

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAPTORGRID_DATA_DIR", str(tmp_path / "nowhere"))
    get_settings.cache_clear()
    try:
        for command in (["status", "1"], ["report", "1"], ["cancel", "1"]):
            result = invoke(*command)
            assert result.exit_code == 2, result.output
            text = " ".join(result.output.split())
            assert "no campaigns database at" in text and "RAPTORGRID_DATA_DIR" in text
            assert "Traceback" not in result.output
        assert not (tmp_path / "nowhere").exists()
    finally:
        get_settings.cache_clear()


def test_typos_get_a_did_you_mean_under_the_option_that_has_them(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cases = {
        ("simulate", "ieee188"): "unknown network 'ieee188' (did you mean 'ieee118'",
        (
            "simulate",
            "wscc9",
            "--method",
            "radua",
        ): "unknown method 'radua' (did you mean 'radau'?)",
        ("simulate", "wscc9", "-o", "rtoll=1e-3"): "--option: unknown option 'rtoll' (did you "
        "mean 'rtol'",
        ("simulate", "wscc9", "--method", "raptor", "-o", "n_rbfs=8"): "--option: unknown option "
        "'n_rbfs' (did you mean 'n_rbf'?)",
        ("simulate", "wscc9", "--disturbance", "bus_fault:bus77"): "--disturbance: unknown bus "
        "'bus77' in system 'wscc9' (did you mean 'bus7'",
    }
    for args, expected in cases.items():
        result = invoke(*args)
        assert result.exit_code == 2, (args, result.output)
        assert expected in result.output, (args, result.output)
        assert "Traceback" not in result.output


def test_simulate_writes_trajectories_and_a_plot(tmp_path: Path, monkeypatch) -> None:
    import xarray as xr

    monkeypatch.chdir(tmp_path)
    args = ("simulate", "wscc9", "--disturbance", "bus_fault:bus7,t_clear=0.2", "--t-end", "0.4")
    result = invoke(*args, "--n-eval", "41", "--out", "run.zarr", "--plot", "run.png")
    assert result.exit_code == 0, result.output
    assert "compiles it" in result.output  # says it may be compiling before it does
    ds = xr.open_zarr(tmp_path / "run.zarr", consolidated=False)
    speed = ds.x.sel(state="omega[gen2]").values
    assert ds.sizes["time"] == 41 and speed.max() > 1.0 + 1e-4  # the fault accelerated it
    assert (tmp_path / "run.png").stat().st_size > 10_000
    nc = invoke(*args, "--n-eval", "5", "--out", "run.nc")
    assert nc.exit_code == 0, nc.output
    assert xr.open_dataset(tmp_path / "run.nc", engine="scipy").sizes["time"] == 5
    bad = invoke(*args, "--out", "run.csv")
    assert bad.exit_code == 2 and "--out: run.csv must end in .zarr or .nc" in bad.output
