"""The method catalogue: one dict, like SciPy's ``METHODS``, whose keys and option schemas drive
the API's accepted values, ``GET /solvers``, the worker and the docs."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, ValidationError

from models.naming import unknown_name
from solvers.options_base import StrictOptions
from solvers.raptor.options import RaptorOptions


class UnknownMethodError(KeyError):
    """An unknown method name; the message lists the valid ones."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.valid = sorted(METHODS)
        super().__init__(unknown_name("method", name, self.valid))

    def __str__(self) -> str:
        return self.args[0]


_Options = StrictOptions


class _AdaptiveOptions(_Options):
    """Tolerances and step limits shared by every adaptive method."""

    rtol: float = Field(1e-6, ge=1e-13, le=1e-1, description="relative tolerance")
    atol: float = Field(1e-8, ge=1e-15, le=1.0, description="absolute tolerance (state units)")
    max_steps: int = Field(200_000, ge=1, le=10_000_000, description="accepted-step budget")
    first_step: float | None = Field(None, gt=0.0, le=10.0, description="initial step (s)")
    max_step: float | None = Field(None, gt=0.0, le=1e4, description="largest step (s); unset")


class ImplicitRungeKuttaOptions(_AdaptiveOptions):
    """Options of SciPy's implicit integrators (radau, bdf, lsoda) on the reduced ODE."""

    exact_jacobian: bool = Field(
        True, description="pass the exact Jacobian (else SciPy differences it)"
    )
    formulation: Literal["auto", "reduced", "dae"] = Field(
        "auto",
        description="reduced: the ODE in x with z eliminated (dense reduced Jacobian); dae "
        "(radau, bdf): the DAE in (x, z) as its epsilon-embedding, sparse Jacobian and SuperLU; "
        "auto: dae above 400 unknowns for radau and bdf, else reduced (docs: solvers/scipy_dae)",
    )


class ExplicitRungeKuttaOptions(_AdaptiveOptions):
    """Options of SciPy's explicit Runge-Kutta integrators (rk45, dop853): no Jacobian."""


class DiffraxOptions(_AdaptiveOptions):
    """Options of the diffrax integrators (kvaerno5, tsit5, dopri5), compiled once per system.

    ``max_steps`` is diffrax's own budget, per event segment and counting rejected steps too; a
    new value compiles a new executable (it sizes the solver loop), tolerances do not.
    """

    max_steps: int = Field(
        100_000, ge=1, le=10_000_000, description="step budget per segment (accepted + rejected)"
    )


class TrapezoidOptions(_Options):
    """Options of the fixed-step implicit trapezoidal rule (trapezoid, trapezoid-delayed)."""

    dt: float = Field(1e-3, gt=0.0, le=1.0, description="time step (s)")
    newton_tol: float = Field(
        1e-10, ge=1e-14, le=1e-2, description="Newton update tolerance, relative (inf-norm)"
    )
    max_newton: int = Field(
        10, ge=2, le=50, description="Newton iterations per factorization before a refresh"
    )
    max_steps: int = Field(10_000_000, ge=1, le=100_000_000, description="step budget")
    linear_solver: Literal["auto", "dense", "sparse"] = Field(
        "auto",
        description="the Newton matrix on the unreduced DAE: dense LU of its autodiff Jacobian, "
        "sparse (the network's coloured Jacobian factored by KLU, kept across steps) or auto "
        "(dense up to 200 unknowns)",
    )


class IdaOptions(_AdaptiveOptions):
    """Options of SUNDIALS IDA on the DAE (x and z together)."""

    max_order: int = Field(5, ge=1, le=5, description="largest BDF order")
    linear_solver: Literal["auto", "dense", "sparse"] = Field(
        "auto",
        description="IDA's linear solver on the iteration matrix (n_x + n_z unknowns): dense, "
        "sparse (SUNDIALS' SuperLU_MT on the network's Jacobian pattern) or auto (dense up to "
        "200 unknowns)",
    )


@dataclass(frozen=True)
class MethodSpec:
    """A method: its options schema, its stepper and one line of guidance.

    ``stepper`` is ``module:factory``; ``factory(name)`` returns the method's stepper, a
    generator of accepted advances driven by the one driver (``solvers.stepping``): every method
    runs, streams, reports progress and fails the same way. Its advances are steps, RAPTOR
    intervals, or whole event segments for the diffrax methods (one compiled solve each)."""

    name: str
    family: str
    options: type[_Options]
    guidance: str
    stepper: str

    def step_function(self) -> Callable[..., Any]:
        module, factory = self.stepper.split(":")
        return getattr(importlib.import_module(module), factory)(self.name)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "family": self.family,
            "guidance": self.guidance,
            "advances": "segments" if self.family == "diffrax" else "steps",
            "options": self.options.model_json_schema(),
        }


