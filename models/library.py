"""The model library: network names, their builders and their sizes."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from models.dae import DAESystem
from models.naming import unknown_name


@dataclass(frozen=True)
class NetworkEntry:
    name: str
    description: str
    builder: Callable[[], DAESystem]


def _wscc9() -> DAESystem:
    from models.cases.wscc9 import build_wscc9

    return build_wscc9()


def _matpower(case: str, name: str) -> Callable[[], DAESystem]:
    def build() -> DAESystem:
        from models.cases.matpower import build_matpower_case, published_generator_data

        return build_matpower_case(case, name=name, generator_data=published_generator_data(case))

    return build


def _cascaded_line() -> DAESystem:
    from models.cases.cascaded_line import build_cascaded_line

    return build_cascaded_line()


def _emt_sm() -> DAESystem:
    from models.cases.emt_sm import build_emt_sm

    return build_emt_sm()


def _dq(builder: str, *args: str) -> Callable[[], DAESystem]:
    def build() -> DAESystem:
        from models.dq import presets

        return getattr(presets, builder)(*args)

    return build


_IEEE = (
    "two-axis machines with IEEE DC1A exciters and TGOV1 governors, one 3rd-order induction motor, "
    "one grid-following inverter, constant-impedance loads"
)
_DATA = {
    "ieee14": "published machine and AVR data of Kodsi & Canizares 2003 (PSAT d_014_dyn), typical "
    "TGOV1",
    "ieee39": "published machine data of Athay et al. 1979 / Pai 1989, typical DC1A and TGOV1",
    "ieee57": "typical data by rating",
    "ieee118": "typical data by rating",
}

NETWORKS: dict[str, NetworkEntry] = {
    "wscc9": NetworkEntry(
        "wscc9",
        "WSCC 3-machine 9-bus system: two-axis machines with IEEE DC1A exciters, "
        "constant-impedance loads (Sauer-Pai data, pandapower case9 power flow)",
        _wscc9,
    ),
    **{
        name: NetworkEntry(
            name,
            f"IEEE {n}-bus system (MATPOWER {case}): {_IEEE} ({_DATA[name]})",
            _matpower(case, name),
        )
        for name, case, n in (
            ("ieee14", "case14", 14),
            ("ieee39", "case39", 39),
            ("ieee57", "case57", 57),
            ("ieee118", "case118", 118),
        )
    },
    **{
        case: NetworkEntry(
            case,
            f"{title} (pandapower {case}; {_IEEE}; typical data by rating; pandapower's branch "
            "order)",
            _matpower(case, case),
        )
        for case, title in (
            ("case_illinois200", "Illinois 200-bus synthetic grid"),
            ("case300", "IEEE 300-bus system"),
            ("case1354pegase", "PEGASE 1,354-bus part of the European grid"),
            ("case2869pegase", "PEGASE 2,869-bus part of the European grid"),
            ("case9241pegase", "PEGASE 9,241-bus part of the European grid"),
        )
    },
    "cascaded_line": NetworkEntry(
        "cascaded_line",
        "cascaded M-section line (10 pi-sections, dq frame): an ideal source feeding a load "
        "through "
        "a chain of pi-sections; stiff benchmark with modes up to about 7 kHz",
        _cascaded_line,
    ),
    "emt_sm": NetworkEntry(
        "emt_sm",
        "EMT synchronous machine (8 differential, 11 algebraic states, dq frame): stator, field "
        "and q-damper flux dynamics, a local resistive load and a dynamic RL line to an "
        "infinite-bus source that is switched off at 0.05 s (source_switch)",
        _emt_sm,
    ),
    "emt_gfl": NetworkEntry(
        "emt_gfl",
        "EMT grid-following inverter (dq frame, 24 differential states): LCL filter, SRF-PLL, "
        "P/Q and current PI loops, a local load and a dynamic line to a grid source; ten "
        "two-step events (P_ref step at 0.5 s, grid-voltage dip at 1.2 s) over 2 s",
        _dq("build_emt_gfl"),
    ),
    "dq_smib": NetworkEntry(
        "dq_smib",
        "single machine, infinite bus, block-interconnected dq network: full-order synchronous "
        "machine with AVR and governor, dynamic R-L line, node capacitances",
        _dq("build_smib"),
    ),
    "dq_ninebus": NetworkEntry(
        "dq_ninebus",
        "WSCC 9-bus block-interconnected dq network: a full-order synchronous machine, a droop "
        "grid-forming and a grid-following inverter, dynamic lines and loads",
        _dq("build_nine_bus"),
    ),
    "dq_microgrid": NetworkEntry(
        "dq_microgrid",
        "islanded 6-bus dq microgrid: a synchronous machine, two droop grid-forming inverters "
        "and a grid-following inverter",
        _dq("build_microgrid"),
    ),
    "dq_ieee39": NetworkEntry(
        "dq_ieee39",
        "IEEE 39-bus system (MATPOWER case39) in full-order dq form: generic full-order "
        "machines with AVR and governor, dynamic R-L lines and loads, node capacitances",
        _dq("build_ieee_dq", "case39"),
    ),
    "dq_ieee118": NetworkEntry(
        "dq_ieee118",
        "IEEE 118-bus system (MATPOWER case118) in full-order dq form: generic full-order "
        "machines with AVR and governor, dynamic R-L lines and loads, node capacitances",
        _dq("build_ieee_dq", "case118"),
    ),
}


def network_names() -> list[str]:
    return sorted(NETWORKS)


STORED_CASE_PREFIX = "case:"
"""Networks named ``case:<id>`` are uploaded cases, built by the function installed with
``set_stored_case_builder`` (the platform's, which reads the case store); models never reads a
database itself."""
_stored_case_builder: Callable[[str], DAESystem] | None = None


def set_stored_case_builder(builder: Callable[[str], DAESystem]) -> None:
    global _stored_case_builder
    _stored_case_builder = builder


def is_stored_case(name: str) -> bool:
    return name.startswith(STORED_CASE_PREFIX)


def build_system(name: str) -> DAESystem:
    """The system called ``name``, built once per process; unknown names list the valid ones.
    An uploaded case (``case:<id>``) goes to the installed builder, which caches it per store."""
    if is_stored_case(name):
        if _stored_case_builder is None:
            raise KeyError(f"network {name!r}: no case store is configured in this process")
        return _stored_case_builder(name)
    return _library_system(name)


@functools.cache
def _library_system(name: str) -> DAESystem:
    if name not in NETWORKS:
        raise KeyError(unknown_name("network", name, network_names()))
    return NETWORKS[name].builder()


SUMMARY_FILE = Path(__file__).with_name("data") / "networks.json"
"""Sizes and descriptions of every network, written by ``python -m models.library`` (building
each network takes minutes in all; listing them must not, and ``raptorgrid networks`` reads this
file without importing JAX). ``tests/test_models_library.py`` checks it against the code and the
built systems."""
SUMMARY_KEYS = ("n_bus", "n_x", "n_z", "n_outputs")


def network_summary(name: str) -> dict:
    """Name, description and sizes of a network from the stored metadata (nothing is built);
    a network registered at run time (not in the file) is built for its sizes."""
    if name not in NETWORKS:
        raise KeyError(unknown_name("network", name, network_names()))
    sizes = _stored_sizes().get(name)
    if sizes is None:
        info = network_info(name)
        sizes = {key: info[key] for key in SUMMARY_KEYS}
    return {"name": name, "description": NETWORKS[name].description, **sizes}


def stored_sizes(name: str) -> dict | None:
    """The stored sizes of a network (n_bus, n_x, n_z, n_outputs), or None when it is not in
    the metadata file (registered at run time); never builds anything."""
    return _stored_sizes().get(name)


@functools.cache
def _stored_sizes() -> dict[str, dict]:
    return json.loads(SUMMARY_FILE.read_text())


def network_info(name: str) -> dict:
    """Name, description, sizes and build details of a network (builds it)."""
    system = build_system(name)
    return {
        "name": name,
        "description": NETWORKS[name].description,
        "n_bus": len(system.names.get("bus", ())),
        "n_x": system.n_x,
        "n_z": system.n_z,
        "n_outputs": len(system.output_names),
        **{k: v for k, v in system.info.items() if k not in ("name",)},
    }


def write_summaries() -> None:
    """Build every network and store its sizes in ``SUMMARY_FILE``."""
    summaries = {}
    for name in (n for n in network_names() if NETWORKS[n].builder.__module__ == __name__):
        info = network_info(name)
        summaries[name] = {key: info[key] for key in SUMMARY_KEYS}
        summaries[name]["description"] = NETWORKS[name].description
    SUMMARY_FILE.write_text(json.dumps(summaries, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    write_summaries()
