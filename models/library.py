"""The model library: network names, their builders and their sizes."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from models.dae import DAESystem


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
}


def network_names() -> list[str]:
    return sorted(NETWORKS)


@functools.cache
def build_system(name: str) -> DAESystem:
    """The system called ``name``, built once per process; unknown names list the valid ones."""
    if name not in NETWORKS:
        raise KeyError(f"unknown network {name!r}; valid networks: {network_names()}")
    return NETWORKS[name].builder()


def network_info(name: str) -> dict:
    """Name, description and sizes of a network (builds it)."""
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
