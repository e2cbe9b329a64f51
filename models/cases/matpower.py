"""Generic MATPOWER-case builder: power flow -> semi-explicit index-1 DAE at equilibrium.

Source network: a ``pandapower.networks`` case (``case14``, ``case39``, ``case57``, ``case118``), a
MATPOWER ``.m`` file (parsed as data) or a pandapower JSON file (``models.cases.matpower_io``).
Operating point: pandapower's Newton power flow (``models.powerflow.run_power_flow``, numba off).

Devices (pure functions in ``models.components``, each with its initialization twin):

* every generator: two-axis machine (``synchronous_two_axis``) + exciter (IEEE DC1A by default, or
  SEXS: ``CaseConfig.exciter``) + TGOV1 governor (``governor_tgov1``), data on the machine rating
  converted to the system base; machine data by the rating rule of ``models.cases.typical_data``
  unless ``generator_data`` gives a machine's own values (``published_generator_data(case)``: the
  published data of case14 and case39, ``models/data/ieee{14,39}_dynamic.json``, which the model
  library passes by default);
* induction motors (``induction_motor``, 3rd order) and grid-following inverters
  (``inverter_gfl``): by default one of each, at the two load buses without a generator that carry
  the largest active load (motor at the largest); the motor serves ``motor_share`` of that bus's
  active load and the inverter injects ``inverter_share`` of its bus's active load at Q = 0; the
  rest of each bus's power-flow load stays a static load, so the power flow is reproduced exactly
  (the static part absorbs the motor's reactive power with opposite sign, like a local capacitor);
* static loads: ZIP (``loads``), constant impedance by default (``CaseConfig.zip_fractions``);
* network: branch-list KCL in rectangular coordinates (``models.network``), branches in MATPOWER
  row order (lines and transformers interleaved as in the case file).

Variables (pu on the system base unless stated):

* x = [per generator in bus order: delta, omega, Eq_p, Ed_p, <exciter states>, Pv, Pt]
  + [per motor: s, er_p, em_p] + [per inverter: theta, eps, Pf, Qf, xP, xQ, i_d, i_q, gd, gq];
* z = [Vr of every bus, Vi of every bus, Id of every generator, Iq of every generator];
* g = [Re KCL per bus, Im KCL per bus, d-stator per generator, q-stator per generator].

A tripped generator (``gen_status`` 0) keeps its states; its stator equations become Id = Iq = 0.
Names: buses ``bus{n}``, branches ``br_{f}_{t}`` (``_2``, ... for parallel ones, MATPOWER's f, t),
generators ``gen{bus}`` (``_2``, ...), motors ``mot{bus}``, inverters ``inv{bus}``, loads by bus.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import jax.numpy as jnp
import numpy as np

import models.jaxconfig  # noqa: F401
from models.cases import typical_data as td
from models.cases.equilibrium import (
    checked_equilibrium,
    network_alg_names,
    network_output_names,
    unique_names,
)
from models.cases.matpower_io import NetworkSource, network_source
from models.components import exciter_ieee_dc1a as dc1a
from models.components import exciter_sexs as sexs
from models.components import governor_tgov1 as gov
from models.components import induction_motor as mot
from models.components import inverter_gfl as inv
from models.components import synchronous_sixth_order as six
from models.components import synchronous_two_axis as sm
from models.components.loads import zip_current, zip_parameters
from models.components.validation import number
from models.dae import DAESystem
from models.network import BRANCH_G, Topology, branch_parameters, current_mismatch
from models.powerflow import PowerFlowCase, run_power_flow

EXCITERS = {"ieee_dc1a": dc1a, "sexs": sexs}
"""Exciter model name -> component module (STATES, PARAMS, derivatives, init)."""
MACHINES = {
    "two_axis": (sm, sm.validate_two_axis, sm.init_two_axis),
    "sixth_order": (six, six.validate_sixth_order, six.init_sixth_order),
}
"""Machine model name -> (component module, validator, initialization twin)."""
MACHINE_IMPEDANCES = ("Rs", "xd", "xd_p", "xd_pp", "xq", "xq_p", "xq_pp")
"""Machine fields scaled by S_base / S_rated to the system base (H and D by the inverse)."""
MOTOR_IMPEDANCES = ("rs", "xs", "xm", "rr", "xr")
INVERTER_IMPEDANCES = ("kp_c", "ki_c", "Lf", "Rf")
"""Inverter fields that are impedances (V/A), scaled by S_base / S_inv."""
DATA_DIR = Path(__file__).resolve().parent.parent / "data"
PERTURBATION = {"delta": 0.05, "omega": 1e-3, "s": 1e-3}
"""Typical initial-state perturbation per state kind (rad, pu, pu); all other states 0."""


@dataclass(frozen=True)
class CaseConfig:
    """Modelling choices of a built case (the defaults are the paper's configuration)."""

    exciter: str = "ieee_dc1a"
    machine: str = "two_axis"
    zip_fractions: tuple[float, float, float] = (1.0, 0.0, 0.0)
    n_motors: int = 1
    n_inverters: int = 1
    motor_buses: tuple[int, ...] | None = None
    inverter_buses: tuple[int, ...] | None = None
    motor_share: float = 0.3
    inverter_share: float = 0.2

    def __post_init__(self) -> None:
        if self.exciter not in EXCITERS:
            raise KeyError(f"unknown exciter {self.exciter!r}; valid: {sorted(EXCITERS)}")
        if self.machine not in MACHINES:
            raise KeyError(f"unknown machine {self.machine!r}; valid: {sorted(MACHINES)}")
        if not (0.0 < self.motor_share < 1.0 and 0.0 < self.inverter_share < 1.0):
            raise ValueError("motor_share and inverter_share must lie in (0, 1)")


@dataclass
class _Devices:
    """Positions (0-based ppc bus indices) and per-device parameter arrays."""

    gen_names: tuple[str, ...]
    gen_mva: np.ndarray
    gen_class: list[str]
    params: dict[str, np.ndarray] = field(default_factory=dict)


def _gen_names(pf: PowerFlowCase) -> tuple[str, ...]:
    return unique_names(f"gen{int(pf.bus_numbers[i])}" for i in pf.gen_bus)


def _generator_params(
    pf: PowerFlowCase, rule: Mapping, config: CaseConfig, generator_data: Mapping | None
) -> _Devices:
    """Machine, exciter and governor parameters on the system base, per generator."""
    exciter = config.exciter
    module, validate, _ = MACHINES[config.machine]
    names = _gen_names(pf)
    own = _own_generator_data(generator_data, names, exciter, validate)
    s_gen = np.abs(pf.gen_p + 1j * pf.gen_q) * pf.base_mva
    ratings, data_bases, classes, machines, exciters, governors = [], [], [], [], [], []
    for k, name in enumerate(names):
        entry = own.get(name)
        rule_rating = td.machine_rating(rule, s_gen[k])
        if entry is not None:
            rating = rule_rating if entry["mva"] is None else entry["mva"]
            base = rating if entry["machine_base_mva"] is None else entry["machine_base_mva"]
            cls, machine = "published", entry["machine"]
            exc_data = entry["exciter"] or rule["exciters"][exciter]
            gov_data = entry["governor"] or rule["governor"]
        else:
            rating = base = rule_rating
            klass = td.machine_class(rule, rating)
            cls = klass["class"]
            machine = validate(f"typical data, machine class {cls!r}", klass["raw_machine"])
            exc_data, gov_data = rule["exciters"][exciter], rule["governor"]
        ratings.append(rating)
        data_bases.append(base)
        classes.append(cls)
        machines.append(machine)
        exciters.append(exc_data)
        governors.append(gov_data)
    mva = np.asarray(ratings, dtype=np.float64)
    to_sys = pf.base_mva / mva
    machine_to_sys = pf.base_mva / np.asarray(data_bases, dtype=np.float64)
    params: dict[str, np.ndarray] = {}
    for key in module.PARAMS:
        values = np.array([m[key] for m in machines], dtype=np.float64)
        if key in MACHINE_IMPEDANCES:
            values = values * machine_to_sys
        elif key in ("H", "D"):
            values = values / machine_to_sys
        params[key] = values
    for key in EXCITERS[exciter].PARAMS:
        params[f"exc_{key}"] = np.array([e[key] for e in exciters], dtype=np.float64)
    for key in gov.PARAMS:
        values = np.array([g[key] for g in governors], dtype=np.float64)
        if key == "R":
            values = values * to_sys
        elif key == "Dt":
            values = values / to_sys
        params[f"gov_{key}"] = values
    return _Devices(names, mva, classes, params)


def _own_generator_data(
    data: Mapping | None, names: tuple[str, ...], exciter: str, validate=sm.validate_two_axis
) -> dict:
    """Validated per-generator data ``{"source", "generators": [{"name", "mva", "machine_base_mva",
    "machine", "exciter", "governor"}]}``, keyed by generator name; unknown names raise
    ``KeyError``. ``machine`` is on ``machine_base_mva`` (default: ``mva``); ``mva`` is the
    machine rating, the base of the governor data (default: the rule's rating); a missing
    ``exciter`` or ``governor`` takes the rule's typical one."""
    if data is None:
        return {}
    if not str(data.get("source", "")).strip():
        raise ValueError("generator data: field 'source' (the data's reference) is missing")
    out = {}
    for k, entry in enumerate(data.get("generators", [])):
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if name not in names:
            raise KeyError(f"generator data entry {k}: unknown generator {name!r}; valid: {names}")
        device = f"generator {name}"
        if name in out:
            raise ValueError(f"{device}: listed twice")
        bases = {}
        for field_name in ("mva", "machine_base_mva"):
            if field_name in entry:
                value = number(device, entry, field_name)
                if not value > 0:
                    raise ValueError(f"{device}: field {field_name!r} must be > 0, got {value!r}")
                bases[field_name] = value
        exc_data = entry.get("exciter")
        if exc_data is not None and (
            not isinstance(exc_data, Mapping) or exc_data.get("model") != exciter
        ):
            raise ValueError(f"{device}: field 'exciter' must have model {exciter!r}")
        gov_data = entry.get("governor")
        out[name] = {
            "mva": bases.get("mva"),
            "machine_base_mva": bases.get("machine_base_mva"),
            "machine": validate(f"{device}, machine", entry.get("machine", {})),
            "exciter": None
            if exc_data is None
            else td.EXCITER_VALIDATORS[exciter](f"{device}, exciter", exc_data),
            "governor": None
            if gov_data is None
            else gov.validate_tgov1(f"{device}, governor", gov_data),
        }
    return out


PUBLISHED_DATA = {
    "case14": DATA_DIR / "ieee14_dynamic.json",
    "case39": DATA_DIR / "ieee39_dynamic.json",
}
"""Cases with published dynamic data (``generator_data`` files); the others use the rule."""


def published_generator_data(case: str) -> dict | None:
    """The published ``generator_data`` document of a ``pandapower.networks`` case (JSON), or
    ``None`` where none is published (its machines then follow the rule by rating)."""
    path = PUBLISHED_DATA.get(case)
    if path is None:
        return None
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def _device_buses(pf: PowerFlowCase, config: CaseConfig) -> tuple[np.ndarray, np.ndarray]:
    """ppc positions of the motor and inverter buses (explicit bus numbers or the default rule)."""
    gen_set = set(int(i) for i in pf.gen_bus)
    candidates = [
        int(i)
        for i in np.argsort(-pf.load_p, kind="stable")
        if pf.load_p[i] > 0 and i not in gen_set
    ]
    number_to_pos = {int(b): i for i, b in enumerate(pf.bus_numbers)}

    def explicit(buses: tuple[int, ...], what: str) -> list[int]:
        out = []
        for b in buses:
            if b not in number_to_pos or pf.load_p[number_to_pos[b]] <= 0:
                valid = sorted(int(pf.bus_numbers[i]) for i in candidates)
                raise KeyError(f"{what} bus {b} carries no active load; valid: {valid}")
            out.append(number_to_pos[b])
        return out

    motors = (
        explicit(config.motor_buses, "motor")
        if config.motor_buses is not None
        else candidates[: config.n_motors]
    )
    rest = [i for i in candidates if i not in motors]
    inverters = (
        explicit(config.inverter_buses, "inverter")
        if config.inverter_buses is not None
        else rest[: config.n_inverters]
    )
    if len(set(motors)) != len(motors) or len(set(inverters)) != len(inverters):
        raise ValueError("at most one motor and one inverter per bus")
    return np.asarray(motors, dtype=np.int64), np.asarray(inverters, dtype=np.int64)


def _views(p: Mapping, prefix: str, keys: tuple[str, ...]) -> dict:
    return {k: p[f"{prefix}{k}"] for k in keys}


def _add_motors_and_inverters(
    pf: PowerFlowCase, config: CaseConfig, rule: Mapping, params: dict
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Place the motors and inverters, add their parameters (system base) and those of the static
    ZIP loads that remain to ``params``. Returns the motor and inverter bus positions, their
    initial states (rows per device) and the static-load bus positions."""
    base = pf.base_mva
    omega_s = 2.0 * np.pi * pf.f_hz
    mot_bus, inv_bus = _device_buses(pf, config)
    n_mot, n_inv = mot_bus.size, inv_bus.size
    load_p, load_q = pf.load_p.copy(), pf.load_q.copy()
    v = pf.voltage
    p_mot = config.motor_share * pf.load_p[mot_bus]
    mot_to_sys = base / (p_mot * base / rule["motor_pf"]) if n_mot else np.zeros(0)
    for key in mot.PARAMS:
        values = np.full(n_mot, rule["motor"][key])
        if key in MOTOR_IMPEDANCES:
            values = values * mot_to_sys
        elif key == "H":
            values = values / mot_to_sys
        params[f"mot_{key}"] = values
    mot_init = [
        mot.init_motor(v[b], p_mot[k], {q: params[f"mot_{q}"][k] for q in mot.PARAMS}, omega_s)
        for k, b in enumerate(mot_bus)
    ]
    params["mot_tm"] = np.array([m["tm"] for m in mot_init], dtype=np.float64)
    for k, b in enumerate(mot_bus):
        load_p[b] -= mot_init[k]["p"]
        load_q[b] -= mot_init[k]["q"]
    p_inv = config.inverter_share * pf.load_p[inv_bus]
    inv_to_sys = 1.0 / (rule["inverter_margin"] * p_inv) if n_inv else np.zeros(0)
    for key in inv.PARAMS:
        values = np.full(n_inv, rule["inverter"][key])
        if key in INVERTER_IMPEDANCES:
            values = values * inv_to_sys
        params[f"inv_{key}"] = values
    i0 = inv.init_inverter(v[inv_bus], p_inv + 0j, _views(params, "inv_", inv.PARAMS))
    params["inv_pref"], params["inv_qref"] = i0["pref"], i0["qref"]
    load_p[inv_bus] += p_inv
    load_bus = np.flatnonzero((load_p != 0.0) | (load_q != 0.0))
    params.update(
        zip_parameters(load_p[load_bus], load_q[load_bus], pf.vm[load_bus], *config.zip_fractions)
    )
    mot_x0 = np.array([[m[s] for s in mot.STATES] for m in mot_init]).reshape(n_mot, 3)
    inv_x0 = np.stack([i0[s] for s in inv.STATES], axis=1).reshape(n_inv, len(inv.STATES))
    return mot_bus, inv_bus, mot_x0, inv_x0, load_bus


def build_matpower_case(
    source: str | Path | NetworkSource,
    *,
    name: str | None = None,
    config: CaseConfig | None = None,
    typical_data: Mapping | None = None,
    generator_data: Mapping | None = None,
) -> DAESystem:
    """The DAE of a MATPOWER case at its power-flow equilibrium (see the module docstring).

    ``source``: a case name (``case14`` ...), a ``.m`` / ``.json`` path or a ``NetworkSource``.
    ``typical_data`` defaults to ``models/data/typical_dynamic_data.json``; ``generator_data``
    optionally gives some generators their own (published) data.
    """
    start = time.perf_counter()
    config = config or CaseConfig()
    src = source if isinstance(source, NetworkSource) else network_source(source)
    rule = td.validate_typical_data(
        td.load_typical_data() if typical_data is None else typical_data
    )
    if config.exciter not in rule["exciters"]:
        raise ValueError(f"typical data has no exciter {config.exciter!r}")
    exc = EXCITERS[config.exciter]
    pf = run_power_flow(src.net)
    rows = src.branch_rows(pf.bus_numbers, pf.branch_from, pf.branch_to)
    pairs = src.matpower_pairs or [
        (int(pf.bus_numbers[f]), int(pf.bus_numbers[t]))
        for f, t in zip(pf.branch_from, pf.branch_to, strict=True)
    ]
    n_bus = pf.n_bus
    omega_s = 2.0 * np.pi * pf.f_hz
    base = pf.base_mva
    topo = Topology(n_bus, pf.branch_from[rows], pf.branch_to[rows])
    gen_bus = np.asarray(pf.gen_bus)
    n_gen = gen_bus.size
    devices = _generator_params(pf, rule, config, generator_data)
    mach, _, init_machine = MACHINES[config.machine]
    n_ms = len(mach.STATES)
    params = devices.params
    params["gen_status"] = np.ones(n_gen)
    params.update(
        branch_parameters(
            pf.branch_r[rows],
            pf.branch_x[rows],
            pf.branch_b[rows],
            pf.branch_tap[rows],
            pf.branch_shift[rows],
            pf.branch_status[rows],
        )
    )
    if pf.branch_g is not None:
        params[BRANCH_G] = pf.branch_g[rows].astype(np.float64)

    # --- motors, inverters and the static loads that remain ------------------------------------
    mot_bus, inv_bus, mot_x0, inv_x0, load_bus = _add_motors_and_inverters(pf, config, rule, params)
    n_mot, n_inv, n_load = mot_bus.size, inv_bus.size, load_bus.size
    v = pf.voltage
    params.update(
        shunt_g=pf.shunt_g.astype(np.float64),
        shunt_b=pf.shunt_b.astype(np.float64),
        fault_g=np.zeros(n_bus),
        fault_b=np.zeros(n_bus),
    )

    # --- generator initialization twins (Sauer & Pai §7.6), exciters, governors ---------------
    v_gen = v[gen_bus]
    m0 = init_machine(v_gen, pf.gen_p + 1j * pf.gen_q, params)
    e_init = exc.init_dc1a if config.exciter == "ieee_dc1a" else exc.init_sexs
    e0 = e_init(m0["Efd"], np.abs(v_gen), _views(params, "exc_", exc.PARAMS))
    g0 = gov.init_tgov1(m0["tm"])
    params["vref"], params["pref"] = e0["vref"], g0["pref"]
    gen_states = mach.STATES + exc.STATES + gov.STATES
    ng = len(gen_states)
    x_gen = np.stack(
        [m0[s] for s in mach.STATES] + [e0[s] for s in exc.STATES] + [g0[s] for s in gov.STATES],
        axis=1,
    )
    x0 = np.concatenate([x_gen.ravel(), mot_x0.ravel(), inv_x0.ravel()])
    z_pf = np.concatenate([v.real, v.imag, m0["Id"], m0["Iq"]])
    a_mot = n_gen * ng
    a_inv = a_mot + 3 * n_mot
    n_is = len(inv.STATES)

    # --- model functions ------------------------------------------------------------------------
    def unpack(x, z):
        gs = x[:a_mot].reshape(n_gen, ng).T
        ms = x[a_mot:a_inv].reshape(n_mot, 3).T
        js = x[a_inv:].reshape(n_inv, n_is).T
        vr, vi = z[:n_bus], z[n_bus : 2 * n_bus]
        id_, iq = z[2 * n_bus : 2 * n_bus + n_gen], z[2 * n_bus + n_gen :]
        return gs, ms, js, vr, vi, id_, iq

    def machine_derivatives(ms_, id_, iq, efd, tm, p):
        if config.machine == "two_axis":
            return sm.two_axis_derivatives(*ms_, id_, iq, efd, tm, p, omega_s)
        return six.sixth_order_derivatives(*ms_, id_, iq, efd, tm, p, omega_s)

    def machine_stator(ms_, vd, vq, id_, iq, p):
        if config.machine == "two_axis":
            return sm.two_axis_stator(ms_[2], ms_[3], vd, vq, id_, iq, p)
        return six.sixth_order_stator(ms_[4], ms_[5], vd, vq, id_, iq, p)

    def exciter_derivatives(es, vt, p):
        view = _views(p, "exc_", exc.PARAMS)
        if config.exciter == "ieee_dc1a":
            return dc1a.dc1a_derivatives(*es, vt, p["vref"], view)
        return sexs.sexs_derivatives(*es, vt, p["vref"], view)

    def f(x, z, p):
        gs, ms, js, vr, vi, id_, iq = unpack(x, z)
        ms_ = gs[:n_ms]
        omega = ms_[1]
        es = gs[n_ms : n_ms + len(exc.STATES)]
        pv, pt = gs[n_ms + len(exc.STATES) :]
        gview = _views(p, "gov_", gov.PARAMS)
        tm = gov.tgov1_output(pv, pt, omega, gview)
        vt = jnp.sqrt(vr[gen_bus] ** 2 + vi[gen_bus] ** 2)
        dm = machine_derivatives(ms_, id_, iq, es[0], tm, p)
        de = exciter_derivatives(es, vt, p)
        dg = gov.tgov1_derivatives(pv, pt, omega, p["pref"], gview)
        d_gen = jnp.stack(dm + tuple(de) + dg, axis=1).ravel()
        mview = _views(p, "mot_", mot.PARAMS)
        ir, ii = mot.motor_current(ms[1], ms[2], vr[mot_bus], vi[mot_bus], mview, omega_s)
        d_mot = jnp.stack(
            mot.motor_derivatives(*ms, ir, ii, p["mot_tm"], mview, omega_s), axis=1
        ).ravel()
        d_inv = jnp.stack(
            inv.inverter_derivatives(
                tuple(js),
                vr[inv_bus],
                vi[inv_bus],
                p["inv_pref"],
                p["inv_qref"],
                _views(p, "inv_", inv.PARAMS),
                omega_s,
            ),
            axis=1,
        ).ravel()
        return jnp.concatenate([d_gen, d_mot, d_inv])

    def kcl(x, z, p):
        gs, ms, js, vr, vi, id_, iq = unpack(x, z)
        v_c = vr + 1j * vi
        gr, gi = sm.to_network_frame(id_, iq, gs[0])
        mr, mi = mot.motor_current(
            ms[1], ms[2], vr[mot_bus], vi[mot_bus], _views(p, "mot_", mot.PARAMS), omega_s
        )
        jr, ji = inv.injected_current(js[6], js[7], js[0])
        i_load = zip_current(
            v_c[load_bus],
            p["load_g"],
            p["load_b"],
            p["load_ip"],
            p["load_iq"],
            p["load_pp"],
            p["load_pq"],
        )
        injection = (
            jnp.zeros(n_bus, dtype=jnp.complex128)
            .at[gen_bus]
            .add(p["gen_status"] * (gr + 1j * gi))
            .at[mot_bus]
            .add(-(mr + 1j * mi))
            .at[inv_bus]
            .add(jr + 1j * ji)
            .at[load_bus]
            .add(-i_load)
        )
        y_shunt = p["shunt_g"] + p["fault_g"] + 1j * (p["shunt_b"] + p["fault_b"])
        return current_mismatch(topo, v_c, injection, y_shunt, p)

    def g(x, z, p):
        gs, _, _, vr, vi, id_, iq = unpack(x, z)
        vd, vq = sm.to_machine_frame(vr[gen_bus], vi[gen_bus], gs[0])
        res_d, res_q = machine_stator(gs[:n_ms], vd, vq, id_, iq, p)
        on = p["gen_status"]
        mismatch = kcl(x, z, p)
        return jnp.concatenate(
            [mismatch.real, mismatch.imag, on * res_d + (1 - on) * id_, on * res_q + (1 - on) * iq]
        )

    def outputs(x, z, p):
        gs, ms, js, vr, vi, id_, iq = unpack(x, z)
        delta, omega = gs[0], gs[1]
        gr, gi = sm.to_network_frame(id_, iq, delta)
        pe = p["gen_status"] * (vr[gen_bus] * gr + vi[gen_bus] * gi)
        jr, ji = inv.injected_current(js[6], js[7], js[0])
        p_inv_out = vr[inv_bus] * jr + vi[inv_bus] * ji
        q_inv_out = vi[inv_bus] * jr - vr[inv_bus] * ji
        weight = p["gen_status"] * p["H"]
        coi = jnp.sum(weight * omega) / jnp.sum(weight)
        kcl_max = jnp.max(jnp.abs(kcl(x, z, p)))
        return jnp.concatenate(
            [
                jnp.sqrt(vr**2 + vi**2),
                jnp.arctan2(vi, vr),
                omega,
                delta,
                pe,
                p_inv_out,
                q_inv_out,
                ms[0],
                coi[None],
                kcl_max[None],
            ]
        )

    params = {k: np.asarray(val, dtype=np.float64) for k, val in params.items()}

    def avr_references(z):
        """AVR references from the polished terminal voltages (exciter states unchanged)."""
        vt = np.hypot(z[:n_bus], z[n_bus : 2 * n_bus])[gen_bus]
        return {"vref": e_init(m0["Efd"], vt, _views(params, "exc_", exc.PARAMS))["vref"]}

    z0, f_res, g_res = checked_equilibrium(f, g, x0, z_pf, params, setpoints=avr_references)

    # --- names ------------------------------------------------------------------------------------
    bus_names = tuple(f"bus{int(b)}" for b in pf.bus_numbers)
    gen_names = devices.gen_names
    mot_names = tuple(f"mot{int(pf.bus_numbers[b])}" for b in mot_bus)
    inv_names = tuple(f"inv{int(pf.bus_numbers[b])}" for b in inv_bus)
    branch_names = unique_names(f"br_{f_}_{t_}" for f_, t_ in pairs)
    state_names = (
        tuple(f"{s}[{gn}]" for gn in gen_names for s in gen_states)
        + tuple(f"{s}[{mn}]" for mn in mot_names for s in mot.STATES)
        + tuple(f"{s}[{jn}]" for jn in inv_names for s in inv.STATES)
    )
    alg_names = network_alg_names(bus_names, gen_names)
    output_names = (
        network_output_names(bus_names, gen_names)
        + tuple(f"P[{jn}]" for jn in inv_names)
        + tuple(f"Q[{jn}]" for jn in inv_names)
        + tuple(f"slip[{mn}]" for mn in mot_names)
        + ("omega_coi", "kcl_max")
    )
    perturbation = np.array([PERTURBATION.get(n.split("[")[0], 0.0) for n in state_names])
    controller = tuple(
        n
        for n in state_names
        if n.split("[")[0] in exc.STATES + gov.STATES
        or (n.split("[")[1].startswith("inv") and n.split("[")[0] not in ("i_d", "i_q"))
    )
    case_name = name or src.name
    return DAESystem(
        name=case_name,
        state_names=state_names,
        alg_names=alg_names,
        f=f,
        g=g,
        x0=x0,
        z0=z0,
        params=params,
        output_names=output_names,
        outputs=outputs,
        perturbation_scale=perturbation,
        names={
            "bus": bus_names,
            "branch": branch_names,
            "generator": gen_names,
            "load": tuple(bus_names[i] for i in load_bus),
            "motor": mot_names,
            "inverter": inv_names,
        },
        controller_states=controller,
        description=(
            f"{case_name}: {n_gen} {config.machine} machines with {config.exciter} exciters and "
            f"TGOV1 governors, {n_mot} induction motor(s) at {list(mot_names)}, {n_inv} "
            f"grid-following inverter(s) at {list(inv_names)}, ZIP loads {config.zip_fractions}"
        ),
        info={
            "n_bus": n_bus,
            "n_branch": topo.n_branch,
            "branch_from": tuple(int(i) for i in topo.from_bus),
            "branch_to": tuple(int(i) for i in topo.to_bus),
            "n_gen": n_gen,
            "n_load": int(n_load),
            "n_motor": int(n_mot),
            "n_inverter": int(n_inv),
            "f_hz": float(pf.f_hz),
            "s_base_mva": float(base),
            "exciter": config.exciter,
            "machine": config.machine,
            "generator_mva": {n: float(m) for n, m in zip(gen_names, devices.gen_mva, strict=True)},
            "generator_class": dict(zip(gen_names, devices.gen_class, strict=True)),
            "sources": (
                f"network and operating point: {src.name} via pandapower (MATPOWER branch order); "
                + (
                    f"published dynamic data: {generator_data['source']}; "
                    if generator_data is not None
                    else ""
                )
                + f"dynamic data by rule: {rule['source']}"
            ),
            "init_max_abs_f": f_res,
            "init_max_abs_g": g_res,
            "build_seconds": time.perf_counter() - start,
        },
    )
