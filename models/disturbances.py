"""Disturbances as data: small validated models converted to timed parameter changes.

Every kind refers to network elements by name; an unknown name raises ``KeyError`` listing the
valid names of that kind. Times are in seconds from the start of the horizon.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from models.dae import DAESystem, Event, ParameterChange


class _Disturbance(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def events(self, system: DAESystem) -> tuple[Event, ...]:  # pragma: no cover - abstract
        raise NotImplementedError

    def last_time(self) -> float:
        return 0.0

    def initial_offsets(self, system: DAESystem) -> tuple[tuple[int, float], ...]:
        """(state index, offset) pairs applied to the initial state (none by default)."""
        return ()


class NoDisturbance(_Disturbance):
    """No event: the run checks that the initial point stays an equilibrium."""

    kind: Literal["none"] = "none"

    def events(self, system: DAESystem) -> tuple[Event, ...]:
        return ()


class _Fault(_Disturbance):
    """A three-phase fault through ``r + jx`` (pu on the system base), applied at ``t_fault``
    and cleared at ``t_clear`` (s)."""

    t_fault: float = Field(0.1, ge=0.0, le=3600.0)
    t_clear: float = Field(0.2, ge=0.0, le=3600.0)
    r: float = Field(0.0, ge=0.0, le=1e3)
    x: float = Field(0.001, ge=0.0, le=1e3)

    @model_validator(mode="after")
    def _check(self) -> _Fault:
        if self.t_clear <= self.t_fault:
            raise ValueError("t_clear must be later than t_fault")
        if self.r == 0.0 and self.x == 0.0:
            raise ValueError("a bolted fault (r = x = 0) is singular: give x > 0, e.g. 1e-3 pu")
        return self

    def shunt(self, bus: int, on: bool) -> tuple[ParameterChange, ...]:
        """The fault's shunt admittance at bus index ``bus`` (``on``) or its removal."""
        y = 1.0 / complex(self.r, self.x) if on else 0j
        return (ParameterChange("fault_g", y.real, bus), ParameterChange("fault_b", y.imag, bus))

    def last_time(self) -> float:
        return self.t_clear


class BusFault(_Fault):
    """Three-phase fault at ``bus``, cleared (the shunt removed) at ``t_clear``."""

    kind: Literal["bus_fault"] = "bus_fault"
    bus: str

    def events(self, system: DAESystem) -> tuple[Event, ...]:
        i = system.index_of("bus", self.bus)
        return (
            Event(self.t_fault, self.shunt(i, True), f"fault on bus {self.bus}"),
            Event(self.t_clear, self.shunt(i, False), f"fault on bus {self.bus} cleared"),
        )


class LineFault(_Fault):
    """A three-phase fault on ``branch`` next to its ``end`` (``from`` or ``to``) bus, cleared at
    ``t_clear`` by tripping the branch: the protection opens the line at both ends and the fault
    leaves with it. The close-in fault is modelled at the end bus itself (the usual planning
    approximation of a fault near a line end: the faulted section's impedance is neglected).

    Reclosing: with ``reclose`` the breakers close again at that time. A temporary fault has
    gone by then (the line is back in service); with ``retrip`` the fault was permanent: the
    line recloses onto it (the fault is back at the same bus) and the protection trips it again,
    for good, at ``retrip``."""

    kind: Literal["line_fault"] = "line_fault"
    branch: str
    end: Literal["from", "to"] = "from"
    reclose: float | None = Field(None, ge=0.0, le=3600.0)
    retrip: float | None = Field(None, ge=0.0, le=3600.0)

    @model_validator(mode="after")
    def _reclosing(self) -> LineFault:
        check_reclosing(self.t_clear, self.reclose, self.retrip)
        return self

    def events(self, system: DAESystem) -> tuple[Event, ...]:
        k = system.index_of("branch", self.branch)
        ends = system.info.get("branch_from"), system.info.get("branch_to")
        if ends[0] is None or ends[1] is None:
            raise KeyError(
                f"system {system.name!r} does not record which buses its branches connect: "
                "a line_fault needs them; use a bus_fault and a branch_trip instead"
            )
        bus = int(ends[0][k] if self.end == "from" else ends[1][k])
        name = system.names["bus"][bus]
        trip = (ParameterChange("branch_status", 0.0, k),)
        close = (ParameterChange("branch_status", 1.0, k),)
        events = [
            Event(self.t_fault, self.shunt(bus, True), f"fault on {self.branch} at bus {name}"),
            Event(
                self.t_clear,
                self.shunt(bus, False) + trip,
                f"fault on {self.branch} cleared: {self.branch} tripped",
            ),
        ]
        if self.reclose is not None and self.retrip is None:
            events.append(Event(self.reclose, close, f"{self.branch} reclosed"))
        elif self.reclose is not None and self.retrip is not None:
            events += [
                Event(self.reclose, close + self.shunt(bus, True),
                      f"{self.branch} reclosed onto the fault at bus {name}"),
                Event(self.retrip, self.shunt(bus, False) + trip,
                      f"{self.branch} tripped again (reclose failed)"),
            ]  # fmt: skip
        return tuple(events)

    def last_time(self) -> float:
        return max(t for t in (self.t_clear, self.reclose, self.retrip) if t is not None)