def _scipy(name: str, options: type[_Options], guidance: str) -> MethodSpec:
    return MethodSpec(
        name=name,
        family="scipy",
        options=options,
        guidance=guidance,
        stepper="solvers.scipy_ivp:scipy_steps",
    )


def _diffrax(name: str, guidance: str) -> MethodSpec:
    return MethodSpec(
        name=name,
        family="diffrax",
        options=DiffraxOptions,
        guidance=guidance,
        stepper="solvers.diffrax_methods:diffrax_segments",
    )


METHODS: dict[str, MethodSpec] = {
    "raptor": MethodSpec(
        name="raptor",
        family="raptor",
        options=RaptorOptions,
        guidance="RAPTOR, the method under study: random-projection physics-informed intervals "
        "(Gaussian RBF trial functions, chord Newton on the sparse unreduced DAE), long steps on "
        "stiff networks; see docs/raptor.md.",
        stepper="solvers.raptor.runner:raptor_steps",
    ),
    "radau": _scipy(
        "radau",
        ImplicitRungeKuttaOptions,
        "The default. Implicit Radau IIA (order 5), L-stable, with the exact reduced "
        "Jacobian; copes with the stiffest modes. 1e-3 for screening, 1e-6 for a paper.",
    ),
    "bdf": _scipy(
        "bdf",
        ImplicitRungeKuttaOptions,
        "Often the fastest SciPy method (variable-order BDF 1-5, exact Jacobian) on the smooth "
        "swings after an event; less robust than Radau across a sharp event.",
    ),
    "lsoda": _scipy(
        "lsoda",
        ImplicitRungeKuttaOptions,
        "ODEPACK's LSODA: switches between Adams (non-stiff) and BDF (stiff) by itself; a "
        "reasonable choice when the stiffness is unknown.",
    ),
    "rk45": _scipy(
        "rk45",
        ExplicitRungeKuttaOptions,
        "Explicit Dormand-Prince 5(4), no Jacobian: it must resolve every fast mode, so it "
        "runs out of steps on stiff models. For non-stiff cases and comparisons only.",
    ),
    "dop853": _scipy(
        "dop853",
        ExplicitRungeKuttaOptions,
        "Explicit order 8: only for smooth, non-stiff runs at tight tolerance; fails on stiff "
        "models like rk45.",
    ),
    "kvaerno5": _diffrax(
        "kvaerno5",
        "The high-accuracy reference: Kvaerno's L-stable ESDIRK 5(4) in JAX (diffrax) with the "
        "exact autodiff Jacobian, compiled once per network. rtol 1e-10 for a reference.",
    ),
    "tsit5": _diffrax(
        "tsit5",
        "Explicit Tsitouras 5(4) in JAX: cheap steps on non-stiff cases; fails with max_steps "
        "on stiff models. For comparisons.",
    ),
    "dopri5": _diffrax(
        "dopri5",
        "Explicit Dormand-Prince 5(4) in JAX; like tsit5, for comparisons with rk45 and tsit5.",
    ),
    "trapezoid": MethodSpec(
        name="trapezoid",
        family="fixed-step",
        options=TrapezoidOptions,
        guidance="Fixed-step implicit trapezoid, x and z solved together (how EMT programs "
        "work): predictable cost, output on the step grid, no error control. It rings rather "
        "than blows up when dt is too large: halve dt.",
        stepper="solvers.trapezoid:trapezoid_steps",
    ),
    "trapezoid-delayed": MethodSpec(
        name="trapezoid-delayed",
        family="fixed-step",
        options=TrapezoidOptions,
        guidance="Trapezoid with controller states one step behind (the partitioned scheme of "
        "EMT programs), first order in that coupling: for comparisons with EMT tools. Needs "
        "the system's controller states.",
        stepper="solvers.trapezoid:trapezoid_steps",
    ),
    "ida": MethodSpec(
        name="ida",
        family="sundials",
        options=IdaOptions,
        guidance="SUNDIALS IDA (variable-order BDF) on the DAE itself, x and z together, exact "
        "Jacobian: an independent check of the reduced-ODE methods.",
        stepper="solvers.ida:ida_steps",
    ),
}


def get_method(name: str) -> MethodSpec:
    try:
        return METHODS[name]
    except KeyError:
        raise UnknownMethodError(name) from None


def validate_options(method: str, options: dict[str, Any] | None) -> _Options:
    """Typed options for ``method``; raises ``UnknownMethodError`` or pydantic ``ValidationError``
    (which names each bad field and why)."""
    return get_method(method).options.model_validate(options or {})


def catalogue() -> list[dict[str, Any]]:
    """Every method with its option schema, defaults and guidance (served by ``GET /solvers``)."""
    return [METHODS[name].describe() for name in sorted(METHODS)]


__all__ = [
    "METHODS",
    "MethodSpec",
    "UnknownMethodError",
    "ValidationError",
    "catalogue",
    "get_method",
    "validate_options",
]
