"""``models.load.load_case``: a case's own files as a system, by path or by text."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from models.dae import DAESystem
from models.grid import Grid
from models.load import load_case
from models.psse.case import build_psse_case
from models.psse.records import PsseError
from tests.test_models_cases import CASE5

DATA = Path(__file__).resolve().parent / "data" / "psse"
RAW, DYR = DATA / "kundur.raw", DATA / "kundur_gencls.dyr"


def test_a_psse_pair_loads_by_path_and_by_text_as_the_reader_builds_it():
    by_path = load_case(RAW, str(DYR))
    by_text = load_case(RAW.read_text(), DYR.read_text(), name="kundur")
    direct = build_psse_case(RAW.read_text(), DYR.read_text(), "kundur", raw_file=RAW.name,
                             dyr_file=DYR.name)  # fmt: skip
    assert isinstance(by_path, DAESystem) and by_path.name == "kundur"
    for system in (by_path, by_text):
        np.testing.assert_array_equal(system.x0, direct.x0)
        np.testing.assert_array_equal(system.z0, direct.z0)
    assert by_path.info["warnings"] == direct.info["warnings"]
    assert "kundur.raw" in by_path.info["sources"] and "kundur.raw" not in by_text.info["sources"]


def test_a_raw_without_dyr_is_the_network_at_its_power_flow():
    grid = load_case(RAW)
    assert isinstance(grid, Grid) and grid.solved and grid.name == "kundur"
    system = load_case(RAW, DYR)
    n = grid.n_bus
    np.testing.assert_allclose(grid.voltage, system.z0[:n] + 1j * system.z0[n : 2 * n], atol=1e-8)


def test_a_matpower_file_loads(tmp_path):
    path = tmp_path / "tiny5.m"
    path.write_text(CASE5)
    system = load_case(path)
    assert system.name == "tiny5" and system.names["generator"] == ("gen1", "gen2")
    with pytest.raises(ValueError, match="dyr: a .dyr goes with a PSS/E .raw"):
        load_case(path, DYR)


@pytest.mark.parametrize(
    ("source", "error", "words"),
    [
        ("case.xyz", ValueError, "source: unknown case format '.xyz'"),
        ("missing.raw", FileNotFoundError, "no such file: missing.raw"),
    ],
)
def test_bad_sources_are_named(source, error, words):
    with pytest.raises(error, match=words):
        load_case(source)


def test_a_record_error_names_the_file_and_line():
    bad = DYR.read_text().replace("GENCLS", "GENXXX", 1)
    with pytest.raises(PsseError, match="GENXXX"):
        load_case(RAW, bad)