def check_reclosing(t_open: float, reclose: float | None, retrip: float | None) -> None:
    """``t_open < reclose < retrip``, and a ``retrip`` only after a ``reclose``."""
    if retrip is not None and reclose is None:
        raise ValueError("retrip needs a reclose time (a line trips again only once reclosed)")
    if reclose is not None and not reclose > t_open:
        raise ValueError(f"reclose = {reclose:g} s must be later than the trip ({t_open:g} s)")
    if retrip is not None and reclose is not None and not retrip > reclose:
        raise ValueError(f"retrip = {retrip:g} s must be later than reclose ({reclose:g} s)")


class BranchTrip(_Disturbance):
    """Open ``branch`` (both ends) at ``t``: its status parameter goes from 1 to 0; with
    ``reclose`` it closes again then (1), and with ``retrip`` opens once more (a failed reclose:
    ANDES's ``Toggle`` records, one per switching).

    A bus the trip leaves with no branch in service and no machine or bus device (a radial
    line's dead end, a transformer's unloaded side) is de-energized as a planner's tool does:
    its KCL would read 0 = 0 and leave its voltage undefined (a singular network matrix), so it
    is grounded through 1 pu (``bus_isolated`` 0 -> 1, assembled systems), its voltage goes to
    zero and its static load is disconnected with it (every ZIP part 0: a constant-power part
    has no solution at v = 0). A machine left alone on its bus keeps its bus (an island of one
    machine)."""

    kind: Literal["branch_trip"] = "branch_trip"
    branch: str
    t: float = Field(0.1, ge=0.0, le=3600.0)
    reclose: float | None = Field(None, ge=0.0, le=3600.0)
    retrip: float | None = Field(None, ge=0.0, le=3600.0)

    @model_validator(mode="after")
    def _reclosing(self) -> BranchTrip:
        check_reclosing(self.t, self.reclose, self.retrip)
        return self

    def events(self, system: DAESystem) -> tuple[Event, ...]:
        i = system.index_of("branch", self.branch)
        dead = isolated_buses(system, i)
        opened = _switching(system, i, dead, closed=False)
        label = f"trip {self.branch}" + "".join(
            f"; {system.names['bus'][k]} de-energized" for k in dead
        )
        events = [Event(self.t, opened, label)]
        if self.reclose is not None:
            closed = _switching(system, i, dead, closed=True)
            events.append(Event(self.reclose, closed, f"{self.branch} reclosed"))
        if self.retrip is not None:
            events.append(Event(self.retrip, opened, f"{label} again (reclose failed)"))
        return tuple(events)

    def last_time(self) -> float:
        return max(t for t in (self.t, self.reclose, self.retrip) if t is not None)


def _switching(
    system: DAESystem, branch: int, dead: list[int], *, closed: bool
) -> tuple[ParameterChange, ...]:
    """The changes that open (or close again) ``branch``: its status, and the buses ``dead``
    it de-energizes with their loads (restored to the system's values when it closes)."""
    changes = [ParameterChange("branch_status", 1.0 if closed else 0.0, branch)]
    loads = system.names.get("load", ())
    for k in dead:
        changes.append(ParameterChange("bus_isolated", 0.0 if closed else 1.0, k))
        bus = system.names["bus"][k]
        if bus in loads:  # de-energized with its bus (a constant-power part has no v = 0)
            j = system.index_of("load", bus)
            changes += [
                ParameterChange(n, float(np.asarray(system.params[n])[j]) if closed else 0.0, j)
                for n in LOAD_PARAMS
                if n in system.params
            ]
    return tuple(changes)


