"""Solvers behind one entry point: ``solve(system, scenario, method, **options)``.

The numerical core never imports the service stack; ``solve`` works on any ``models.DAESystem``,
including one written by hand in JAX with its own x0 and z0.
"""

from solvers.api import solve, solve_batch
from solvers.catalogue import METHODS, UnknownMethodError, catalogue, validate_options
from solvers.result import SolveResult, Stats
from solvers.status import FailureReason, RunStatus

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
