"""Accuracy against a reference on a common evaluation grid, as the paper measures it.

* ``normalized_state_error``: max over samples and states of |x - x_ref| / max(1, max_t |x_ref|)
  (each state scaled by its own peak magnitude, at least 1, so angles in rad, speeds and
  voltages in pu are comparable).
* ``voltage_mae``: mean absolute error of the bus-voltage magnitudes (outputs named ``V[...]``),
  pu.
* ``max_kcl``: the largest nodal current mismatch along the run (output ``kcl_max``), pu.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.result import SolveResult


@dataclass(frozen=True)
class Accuracy:
    state_error: float
    voltage_mae: float | None
    max_kcl: float | None

    def qualified(self, *, state_tol: float, voltage_tol: float, kcl_tol: float) -> bool:
        """All thresholds met (a missing metric cannot qualify)."""
        return (
            self.state_error <= state_tol
            and self.voltage_mae is not None
            and self.voltage_mae <= voltage_tol
            and self.max_kcl is not None
            and self.max_kcl <= kcl_tol
        )


def normalized_state_error(x: np.ndarray, x_ref: np.ndarray) -> float:
    if x.shape != x_ref.shape:
        raise ValueError(f"shape mismatch: {x.shape} vs reference {x_ref.shape}")
    if not np.all(np.isfinite(x)):
        return float("inf")
    scale = np.maximum(1.0, np.max(np.abs(x_ref), axis=0))
    return float(np.max(np.abs(x - x_ref) / scale))


def _voltage_columns(result: SolveResult) -> list[int]:
    return [i for i, name in enumerate(result.output_names) if name.startswith("V[")]


def accuracy(result: SolveResult, reference: SolveResult) -> Accuracy:
    """Metrics of ``result`` against ``reference`` (both on the same ``t_eval`` grid)."""
    if not np.array_equal(result.t_eval, reference.t_eval):
        raise ValueError("result and reference must share their evaluation grid")
    state_error = normalized_state_error(result.x_eval, reference.x_eval)
    cols = _voltage_columns(result)
    voltage_mae = (
        float(np.mean(np.abs(result.y_eval[:, cols] - reference.y_eval[:, cols])))
        if cols and np.all(np.isfinite(result.y_eval[:, cols]))
        else None
    )
    max_kcl = (
        float(np.nanmax(result.output("kcl_max"))) if "kcl_max" in result.output_names else None
    )
    return Accuracy(state_error, voltage_mae, max_kcl)
