"""The model library's stored sizes: complete, and equal to what the builders make."""

from __future__ import annotations

import pytest

from models.library import build_system, network_names, network_summary


def test_every_network_is_listed_from_metadata_without_building(monkeypatch):
    import dataclasses

    from models import library

    def refuse() -> None:
        raise AssertionError("listing the networks must not build one")

    # the library's own networks (tests register a few more, which are built when listed)
    own = [n for n in network_names() if library.NETWORKS[n].builder.__module__ == library.__name__]
    assert {"wscc9", "ieee118", "dq_ieee118", "emt_gfl"} <= set(own)
    for name in own:
        entry = library.NETWORKS[name]
        monkeypatch.setitem(library.NETWORKS, name, dataclasses.replace(entry, builder=refuse))
    summaries = [network_summary(name) for name in own]
    assert {s["name"] for s in summaries} == set(own)
    assert all(s["n_x"] > 0 and s["n_z"] > 0 and s["description"] for s in summaries)
    with pytest.raises(KeyError, match="valid networks"):
        network_summary("ieee9999")


@pytest.mark.parametrize("name", ["wscc9", "ieee14", "emt_sm", "cascaded_line", "dq_smib"])
def test_stored_sizes_match_the_built_system(name):
    system = build_system(name)
    summary = network_summary(name)
    assert (summary["n_x"], summary["n_z"], summary["n_outputs"]) == (
        system.n_x,
        system.n_z,
        len(system.output_names),
    )
    assert summary["n_bus"] == len(system.names.get("bus", ()))


def test_the_metadata_file_lists_every_network_with_its_description() -> None:
    """``raptorgrid networks`` answers from this file alone (no JAX import, under a second)."""
    import json
    import subprocess
    import sys

    from models.library import NETWORKS, SUMMARY_FILE

    stored = json.loads(SUMMARY_FILE.read_text())
    own = {n for n, entry in NETWORKS.items() if entry.builder.__module__ == "models.library"}
    assert set(stored) == own  # (tests register faulty networks of their own at run time)
    assert all(stored[n]["description"] == NETWORKS[n].description for n in own)
    code = (
        "import sys; from raptorgrid.cli.explore import stored_networks; "
        "rows = stored_networks(); assert 'jax' not in sys.modules and 'models' not in "
        "sys.modules, sorted(m for m in sys.modules if m.startswith(('jax', 'models'))); "
        "print(len(rows))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == len(own)