def isolated_buses(system: DAESystem, branch: int) -> list[int]:
    """Buses (indices) that opening ``branch`` leaves with no branch in service and no machine
    or bus device; empty where the system has no ``bus_isolated`` parameter (dq and EMT
    networks, whose buses carry their own capacitances)."""
    info = system.info
    if "bus_isolated" not in system.params or "device_buses" not in info:
        return []
    status = np.asarray(system.params["branch_status"], dtype=float).copy()
    ends = np.asarray(info["branch_from"]), np.asarray(info["branch_to"])
    status[branch] = 0.0
    live = status > 0
    connected = set(ends[0][live].tolist()) | set(ends[1][live].tolist())
    devices = set(info["device_buses"])
    return sorted(
        int(k)
        for k in (ends[0][branch], ends[1][branch])
        if int(k) not in connected and int(k) not in devices
    )


LOAD_PARAMS = ("load_g", "load_b", "load_ip", "load_iq", "load_pp", "load_pq")
"""Per-load parameters of the ZIP parts (Z always; I and P where the system has them)."""


class LoadStep(_Disturbance):
    """Scale the load at ``bus`` by ``scale`` (P and Q, every ZIP part together) at ``t``;
    1.1 is a 10 % increase at nominal voltage."""

    kind: Literal["load_step"] = "load_step"
    bus: str
    t: float = Field(0.1, ge=0.0, le=3600.0)
    scale: float = Field(1.1, ge=0.0, le=10.0)

    def events(self, system: DAESystem) -> tuple[Event, ...]:
        i = system.index_of("load", self.bus)
        changes = tuple(
            ParameterChange(name, float(system.params[name][i]) * self.scale, i)
            for name in LOAD_PARAMS
            if name in system.params and (name in ("load_g", "load_b") or system.params[name][i])
        )
        return (Event(self.t, changes, f"load at {self.bus} x{self.scale:g}"),)

    def last_time(self) -> float:
        return self.t


class GeneratorTrip(_Disturbance):
    """Disconnect ``generator`` at ``t``: its status parameter goes from 1 to 0, its stator
    currents to zero (the machine keeps running unloaded; it leaves the centre of inertia)."""

    kind: Literal["generator_trip"] = "generator_trip"
    generator: str
    t: float = Field(0.1, ge=0.0, le=3600.0)

    def events(self, system: DAESystem) -> tuple[Event, ...]:
        i = system.index_of("generator", self.generator)
        if "gen_status" not in system.params:
            raise KeyError(f"system {system.name!r} has no generator status parameter")
        change = (ParameterChange("gen_status", 0.0, i),)
        return (Event(self.t, change, f"trip {self.generator}"),)

    def last_time(self) -> float:
        return self.t


SETPOINTS: dict[str, tuple[str, str]] = {
    "motor_torque": ("motor", "mot_tm"),
    "inverter_pref": ("inverter", "inv_pref"),
    "inverter_qref": ("inverter", "inv_qref"),
    "avr_vref": ("generator", "vref"),
    "governor_pref": ("generator", "pref"),
    "source_voltage": ("source", "v_source"),
}
"""Set-point name -> (element kind, parameter): the mechanical load torque of an induction motor
(pu), an inverter's active / reactive power reference (pu), an AVR voltage reference (pu), a
governor's load reference (pu), the source voltage of the cascaded line (pu)."""


def setpoint_change(
    system: DAESystem,
    setpoint: str,
    element: str | None,
    *,
    scale: float | None,
    delta: float | None,
) -> ParameterChange:
    """The parameter change of one set-point step; unknown set-points or elements raise KeyError
    listing the valid ones. ``element`` None means the first element of its kind."""
    if setpoint not in SETPOINTS:
        raise KeyError(f"unknown set-point {setpoint!r}; valid set-points: {sorted(SETPOINTS)}")
    kind, param = SETPOINTS[setpoint]
    if kind not in system.names or not system.names[kind] or param not in system.params:
        have = sorted(
            k for k, (kd, pn) in SETPOINTS.items() if system.names.get(kd) and pn in system.params
        )
        raise KeyError(
            f"system {system.name!r} has no {setpoint!r} set-point; valid set-points: {have}"
        )
    i = system.index_of(kind, element) if element is not None else 0
    value = float(np.asarray(system.params[param]).reshape(-1)[i])
    new = value * scale if scale is not None else value + float(delta or 0.0)
    index = None if np.asarray(system.params[param]).ndim == 0 else i
    return ParameterChange(param, new, index)


