"""Network sources for the MATPOWER-case builder: pandapower's cases, MATPOWER .m files (parsed
as data, never executed) and pandapower JSON files, each with its MATPOWER branch order.

pandapower builds lines first and transformers second (``net._ppc`` keeps that order), whereas a
MATPOWER case interleaves them. ``NetworkSource.branch_rows`` gives, per MATPOWER branch row, the
ppc branch index that carries it, so the model indexes and names branches as MATPOWER does:

* ``pandapower.networks`` cases: by the MATPOWER (fbus, tbus) order stored in
  ``models/data/matpower_branch_order.json``, matched to pandapower's lines and transformers by
  their bus pair (parallel branches of one pair keep their relative order);
* a ``.m`` file: from the conversion lookup of ``pandapower.converter.from_ppc``;
* a pandapower JSON file: no MATPOWER order exists; the ppc order is used.

Transformer repair (``repair_reversed_taps``): MATPOWER puts a branch's off-nominal tap at its
*from* bus. When that bus is the low-voltage end, pandapower's ``from_ppc`` (``tap_side="hv"``)
swaps the ends but leaves the ratio on the high-voltage side, so the tap acts at the wrong end.
This affects the stored ``pandapower.networks.case57`` (15 transformers; pandapower's power flow
then puts bus 31 at 0.72 pu where MATPOWER's solved case has 0.936 pu). The repair re-expresses
each such transformer with the equivalent ratio 1/tau on the high-voltage side and its impedance
referred by tau^2 (exact for b = 0 and no phase shift), which restores MATPOWER's branch model.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandapower as pp
import pandapower.networks as pn

BRANCH_ORDER_PATH = Path(__file__).resolve().parent.parent / "data" / "matpower_branch_order.json"
PANDAPOWER_CASES = ("case14", "case39", "case57", "case118")
"""pandapower.networks cases whose MATPOWER branch order is stored."""
PANDAPOWER_LARGE_CASES = (
    "case_illinois200",
    "case300",
    "case1354pegase",
    "case2869pegase",
    "case9241pegase",
)
"""Planning-size pandapower.networks cases, used in pandapower's branch order (its lines, then
its transformers: ``NetworkSource.matpower_pairs`` is None) and with pandapower's own conversion
of the transformer taps (no MATPOWER order is stored to repair reversed ones by): the model
reproduces pandapower's power flow exactly, which is what its equilibrium is checked against."""
MATPOWER_F_HZ = 60.0
"""MATPOWER files carry no frequency; the IEEE cases are 60 Hz systems."""


@dataclass
class NetworkSource:
    """A pandapower net and how its branches map to MATPOWER rows.

    ``matpower_pairs[k]`` is the (fbus, tbus) of MATPOWER row k (bus numbers); after the power flow,
    ``branch_rows(net)`` returns the ppc branch index of every row.
    """

    name: str
    net: object
    matpower_pairs: list[tuple[int, int]] | None
    from_ppc_lookup: object | None = None
    repaired_trafos: tuple[int, ...] = ()

    def branch_rows(self, bus_numbers: np.ndarray, ppc_from: np.ndarray, ppc_to: np.ndarray):
        """ppc branch index per MATPOWER row (identity when no MATPOWER order is known)."""
        n = len(ppc_from)
        if self.matpower_pairs is None:
            return np.arange(n)
        lookup = self.net._pd2ppc_lookups["branch"]
        kind_of = np.empty(n, dtype=object)
        for kind, (start, stop) in lookup.items():
            kind_of[start:stop] = kind
        if self.from_ppc_lookup is not None:
            rows = []
            for element, kind in zip(
                self.from_ppc_lookup["element"], self.from_ppc_lookup["element_type"], strict=True
            ):
                start = lookup[kind][0]
                rows.append(start + self.net[kind].index.get_loc(int(element)))
            return np.asarray(rows, dtype=np.int64)
        if len(self.matpower_pairs) != n:
            raise ValueError(
                f"{self.name}: stored MATPOWER order has {len(self.matpower_pairs)} branches, "
                f"the network {n}"
            )
        groups: dict[tuple[int, int], list[int]] = defaultdict(list)
        for i, (f, t) in enumerate(zip(ppc_from, ppc_to, strict=True)):
            a, b = int(bus_numbers[f]), int(bus_numbers[t])
            groups[(min(a, b), max(a, b))].append(i)
        for key, members in groups.items():
            if len(members) > 1 and len({kind_of[i] for i in members}) > 1:
                raise NotImplementedError(
                    f"{self.name}: parallel branches {key} mix lines and transformers; the "
                    "MATPOWER order cannot be recovered from bus pairs"
                )
        rows = []
        for f, t in self.matpower_pairs:
            members = groups.get((min(f, t), max(f, t)))
            if not members:
                raise ValueError(f"{self.name}: MATPOWER branch {f}-{t} is not in the network")
            rows.append(members.pop(0))
        return np.asarray(rows, dtype=np.int64)


