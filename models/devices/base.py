"""The contract of a dynamic device model (one per PSS/E model name) and shared helpers.

Every model is vectorized over its instances: parameters are arrays (one entry per instance),
states are a tuple of arrays in ``states`` order. The *role* fixes the signature of the functions
(per-unit on the machine base MBASE; speed ``omega`` in pu, 1 = synchronous; angles in rad):

* ``machine``: ``init(v, s, p) -> dict`` (states, ``Id``, ``Iq``, ``efd``, ``tm`` from the
  terminal voltage and generated power, complex pu), ``derivatives(xs, Id, Iq, efd, tm, p,
  omega_s)``, ``stator(xs, vd, vq, Id, Iq, p) -> (res_d, res_q)``, ``torque(xs, Id, Iq, p)``,
  ``delta`` and ``omega`` the positions of those states.
* ``exciter``: ``init(efd, vt, p) -> dict`` (states and ``vref``), ``derivatives(xs, vt, vref,
  vs, p)``, ``output(xs, vt, p) -> efd``; ``vs`` is the stabilizer's signal VOTHSG (0 without
  one). An exciter that reads more of its machine names those signals in ``inputs`` (from
  ``SIGNALS``) and takes their dict as one more argument: ``init(efd, vt, p, sig)``,
  ``derivatives(xs, vt, vref, vs, p, sig)``, ``output(xs, vt, p, sig)``.
* ``stabilizer``: ``init(sig, p) -> dict`` (states), ``derivatives(xs, sig, p)``,
  ``output(xs, sig, p) -> vs``, added to its machine's exciter input (PSS/E's VOTHSG); ``sig``
  holds the ``SIGNALS`` of its machine (its input codes choose among them).
* ``governor``: ``init(tm, p) -> dict`` (states and ``pref``), ``derivatives(xs, omega, pref,
  p)``, ``output(xs, omega, p) -> tm``.
* ``converter`` (a converter-interfaced source in a generator's slot, e.g. REGCA1):
  ``init(v, s, p) -> dict`` (states, its delivered currents ``Ipout``, ``Iqout`` and the commands
  ``ipcmd``, ``iqcmd`` that hold them), ``derivatives(xs, vt, ipcmd, iqcmd, p)``,
  ``current(xs, vt, p) -> (Ipout, Iqout)``: active current along the terminal voltage and
  reactive current (Q = vt Iqout, positive delivered); ``vt`` the terminal voltage magnitude.
  A converter that names ``inputs`` (e.g. PVD1) takes one more argument: at ``init``
  ``{"fn": network frequency in Hz}``, in ``derivatives`` its terminal voltage's ``vr``, ``vi``.
* ``electrical`` (a converter's electrical control, e.g. REECA1): ``init(sig, p) -> dict``
  (states, and the references ``pref``, ``qref`` that hold the commands), ``derivatives(xs,
  sig, pref, qref, p)``, ``output(xs, sig, pref, qref, p) -> (ipcmd, iqcmd)``; ``sig`` holds
  ``vt``, ``pe``, ``qe`` (the converter's delivered power, MBASE), and at ``init`` also the
  commands ``ipcmd``, ``iqcmd`` to hold.
* ``plant`` (a converter's plant control, e.g. REPCA1): ``init(sig, pref, qref, p) -> dict``,
  ``derivatives(xs, sig, p)``, ``output(xs, sig, p) -> (pref, qref)``; ``sig`` adds to the
  electrical control's signals the network quantities ``repca1.PLANT_SIGNALS`` (its parameters
  ``branch``, ``branch_end`` name the measured branch and end, ``fn`` the frequency in Hz).
* ``bus`` (a device connected to a bus rather than to a generator slot, per unit on the *system*
  base): ``init(v, s, p, omega_s) -> dict`` (states, the device's set-point parameters and
  ``power``, the complex power it injects at the power flow; the requested ``s`` is honoured
  where the model controls it), ``derivatives(xs, vr, vi, p, omega_s)``, ``current(xs, vr, vi,
  p, omega_s) -> (ir, ii)`` injected into the network, ``measure(xs, vr, vi, p, omega_s)`` the
  values of the outputs named ``measures``; ``kind`` is the element kind of its names
  (``motor``, ...).

Parameters are stored in the system as ``<prefix><name>`` (``prefix`` defaults to ``<name>_``);
``controller`` names the controller states (default: every state of an exciter or governor).

``check(p) -> list[(field, index, reason)]`` lists parameter values the model cannot use.
A machine model with a field winding gives ``field_current(xs, Id, Iq, p)``: PSS/E's LadIfd
(= Xad Ifd, pu field voltage; equal to Efd at equilibrium), which some exciters read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

SIGNALS = ("omega", "vt", "vd", "vq", "Id", "Iq", "ifd", "pe", "tm")
"""Machine signals a controller can read (per unit on MBASE, machine d-q frame): speed, terminal
voltage magnitude and its d, q parts, stator currents, field current LadIfd, electrical power
at the terminals (Vd Id + Vq Iq), mechanical torque."""


@dataclass(frozen=True)
class DeviceModel:
    name: str
    role: str
    params: tuple[str, ...]
    """Parameter names in ``.dyr`` order (integer ICONs first where the model has them)."""
    states: tuple[str, ...]
    source: str
    check: Callable
    init: Callable
    derivatives: Callable
    output: Callable | None = None
    stator: Callable | None = None
    torque: Callable | None = None
    prefix: str | None = None
    controller: tuple[str, ...] | None = None
    current: Callable | None = None
    measures: tuple[str, ...] = ()
    measure: Callable | None = None
    kind: str = ""
    inputs: tuple[str, ...] = ()
    """``SIGNALS`` an exciter reads beyond its terminal voltage (see the module docstring)."""
    field_current: Callable | None = None
    plausible: Callable | None = None
    """``plausible(p) -> list[(field, index, reason)]`` like ``check``, for what typical data
    satisfy but the equations do not need (e.g. GENROU's X''d > Xl): reported as warnings, or
    refused where the importer is asked to be strict (``models.psse.case``, ``strict``)."""
    readings: Callable | None = None
    """``readings(values) -> list[str]``: for one record's values (name -> number), each value
    the model reads with a meaning of its own (e.g. ESDC2A's VRMAX = 0, no upper limit), said
    in words; the importer stores them as warnings on the network, so no reading is silent."""

    @property
    def param_prefix(self) -> str:
        return f"{self.name}_" if self.prefix is None else self.prefix

    @property
    def controller_states(self) -> tuple[str, ...]:
        if self.controller is not None:
            return self.controller
        controls = ("exciter", "governor", "stabilizer", "electrical", "plant")
        return self.states if self.role in controls else ()


def to_machine_frame(re, im, delta):
    """(d, q) components of a network-frame phasor re + j im: (re + j im) e^{-j(delta - pi/2)}
    (Sauer & Pai 1998, Ch. 7: the d-q frame of every machine model here)."""
    s, c = jnp.sin(delta), jnp.cos(delta)
    return re * s - im * c, re * c + im * s


def to_network_frame(d, q, delta):
    """(re, im) of a machine-frame phasor d + j q: (d + j q) e^{j(delta - pi/2)}."""
    s, c = jnp.sin(delta), jnp.cos(delta)
    return d * s + q * c, q * s - d * c


def quadratic_through(x1, s1, x2, s2):
    """(A, B) of PSS/E's quadratic saturation Se(x) = B (x - A)^2 / x (x > A) through Se(x1) =
    s1 and Se(x2) = s2 (0 < x1 < x2, 0 <= s1 < s2 x2 / x1); (0, 0) where s1 = s2 = 0 (none)."""
    x1, s1, x2, s2 = (np.asarray(v, float) for v in (x1, s1, x2, s2))
    on = (s1 > 0) | (s2 > 0)
    ratio = np.sqrt(np.where(on, s1 * x1 / np.where(on, s2 * x2, 1.0), 0.0))
    a = np.where(on, (ratio * x2 - x1) / np.where(on, ratio - 1.0, 1.0), 0.0)
    b = np.where(on, s2 * x2 / np.where(on, (x2 - a) ** 2, 1.0), 0.0)
    return a, b


def quadratic_saturation(s10, s12):
    """(A, B) of a machine's saturation through Se(1.0) = S(1.0), Se(1.2) = S(1.2)."""
    return quadratic_through(1.0, s10, 1.2, s12)


def saturation(x, a, b):
    """Se(x) = B (x - A)^2 / x for x > A, else 0 (works on JAX and NumPy arrays)."""
    xp = jnp if not isinstance(x, np.ndarray) else np
    excess = xp.maximum(x - a, 0.0)
    return b * excess * excess / xp.maximum(x, 1e-6)


LIMITER_VIEWS = ("gate", "raw", "low", "high", "marker")
_LIMITER_VIEW: ContextVar[str] = ContextVar("limiter_view", default="gate")


@contextmanager
def limiter_view(view: str) -> Iterator[None]:
    """While tracing (or evaluating) a system's f inside this block, every ``non_windup`` returns,
    in place of its gated derivative: ``raw`` the derivative without the gate, ``low`` / ``high``
    the limits, ``marker`` +inf (which states are limited). ``gate`` is the model itself.

    Why: the implicit trapezoid needs each limited state as x1 = clip(x0 + h/2 (f0 + f1_raw),
    low, high) (``solvers.trapezoid_kernel.trapezoid_target``); with the gated f its step
    equation has no root near a limit. The device models stay written once, with ``non_windup``.
    """
    if view not in LIMITER_VIEWS:
        raise ValueError(f"limiter view {view!r}: expected one of {LIMITER_VIEWS}")
    token = _LIMITER_VIEW.set(view)
    try:
        yield
    finally:
        _LIMITER_VIEW.reset(token)


def non_windup(derivative, state, low, high):
    """Non-windup limiter of a first-order block (IEEE Std 421.5-2016 Annex E): the state stops
    at a limit and leaves it as soon as its derivative points back inside (other views of the
    same limiter: ``limiter_view``)."""
    view = _LIMITER_VIEW.get()
    if view == "raw":
        return derivative
    if view in ("low", "high"):
        return jnp.zeros_like(derivative) + (low if view == "low" else high)
    if view == "marker":
        return jnp.full_like(derivative, jnp.inf)
    at_high = (state >= high) & (derivative > 0)
    at_low = (state <= low) & (derivative < 0)
    return jnp.where(at_high | at_low, 0.0, derivative)


def lag(state, value, t):
    """(derivative, output) of a first-order lag 1 / (1 + s T) on ``value``, bypassed where
    T = 0 (PSS/E: a zero time constant removes the block; its state stays at its initial value
    and the output is the input)."""
    on = t > 0
    return jnp.where(on, (value - state) / jnp.where(on, t, 1.0), 0.0), jnp.where(on, state, value)


def lead_lag(state, value, t_lead, t_lag):
    """(derivative, output) of (1 + s T_lead) / (1 + s T_lag), bypassed where T_lag = 0."""
    on = t_lag > 0
    safe = jnp.where(on, t_lag, 1.0)
    ratio = t_lead / safe
    out = ratio * value + (1.0 - ratio) * state
    return jnp.where(on, (value - state) / safe, 0.0), jnp.where(on, out, value)


def problems_where(mask, field: str, reason: str) -> list[tuple[str, int, str]]:
    return [(field, int(i), reason) for i in np.flatnonzero(np.asarray(mask))]


def check_rules(rules) -> Callable:
    """``check(p)`` of a model whose data are validated field by field by ``rules`` (the
    ``models.components.validation`` rules: (field, predicate, requirement))."""

    def check(p) -> list[tuple[str, int, str]]:
        out: list[tuple[str, int, str]] = []
        for name, predicate, requirement in rules:
            values = np.asarray(p[name], dtype=float)
            ok = np.broadcast_to(np.asarray(predicate(values)), values.shape)
            out += problems_where(~ok | ~np.isfinite(values), name, f"must be {requirement}")
        return out

    return check


STABILIZER_INPUTS = {
    1: "rotor speed deviation (omega - 1, pu)",
    3: "electrical power (pu on MBASE)",
    4: "accelerating power (mechanical minus electrical, pu on MBASE)",
    5: "terminal bus voltage (pu)",
}
"""PSS/E stabilizer input-signal codes implemented (PSS(R)E Model Library, IEEEST / ST2CUT ICONs):
2 (bus frequency deviation) and 6 (derivative of bus voltage) are not, nor a remote bus."""


def stabilizer_input(code, sig):
    """The input signal chosen by a PSS/E input code per instance (0: none)."""
    return jnp.where(
        code == 1, sig["omega"] - 1.0,
        jnp.where(code == 3, sig["pe"],
                  jnp.where(code == 4, sig["tm"] - sig["pe"],
                            jnp.where(code == 5, sig["vt"], 0.0))),
    )  # fmt: skip


def stabilizer_input0(code, sig) -> np.ndarray:
    """``stabilizer_input`` on NumPy arrays (initialization)."""
    return np.asarray(stabilizer_input(np.asarray(code), sig), dtype=float)


def check_input_code(p, code: str, bus: str, allow_none: bool = False) -> list:
    """Problems of an input code and its remote bus (see ``STABILIZER_INPUTS``)."""
    valid = sorted(STABILIZER_INPUTS) + ([0] if allow_none else [])
    listed = ", ".join(f"{k} ({v})" for k, v in sorted(STABILIZER_INPUTS.items()))
    bad = ~np.isin(p[code], valid)
    out = problems_where(
        bad, code, f"is not an implemented input code; implemented: {listed}"
        + ("; 0 (no input)" if allow_none else "")
    )  # fmt: skip
    out += problems_where((p[bus] != 0) & (p[code] == 5), bus,
                          "must be 0 (a remote bus is not implemented)")  # fmt: skip
    return out


class InitialValueError(ValueError):
    """A model cannot start from the operating point its machine gives it. ``problems`` lists
    (instance index within the model's group, the value in words); ``models.assembly`` names
    each instance's record (``Device.where``) in the ``ValueError`` it raises."""

    def __init__(self, model: str, problems: list[tuple[int, str]]):
        self.model = model
        self.problems = problems
        super().__init__("; ".join(f"{model} instance {i}: {text}" for i, text in problems))


def refuse_outside(model: str, name: str, values, low, high, why: str = "") -> None:
    """Raise ``InitialValueError`` for each instance whose initial ``values`` (pu) lie outside
    [low, high] (arrays or numbers); ``why`` adds the consequence in words."""
    shape = np.shape(values)
    v, lo, hi = (np.broadcast_to(np.asarray(a, float), shape) for a in (values, low, high))
    bad = np.flatnonzero(~((v >= lo) & (v <= hi)))
    if bad.size:
        raise InitialValueError(model, [
            (int(i), f"initial {name} = {v[i]:.6g} pu outside [{lo[i]:.6g}, {hi[i]:.6g}]{why}")
            for i in bad
        ])  # fmt: skip