class SetpointStep(_Disturbance):
    """Step the set-point ``setpoint`` (a key of ``SETPOINTS``) of ``element`` at ``t``: multiply
    it by ``scale`` or add ``delta`` (pu); exactly one of the two is given."""

    kind: Literal["setpoint_step"] = "setpoint_step"
    setpoint: str
    element: str | None = None
    t: float = Field(0.1, ge=0.0, le=3600.0)
    scale: float | None = Field(None, ge=-10.0, le=10.0)
    delta: float | None = Field(None, ge=-10.0, le=10.0)

    @model_validator(mode="after")
    def _check(self) -> SetpointStep:
        if (self.scale is None) == (self.delta is None):
            raise ValueError("give exactly one of 'scale' and 'delta'")
        return self

    def events(self, system: DAESystem) -> tuple[Event, ...]:
        change = setpoint_change(
            system, self.setpoint, self.element, scale=self.scale, delta=self.delta
        )
        label = f"{self.setpoint}[{self.element or 'first'}] " + (
            f"x{self.scale:g}" if self.scale is not None else f"{self.delta:+g}"
        )
        return (Event(self.t, (change,), label),)

    def last_time(self) -> float:
        return self.t


class SourceSwitch(_Disturbance):
    """Open (``close`` False, the default) or close the ideal source ``source`` at ``t``: its
    connection parameter ``source_on`` goes to 0 (or 1). With ``load`` and ``load_scale`` the
    conductance of that load is scaled at the same instant (the loading of the island formed);
    ``source`` / ``load`` None mean the first of their kind."""

    kind: Literal["source_switch"] = "source_switch"
    source: str | None = None
    t: float = Field(0.05, ge=0.0, le=3600.0)
    close: bool = False
    load: str | None = None
    load_scale: float = Field(1.0, ge=0.0, le=10.0)

    def events(self, system: DAESystem) -> tuple[Event, ...]:
        if "source_on" not in system.params or not system.names.get("source"):
            raise KeyError(f"system {system.name!r} has no switchable source ('source_on')")
        i = system.index_of("source", self.source) if self.source is not None else 0
        name = system.names["source"][i]
        changes = [ParameterChange("source_on", 1.0 if self.close else 0.0, i)]
        label = f"source {name} {'closed' if self.close else 'opened'}"
        if self.load is not None or self.load_scale != 1.0:
            j = system.index_of("load", self.load) if self.load is not None else 0
            value = float(np.asarray(system.params["load_g"]).reshape(-1)[j]) * self.load_scale
            changes.append(ParameterChange("load_g", value, j))
            label += f", load {system.names['load'][j]} x{self.load_scale:g}"
        return (Event(self.t, tuple(changes), label),)

    def last_time(self) -> float:
        return self.t


class PaperSequence(_Disturbance):
    """The RAPTOR paper's RMS disturbance sequence (Ellinas et al., §IV-C): a motor mechanical-
    torque change, then an inverter active-power-reference change, then an AVR voltage-reference
    change. Elements default to the first motor, inverter and generator of the system.
    ``setpoint_sequence`` is accepted as another name of the same preset (the platform's
    campaign generator asks for it by that name)."""

    kind: Literal["paper_sequence", "setpoint_sequence"] = "paper_sequence"
    motor: str | None = None
    inverter: str | None = None
    generator: str | None = None
    t_motor: float = Field(0.1, ge=0.0, le=3600.0)
    t_inverter: float = Field(0.3, ge=0.0, le=3600.0)
    t_avr: float = Field(0.5, ge=0.0, le=3600.0)
    motor_torque_scale: float = Field(1.2, ge=0.0, le=3.0)
    inverter_pref_scale: float = Field(0.5, ge=-2.0, le=3.0)
    avr_vref_delta: float = Field(0.02, ge=-0.5, le=0.5)

    def events(self, system: DAESystem) -> tuple[Event, ...]:
        steps = (
            SetpointStep(
                setpoint="motor_torque",
                element=self.motor,
                t=self.t_motor,
                scale=self.motor_torque_scale,
            ),
            SetpointStep(
                setpoint="inverter_pref",
                element=self.inverter,
                t=self.t_inverter,
                scale=self.inverter_pref_scale,
            ),
            SetpointStep(
                setpoint="avr_vref", element=self.generator, t=self.t_avr, delta=self.avr_vref_delta
            ),
        )
        return tuple(event for step in steps for event in step.events(system))

    def last_time(self) -> float:
        return max(self.t_motor, self.t_inverter, self.t_avr)