def stored_branch_order(case: str) -> list[tuple[int, int]]:
    with open(BRANCH_ORDER_PATH, encoding="utf-8") as fh:
        cases = json.load(fh)["cases"]
    if case not in cases:
        raise KeyError(f"no stored MATPOWER branch order for {case!r}; stored: {sorted(cases)}")
    return [(int(f), int(t)) for f, t in cases[case]]


def repair_reversed_taps(net, pairs: list[tuple[int, int]]) -> tuple[int, ...]:
    """Move the ratio of every tapped transformer whose MATPOWER from-bus is its low-voltage end
    to an equivalent ratio on the high-voltage side (see the module docstring); returns the
    repaired ``net.trafo`` indices. Raises ``NotImplementedError`` where the repair is not exact
    (magnetizing admittance or phase shift on such a transformer)."""
    numbers = net.bus.name.astype(int)
    direction: dict[frozenset, tuple[int, int]] = {}
    for f, t in pairs:
        direction.setdefault(frozenset((f, t)), (f, t))
    repaired = []
    for j, row in net.trafo.iterrows():
        hv, lv = int(numbers[row.hv_bus]), int(numbers[row.lv_bus])
        taps = (row.tap_pos, row.tap_neutral, row.tap_step_percent)
        if any(v is None or np.isnan(v) for v in taps):
            continue  # no tap changer: ratio 1
        tau = 1.0 + (row.tap_pos - row.tap_neutral) * row.tap_step_percent / 100.0
        if direction.get(frozenset((hv, lv))) != (lv, hv) or np.isclose(tau, 1.0):
            continue
        if row.tap_side != "hv" or row.i0_percent != 0.0 or row.shift_degree != 0.0:
            raise NotImplementedError(f"transformer {lv}-{hv}: cannot move its tap exactly")
        ratio = 1.0 / tau - 1.0
        net.trafo.loc[j, ["tap_neutral", "tap_pos"]] = [0.0, float(np.sign(ratio))]
        net.trafo.loc[j, "tap_step_percent"] = abs(ratio) * 100.0
        net.trafo.loc[j, ["vk_percent", "vkr_percent"]] = [
            row.vk_percent * tau**2,
            row.vkr_percent * tau**2,
        ]
        repaired.append(int(j))
    return tuple(repaired)


def pandapower_case(case: str) -> NetworkSource:
    """One of ``PANDAPOWER_CASES`` from ``pandapower.networks``, its reversed taps repaired, or
    one of ``PANDAPOWER_LARGE_CASES`` as pandapower gives it."""
    if case in PANDAPOWER_LARGE_CASES:
        return NetworkSource(case, getattr(pn, case)(), None)
    if case not in PANDAPOWER_CASES:
        valid = list(PANDAPOWER_CASES + PANDAPOWER_LARGE_CASES)
        raise KeyError(f"unknown case {case!r}; valid: {valid}")
    net = getattr(pn, case)()
    pairs = stored_branch_order(case)
    return NetworkSource(case, net, pairs, repaired_trafos=repair_reversed_taps(net, pairs))


