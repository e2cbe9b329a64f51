"""Disturbances as data: small validated models converted to timed parameter changes.

Every kind refers to network elements by name; an unknown name raises ``KeyError`` listing the
valid names of that kind. Times are in seconds from the start of the horizon.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from models.dae import DAESystem, Event, ParameterChange


class _Disturbance(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def events(self, system: DAESystem) -> tuple[Event, ...]:  # pragma: no cover - abstract
        raise NotImplementedError

    def last_time(self) -> float:
        return 0.0


class NoDisturbance(_Disturbance):
    """No event: the run checks that the initial point stays an equilibrium."""

    kind: Literal["none"] = "none"

    def events(self, system: DAESystem) -> tuple[Event, ...]:
        return ()


class BusFault(_Disturbance):
    """Three-phase fault at ``bus`` through impedance ``r + jx`` (pu on the system base),
    applied at ``t_fault`` and cleared (the shunt removed) at ``t_clear``."""

    kind: Literal["bus_fault"] = "bus_fault"
    bus: str
    t_fault: float = Field(0.1, ge=0.0, le=3600.0)
    t_clear: float = Field(0.2, ge=0.0, le=3600.0)
    r: float = Field(0.0, ge=0.0, le=1e3)
    x: float = Field(0.001, ge=0.0, le=1e3)

    @model_validator(mode="after")
    def _check(self) -> BusFault:
        if self.t_clear <= self.t_fault:
            raise ValueError("t_clear must be later than t_fault")
        if self.r == 0.0 and self.x == 0.0:
            raise ValueError("a bolted fault (r = x = 0) is singular: give x > 0, e.g. 1e-3 pu")
        return self

    def events(self, system: DAESystem) -> tuple[Event, ...]:
        i = system.index_of("bus", self.bus)
        y = 1.0 / complex(self.r, self.x)
        on = (
            ParameterChange("fault_g", y.real, i),
            ParameterChange("fault_b", y.imag, i),
        )
        off = (ParameterChange("fault_g", 0.0, i), ParameterChange("fault_b", 0.0, i))
        return (
            Event(self.t_fault, on, f"fault on bus {self.bus}"),
            Event(self.t_clear, off, f"fault on bus {self.bus} cleared"),
        )

    def last_time(self) -> float:
        return self.t_clear


class BranchTrip(_Disturbance):
    """Open ``branch`` (both ends) at ``t``: its status parameter goes from 1 to 0."""

    kind: Literal["branch_trip"] = "branch_trip"
    branch: str
    t: float = Field(0.1, ge=0.0, le=3600.0)

    def events(self, system: DAESystem) -> tuple[Event, ...]:
        i = system.index_of("branch", self.branch)
        return (Event(self.t, (ParameterChange("branch_status", 0.0, i),), f"trip {self.branch}"),)

    def last_time(self) -> float:
        return self.t


class LoadStep(_Disturbance):
    """Scale the constant-impedance load at ``bus`` by ``scale`` (P and Q together) at ``t``;
    1.1 is a 10 % increase at nominal voltage."""

    kind: Literal["load_step"] = "load_step"
    bus: str
    t: float = Field(0.1, ge=0.0, le=3600.0)
    scale: float = Field(1.1, ge=0.0, le=10.0)

    def events(self, system: DAESystem) -> tuple[Event, ...]:
        i = system.index_of("load", self.bus)
        g0 = float(system.params["load_g"][i])
        b0 = float(system.params["load_b"][i])
        changes = (
            ParameterChange("load_g", g0 * self.scale, i),
            ParameterChange("load_b", b0 * self.scale, i),
        )
        return (Event(self.t, changes, f"load at {self.bus} x{self.scale:g}"),)

    def last_time(self) -> float:
        return self.t


Disturbance = Annotated[
    NoDisturbance | BusFault | BranchTrip | LoadStep, Field(discriminator="kind")
]
"""Any disturbance kind, told apart by its ``kind`` field."""

DISTURBANCE_KINDS = ("none", "bus_fault", "branch_trip", "load_step")
