"""Disturbance generators: one spec entry that expands, on the built network, into many
disturbances (N-1 branch trips, a fault at every bus, every generator trip, the paper's
set-point sequence). Kinds the models do not provide yet are refused with the valid ones listed,
so a campaign never silently loses a contingency set."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from models import disturbances as dist
from models.dae import DAESystem

_ADAPTER: TypeAdapter[Any] = TypeAdapter(dist.Disturbance)


def _require_kind(kind: str) -> None:
    if kind not in dist.DISTURBANCE_KINDS:
        raise ValueError(
            f"the models provide no {kind!r} disturbance yet; valid kinds: "
            f"{list(dist.DISTURBANCE_KINDS)}"
        )


class _Generator(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def disturbances(self, system: DAESystem) -> list[Any]:  # pragma: no cover - abstract
        raise NotImplementedError


RECLOSE_AFTER = Field(
    None, gt=0.0, le=60.0, description="dead time (s) after the trip before the breakers reclose"
)


class BranchTrips(_Generator):
    """N-1: every branch of the network tripped at ``t`` (one scenario each), reclosed after
    ``reclose_after`` seconds where given."""

    kind: Literal["branch_trips"] = "branch_trips"
    t: float = Field(0.1, ge=0.0, le=3600.0)
    reclose_after: float | None = RECLOSE_AFTER
    exclude: list[str] = Field(default_factory=list, description="branch names to skip")

    def disturbances(self, system: DAESystem) -> list[Any]:
        reclose = None if self.reclose_after is None else self.t + self.reclose_after
        return [
            dist.BranchTrip(branch=b, t=self.t, reclose=reclose)
            for b in system.names.get("branch", ())
            if b not in self.exclude
        ]


class BusFaults(_Generator):
    """A three-phase fault at every bus, applied at ``t_fault`` and cleared after
    ``clearing_time`` seconds."""

    kind: Literal["bus_faults"] = "bus_faults"
    t_fault: float = Field(0.1, ge=0.0, le=3600.0)
    clearing_time: float = Field(0.1, gt=0.0, le=10.0)
    r: float = Field(0.0, ge=0.0, le=1e3)
    x: float = Field(0.001, ge=0.0, le=1e3)
    exclude: list[str] = Field(default_factory=list, description="bus names to skip")

    @model_validator(mode="after")
    def _not_bolted(self) -> BusFaults:
        if self.r == 0.0 and self.x == 0.0:
            raise ValueError("a bolted fault (r = x = 0) is singular: give x > 0, e.g. 1e-3 pu")
        return self

    def disturbances(self, system: DAESystem) -> list[Any]:
        t_clear = self.t_fault + self.clearing_time
        return [
            dist.BusFault(bus=b, t_fault=self.t_fault, t_clear=t_clear, r=self.r, x=self.x)
            for b in system.names.get("bus", ())
            if b not in self.exclude
        ]


class LineFaults(_Generator):
    """A fault next to an end of every branch, cleared after ``clearing_time`` seconds by
    tripping that branch (``line_fault``): ``end`` ``from``, ``to`` or ``both`` (two scenarios
    per branch). With ``reclose_after`` the line recloses after that dead time; a ``permanent``
    fault is still there then, and the line trips again after ``clearing_time``."""

    kind: Literal["line_faults"] = "line_faults"
    t_fault: float = Field(0.1, ge=0.0, le=3600.0)
    clearing_time: float = Field(0.1, gt=0.0, le=10.0)
    end: Literal["from", "to", "both"] = "from"
    reclose_after: float | None = RECLOSE_AFTER
    permanent: bool = Field(False, description="the fault persists: a reclose fails and retrips")
    r: float = Field(0.0, ge=0.0, le=1e3)
    x: float = Field(0.001, ge=0.0, le=1e3)
    exclude: list[str] = Field(default_factory=list, description="branch names to skip")

    @model_validator(mode="after")
    def _not_bolted(self) -> LineFaults:
        if self.r == 0.0 and self.x == 0.0:
            raise ValueError("a bolted fault (r = x = 0) is singular: give x > 0, e.g. 1e-3 pu")
        if self.permanent and self.reclose_after is None:
            raise ValueError("permanent: a permanent fault matters only with reclose_after")
        return self

    def disturbances(self, system: DAESystem) -> list[Any]:
        t_clear = self.t_fault + self.clearing_time
        ends = ("from", "to") if self.end == "both" else (self.end,)
        reclose = None if self.reclose_after is None else t_clear + self.reclose_after
        retrip = reclose + self.clearing_time if self.permanent and reclose is not None else None
        return [
            dist.LineFault(
                branch=b,
                end=e,
                t_fault=self.t_fault,
                t_clear=t_clear,
                r=self.r,
                x=self.x,
                reclose=reclose,
                retrip=retrip,
            )
            for b in system.names.get("branch", ())
            if b not in self.exclude
            for e in ends
        ]


class GeneratorTrips(_Generator):
    """Every generator tripped at ``t``, when the models provide ``generator_trip``."""

    kind: Literal["generator_trips"] = "generator_trips"
    t: float = Field(0.1, ge=0.0, le=3600.0)

    def disturbances(self, system: DAESystem) -> list[Any]:
        _require_kind("generator_trip")
        return [
            _ADAPTER.validate_python({"kind": "generator_trip", "generator": g, "t": self.t})
            for g in system.names.get("generator", ())
        ]


class SetpointSequence(_Generator):
    """The paper's set-point sequence (motor torque, inverter P reference, AVR reference), when
    the models provide it as the ``setpoint_sequence`` disturbance."""

    kind: Literal["setpoint_sequence"] = "setpoint_sequence"

    def disturbances(self, system: DAESystem) -> list[Any]:
        _require_kind("setpoint_sequence")
        return [_ADAPTER.validate_python({"kind": "setpoint_sequence"})]


DisturbanceGenerator = Annotated[
    BranchTrips | BusFaults | LineFaults | GeneratorTrips | SetpointSequence,
    Field(discriminator="kind"),
]
"""Any generator, told apart by its ``kind`` field."""