class InputStep(_Disturbance):
    """Step the exogenous input ``input`` (a name in ``DAESystem.names['input']``, e.g.
    ``inv.P_ref`` or ``grid.E`` of the dq networks) at ``t``: set it to ``value``, add ``delta``
    or multiply it by ``scale`` (exactly one; ``delta`` and ``scale`` act on the case's initial
    value, also inside a sequence)."""

    kind: Literal["input_step"] = "input_step"
    input: str
    t: float = Field(0.1, ge=0.0, le=3600.0)
    value: float | None = Field(None, ge=-100.0, le=100.0)
    delta: float | None = Field(None, ge=-100.0, le=100.0)
    scale: float | None = Field(None, ge=-10.0, le=10.0)

    @model_validator(mode="after")
    def _check(self) -> InputStep:
        given = [n for n in ("value", "delta", "scale") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of 'value', 'delta' and 'scale' (got {given})")
        return self

    def events(self, system: DAESystem) -> tuple[Event, ...]:
        if "u_exo" not in system.params or not system.names.get("input"):
            raise KeyError(f"system {system.name!r} has no exogenous inputs ('input')")
        i = system.index_of("input", self.input)
        old = float(np.asarray(system.params["u_exo"])[i])
        if self.value is not None:
            new, how = self.value, f"= {self.value:g}"
        elif self.delta is not None:
            new, how = old + self.delta, f"{self.delta:+g}"
        else:
            assert self.scale is not None  # exactly one of the three is given (validated)
            new, how = old * self.scale, f"x{self.scale:g}"
        return (Event(self.t, (ParameterChange("u_exo", new, i),), f"{self.input} {how}"),)

    def last_time(self) -> float:
        return self.t


class StateOffset(_Disturbance):
    """Start from the equilibrium with the differential state ``state`` (a name in
    ``DAESystem.state_names``, e.g. ``G1.omega``) offset by ``delta`` (in that state's units, pu
    or rad); the algebraic variables are re-solved for the offset state."""

    kind: Literal["state_offset"] = "state_offset"
    state: str
    delta: float = Field(..., ge=-10.0, le=10.0)

    def events(self, system: DAESystem) -> tuple[Event, ...]:
        self.initial_offsets(system)  # name check
        return ()

    def initial_offsets(self, system: DAESystem) -> tuple[tuple[int, float], ...]:
        if self.state not in system.state_names:
            some = [n for n in system.state_names if n.split(".")[0] == self.state.split(".")[0]]
            hint = some or list(system.state_names[:12])
            raise KeyError(
                f"unknown state {self.state!r} in system {system.name!r}; e.g. {hint} "
                f"({system.n_x} states in all)"
            )
        return ((system.state_names.index(self.state), float(self.delta)),)


_SINGLE_KINDS = (
    NoDisturbance
    | BusFault
    | LineFault
    | BranchTrip
    | LoadStep
    | GeneratorTrip
    | SetpointStep
    | SourceSwitch
    | PaperSequence
    | InputStep
    | StateOffset
)
SingleDisturbance = Annotated[_SINGLE_KINDS, Field(discriminator="kind")]
"""Every kind except ``sequence``."""


class DisturbanceSequence(_Disturbance):
    """Several disturbances in one run (e.g. the EMT inverter test's two consecutive steps):
    their events merged in time order, their initial-state offsets summed."""

    kind: Literal["sequence"] = "sequence"
    steps: list[SingleDisturbance] = Field(..., min_length=1, max_length=20)

    def events(self, system: DAESystem) -> tuple[Event, ...]:
        events = [event for step in self.steps for event in step.events(system)]
        return tuple(sorted(events, key=lambda e: e.time))

    def last_time(self) -> float:
        return max(step.last_time() for step in self.steps)

    def initial_offsets(self, system: DAESystem) -> tuple[tuple[int, float], ...]:
        return tuple(o for step in self.steps for o in step.initial_offsets(system))


Disturbance = Annotated[_SINGLE_KINDS | DisturbanceSequence, Field(discriminator="kind")]
"""Any disturbance kind, told apart by its ``kind`` field."""

DISTURBANCE_KINDS = (
    "none",
    "bus_fault",
    "line_fault",
    "branch_trip",
    "load_step",
    "generator_trip",
    "setpoint_step",
    "source_switch",
    "paper_sequence",
    "setpoint_sequence",
    "input_step",
    "state_offset",
    "sequence",
)

PRESETS = ("paper_sequence", "setpoint_sequence")
"""Named disturbance presets (kinds that stand for a whole sequence)."""