_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def _matrix(text: str, field: str) -> np.ndarray:
    match = re.search(rf"mpc\.{field}\s*=\s*\[(.*?)\]\s*;", text, re.S)
    if match is None:
        raise ValueError(f"MATPOWER file: matrix 'mpc.{field}' is missing")
    rows = []
    for line in re.split(r"[;\n]", match.group(1)):
        tokens = [t for t in re.split(r"[\s,]+", line.strip()) if t]
        if not tokens:
            continue
        for token in tokens:
            if not _NUMBER.match(token) and token.lower() not in ("inf", "-inf"):
                raise ValueError(f"MATPOWER file: mpc.{field} has a non-numeric entry {token!r}")
        rows.append([float(t) for t in tokens])
    if not rows or len({len(r) for r in rows}) != 1:
        raise ValueError(f"MATPOWER file: mpc.{field} must be a non-empty rectangular matrix")
    return np.asarray(rows, dtype=np.float64)


def parse_matpower(text: str) -> dict:
    """The ppc dict (baseMVA, bus, gen, branch, version) of a MATPOWER case file's text.

    The file is read as data: comments are stripped and only the numeric matrices are read;
    anything else in the file is ignored, never evaluated.
    """
    text = "\n".join(line.split("%", 1)[0] for line in text.splitlines())
    base = re.search(r"mpc\.baseMVA\s*=\s*([^;\s]+)\s*;", text)
    if base is None or not _NUMBER.match(base.group(1)):
        raise ValueError("MATPOWER file: 'mpc.baseMVA = <number>;' is missing")
    return {
        "version": "2",
        "baseMVA": float(base.group(1)),
        "bus": _matrix(text, "bus"),
        "gen": _matrix(text, "gen"),
        "branch": _matrix(text, "branch"),
    }


def matpower_file(path: Path | str, f_hz: float = MATPOWER_F_HZ) -> NetworkSource:
    """A MATPOWER ``.m`` case file, converted with ``pandapower.converter.from_ppc``."""
    from pandapower.converter.pypower.from_ppc import from_ppc

    path = Path(path)
    ppc = parse_matpower(path.read_text(encoding="utf-8"))
    net = from_ppc(ppc, f_hz=f_hz, validate_conversion=False)
    if len(net.bus) != len(ppc["bus"]):
        raise NotImplementedError("from_ppc added or merged buses")
    net.bus["name"] = ppc["bus"][:, 0].astype(int)  # buses are named by their MATPOWER number
    pairs = [(int(f), int(t)) for f, t in ppc["branch"][:, :2]]
    lookup = net._from_ppc_lookups.get("branch")
    if lookup is None:
        raise RuntimeError("pandapower's from_ppc returned no branch lookup")
    return NetworkSource(path.stem, net, pairs, lookup)


def _check_modules(obj) -> None:
    """Refuse JSON that would make pandapower import anything outside pandapower/pandas/numpy."""
    if isinstance(obj, dict):
        module = obj.get("_module")
        if module is not None and str(module).split(".")[0] not in (
            "pandapower",
            "pandas",
            "numpy",
        ):
            raise ValueError(f"pandapower JSON: refusing object of module {module!r}")
        for value in obj.values():
            _check_modules(value)
    elif isinstance(obj, list):
        for value in obj:
            _check_modules(value)
    elif isinstance(obj, str) and obj.startswith("{") and '"_module"' in obj:
        _check_modules(json.loads(obj))


def pandapower_json(path: Path | str) -> NetworkSource:
    """A pandapower JSON network (branch order: pandapower's, lines then transformers)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    _check_modules(json.loads(text))
    return NetworkSource(path.stem, pp.from_json_string(text), None)


def network_source(source: str | Path) -> NetworkSource:
    """A case name of ``PANDAPOWER_CASES``, or a path to a ``.m`` or ``.json`` file."""
    text = str(source)
    if text in PANDAPOWER_CASES + PANDAPOWER_LARGE_CASES:
        return pandapower_case(text)
    path = Path(text)
    if path.suffix == ".m":
        return matpower_file(path)
    if path.suffix == ".json":
        return pandapower_json(path)
    raise KeyError(
        f"unknown network source {text!r}; give one of {list(PANDAPOWER_CASES)} or a path to a "
        "MATPOWER .m file or a pandapower .json file"
    )
