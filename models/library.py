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


NETWORKS: dict[str, NetworkEntry] = {
    "wscc9": NetworkEntry(
        "wscc9",
        "WSCC 3-machine 9-bus system: two-axis machines with IEEE DC1A exciters, "
        "constant-impedance loads (Sauer-Pai data, pandapower case9 power flow)",
        _wscc9,
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
