"""A library network built without pandapower, from its power flow saved on another machine.

The accelerator machines have JAX but not pandapower (and cannot install it), while the MATPOWER
networks of the library read their network through pandapower's converter. ``export``
saves what ``models.cases.matpower.build_matpower_case`` reads from pandapower (the solved grid,
the MATPOWER branch rows and pairs) here; ``install`` there makes the builder read it
instead (stub ``pandapower`` modules, the source and the power flow replaced), so
``build_system`` returns the same system.

    python benchmarks/offline_case.py ieee118 case.pkl        # here: save
"""

from __future__ import annotations

import pickle
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CASES = {"ieee14": "case14", "ieee39": "case39", "ieee57": "case57", "ieee118": "case118"}


def export(network: str, path: Path) -> None:
    """Save the solved grid of ``network`` (a MATPOWER library network) to ``path``."""
    from models.cases.matpower_io import network_source
    from models.cases.pandapower_grid import solved_pandapower_grid

    src = network_source(CASES[network])
    grid = solved_pandapower_grid(src.net, src.name)
    rows = src.branch_rows(grid.numbers, grid.branch_from, grid.branch_to)
    saved = {"name": src.name, "pairs": src.matpower_pairs, "rows": rows, "grid": grid}
    path.write_bytes(pickle.dumps(saved))


class _Source:
    def __init__(self, saved: dict) -> None:
        self.name, self.net = saved["name"], None
        self.matpower_pairs, self._rows = saved["pairs"], saved["rows"]

    def branch_rows(self, *_args):
        return self._rows


def install(path: Path) -> None:
    """Make the library build from the saved grid at ``path`` (no pandapower needed)."""
    for name in ("pandapower", "pandapower.networks"):
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules["pandapower"].networks = sys.modules["pandapower.networks"]
    import models.cases.matpower as matpower

    saved = pickle.loads(Path(path).read_bytes())
    matpower.network_source = lambda _source: _Source(saved)
    matpower.solved_pandapower_grid = lambda _net, _name: saved["grid"]


if __name__ == "__main__":
    export(sys.argv[1], Path(sys.argv[2]))
