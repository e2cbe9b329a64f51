"""RAPTOR's options: defaults chosen to work on every model in the library without tuning."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from solvers.options_base import StrictOptions


class RaptorOptions(StrictOptions):
    """Options of the RAPTOR solver (see docs/raptor.md for what each one does)."""

    rtol: float = Field(1e-6, ge=1e-12, le=1e-1, description="relative tolerance")
    atol: float = Field(1e-8, ge=1e-14, le=1.0, description="absolute tolerance (state units)")
    n_rbf: int = Field(20, ge=4, le=64, description="Gaussian RBFs per state (N)")
    n_colloc: int = Field(10, ge=2, le=32, description="collocation points (M <= N)")
    seed: int = Field(0, ge=0, le=2**31 - 1, description="seed of the shape-parameter draws")
    a_max_levels: tuple[float, ...] = Field(
        (25.0 / 9.0,),
        min_length=1,
        max_length=6,
        description="upper bounds of the shape-parameter range a ~ U[0, a_max] (normalised time),"
        " one per level; the level grows with h times the fastest local rate. Default: the RPNN "
        "code's 25/9 alone (wider levels are less consistent: docs/raptor.md, step control)",
    )
    level_thresholds: tuple[float, ...] = Field(
        (),
        max_length=5,
        description="values of h * rho (rho: spectral radius of the reduced Jacobian) at which "
        "the next a_max level is used (e.g. (1000, 10000) with levels (25/9, 4, 6))",
    )
    draws: int = Field(8, ge=1, le=64, description="basis draws per level (redrawn on rejection)")
    continuation: float = Field(
        1e-3,
        ge=0.0,
        le=1.0,
        description="weight biasing the initial coefficients towards the "
        "previous interval's (0 disables continuation)",
    )
    predictor: Literal["linearly_implicit", "forward_euler"] = Field(
        "linearly_implicit",
        description="end-state prediction for the initial coefficients: linearly implicit Euler "
        "x + h (I - h A)^-1 f (stable for stiff intervals) or the paper's forward Euler x + h f",
    )
    max_newton: int = Field(7, ge=2, le=30, description="chord iterations per attempt")
    newton_tol: float | None = Field(
        None,
        gt=0.0,
        le=1.0,
        description="chord stopping tolerance on the scaled update "
        "(default as Radau: max(10 eps / rtol, min(0.03, sqrt(rtol))))",
    )
    jacobian_reuse_rate: float = Field(
        1e-3,
        ge=0.0,
        le=1.0,
        description="keep the reduced Jacobian for the next interval when "
        "the chord contraction rate stayed below this",
    )
    linear_solver: Literal["auto", "dense", "sparse"] = Field(
        "auto",
        description="factorization of the chord matrices E - h lam J (n_x + n_z unknowns): "
        "dense LAPACK, sparse KLU with one symbolic analysis per network, or auto (dense up to "
        "200 unknowns); both solve the same systems",
    )
    safety: float = Field(0.9, gt=0.0, le=1.0, description="step-controller safety factor")
    k_i: float = Field(0.3, gt=0.0, le=2.0, description="PI controller: current-error exponent")
    k_p: float = Field(0.1, ge=0.0, le=2.0, description="PI controller: previous-error exponent")
    fac_min: float = Field(0.2, gt=0.0, lt=1.0, description="smallest interval-length factor")
    fac_max: float = Field(5.0, gt=1.0, le=20.0, description="largest interval-length factor")
    first_step: float | None = Field(None, gt=0.0, le=100.0, description="first interval (s)")
    max_interval: float | None = Field(None, gt=0.0, le=1e4, description="longest interval (s)")
    min_interval: float = Field(1e-12, gt=0.0, le=1.0, description="shortest interval (s)")
    max_intervals: int = Field(100_000, ge=1, le=10_000_000, description="accepted-interval budget")
    order_hint: int = Field(4, ge=1, le=10, description="p + 1 of the starting-step heuristic")

    @model_validator(mode="after")
    def _check(self) -> RaptorOptions:
        if self.n_colloc > self.n_rbf:
            raise ValueError("n_colloc must not exceed n_rbf (rank-aware min-norm collocation)")
        if len(self.level_thresholds) != len(self.a_max_levels) - 1:
            raise ValueError("level_thresholds needs exactly one entry fewer than a_max_levels")
        if list(self.level_thresholds) != sorted(self.level_thresholds):
            raise ValueError("level_thresholds must be increasing")
        return self

    @property
    def chord_tol(self) -> float:
        if self.newton_tol is not None:
            return self.newton_tol
        return max(10 * 2.220446049250313e-16 / self.rtol, min(0.03, self.rtol**0.5))
