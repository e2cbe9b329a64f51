"""Solvers behind one entry point: ``solve(system, scenario, method, **options)``.

The numerical core never imports the service stack; ``solve`` works on any ``models.DAESystem``,
including one written by hand in JAX with its own x0 and z0.

The names below are imported on first use (PEP 562), so that importing a light submodule
(``solvers.status``: the run statuses the service reads) does not import JAX and SciPy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from solvers.api import solve, solve_batch
    from solvers.catalogue import METHODS, UnknownMethodError, catalogue, validate_options
    from solvers.result import SolveResult, Stats
    from solvers.status import FailureReason, RunStatus

_HOMES = {
    "solve": "solvers.api",
    "solve_batch": "solvers.api",
    "METHODS": "solvers.catalogue",
    "UnknownMethodError": "solvers.catalogue",
    "catalogue": "solvers.catalogue",
    "validate_options": "solvers.catalogue",
    "SolveResult": "solvers.result",
    "Stats": "solvers.result",
    "FailureReason": "solvers.status",
    "RunStatus": "solvers.status",
}

__all__ = [
    "METHODS",
    "FailureReason",
    "RunStatus",
    "SolveResult",
    "Stats",
    "UnknownMethodError",
    "catalogue",
    "solve",
    "solve_batch",
    "validate_options",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'solvers' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value
    return value
