"""One status enum for solver results, SQL rows and the API, and the reasons a run can fail."""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    """Life cycle of a run; a solver result is only ever ``succeeded`` or ``failed``."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_final(self) -> bool:
        return self in (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED)


class FailureReason(StrEnum):
    """Why a run failed; ``advice`` says what to try."""

    STEP_SIZE_TOO_SMALL = "step_size_too_small"
    NEWTON_FAILED = "newton_failed"
    ALGEBRAIC_SOLVE_FAILED = "algebraic_solve_failed"
    MAX_STEPS = "max_steps"
    NON_FINITE = "non_finite"
    DIVERGED = "diverged"
    TIME_LIMIT = "time_limit"
    CANCELLED = "cancelled"
    INVALID_INPUT = "invalid_input"
    INTERNAL_ERROR = "internal_error"

    @property
    def advice(self) -> str:
        return _ADVICE[self]


_ADVICE = {
    FailureReason.STEP_SIZE_TOO_SMALL: "the solver could not keep its error below tolerance: "
    "loosen rtol/atol, or use a stiff method (Radau, BDF, Kvaerno5, raptor)",
    FailureReason.NEWTON_FAILED: "the implicit solve did not converge: loosen the tolerance or "
    "check the model's Jacobian near the failure time",
    FailureReason.ALGEBRAIC_SOLVE_FAILED: "0 = g(x, z) has no solution near the trajectory "
    "(voltage collapse or a singular network): check the disturbance, e.g. an isolated bus",
    FailureReason.MAX_STEPS: "the step budget ran out: raise max_steps or use a stiff method",
    FailureReason.NON_FINITE: "NaN or inf appeared in the state: the trajectory left the model's "
    "domain; check the disturbance and parameters",
    FailureReason.DIVERGED: "the state grew without bound: the case may be unstable or the "
    "method unsuited; try a stiff method",
    FailureReason.TIME_LIMIT: "the run hit its time limit: shorten the horizon or raise the limit",
    FailureReason.CANCELLED: "the campaign was cancelled",
    FailureReason.INVALID_INPUT: "the run's input was rejected: see the message",
    FailureReason.INTERNAL_ERROR: "an unexpected error: the traceback is stored with the run",
}
