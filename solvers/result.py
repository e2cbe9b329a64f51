"""The solver result and the one stats schema every method fills."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from solvers.status import FailureReason, RunStatus


@dataclass
class Stats:
    """Work counters, counted in one place by the method wrappers.

    ``accepted``/``rejected`` count advances (steps or RAPTOR intervals).
    ``newton_iterations`` are the integrator's own implicit iterations; ``algebraic_iterations``
    the Newton iterations spent solving 0 = g(x, z) for z (hidden from SciPy's own ``nfev``).
    ``rhs_evaluations`` count evaluations of the right-hand side f. ``lu_factorizations`` count
    numeric factorizations; ``symbolic_analyses`` the sparse solver's pattern analyses (once per
    network structure and process when the analysis is reused). ``compile_seconds`` is time spent
    compiling, ``load_seconds`` time spent loading executables compiled by an earlier process
    (``models.executables``); ``solve_seconds`` excludes both.
    """

    accepted: int = 0
    rejected: int = 0
    newton_iterations: int = 0
    algebraic_iterations: int = 0
    jacobian_evaluations: int = 0
    lu_factorizations: int = 0
    symbolic_analyses: int = 0
    rhs_evaluations: int = 0
    compile_seconds: float = 0.0
    load_seconds: float = 0.0
    solve_seconds: float = 0.0

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


@dataclass
class SolveResult:
    """What ``solve`` returns.

    ``t``/``x``/``z``: the trajectory at accepted advances (and at both sides of every event).
    ``t_eval``/``x_eval``/``z_eval``/``y_eval``: dense output on the requested grid, z recovered
    consistently from g = 0 at each sample, ``y_eval`` the named outputs. On failure the arrays hold
    what was computed before the failure and ``t_eval`` samples past it are NaN.
    """

    status: RunStatus
    message: str
    method: str
    options: dict
    stats: Stats
    state_names: tuple[str, ...]
    alg_names: tuple[str, ...]
    output_names: tuple[str, ...]
    t: np.ndarray
    x: np.ndarray
    z: np.ndarray
    t_eval: np.ndarray
    x_eval: np.ndarray
    z_eval: np.ndarray
    y_eval: np.ndarray
    reason: FailureReason | None = None
    events: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """What the method could not guarantee although it finished (e.g. a tolerance below what it
    can attain); stored with the run (``run_metrics.warnings``)."""

    @property
    def succeeded(self) -> bool:
        return self.status is RunStatus.SUCCEEDED

    def output(self, name: str) -> np.ndarray:
        """One named output on ``t_eval``; an unknown name raises, listing the valid ones."""
        if name not in self.output_names:
            raise KeyError(f"unknown output {name!r}; valid: {list(self.output_names)}")
        return self.y_eval[:, self.output_names.index(name)]
