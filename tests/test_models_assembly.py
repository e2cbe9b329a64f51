"""The generic assembler (``models.assembly``): every device of an assembled case sits at its
named states with its own equilibrium (the device model's initialization twin, evaluated here
from the power flow apart from the assembler), and layouts mixing models keep names, positions
and equations."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np
import pytest

from models.assembly import Device, GeneratorSlot, assemble
from models.cases.matpower import CaseConfig
from models.cases.matpower_io import network_source
from models.cases.pandapower_grid import solved_pandapower_grid
from models.cases.wscc9 import DESCRIPTION, wscc9_devices
from models.devices import (
    GFL_INVERTER,
    IEEE_DC1A,
    INDUCTION_MOTOR,
    SIXTH_ORDER,
    TGOV1_SMOOTH,
    TWO_AXIS,
)
from models.devices.base import to_machine_frame
from models.grid import per_bus
from models.kernels import as_device_params
from models.library import build_system


def _view(params, model, index=slice(None)):
    return {k: np.asarray(params[f"{model.param_prefix}{k}"])[index] for k in model.params}


def test_ieee14_devices_sit_at_their_named_states_in_equilibrium():
    system = build_system("ieee14")
    pf = solved_pandapower_grid(network_source("case14").net, "case14")
    p = system.params
    omega_s = 2 * np.pi * pf.f_hz
    x0 = dict(zip(system.state_names, system.x0, strict=True))
    z0 = dict(zip(system.alg_names, system.z0, strict=True))
    f_x0 = np.asarray(system.f(system.x0, system.z0, as_device_params(p)))
    f0 = dict(zip(system.state_names, f_x0, strict=True))
    gens = system.names["generator"]
    v = pf.voltage[pf.gen_bus]
    machine = TWO_AXIS.init(v, pf.gen_s, _view(p, TWO_AXIS))
    exciter = IEEE_DC1A.init(machine["efd"], np.abs(v), _view(p, IEEE_DC1A))
    governor = TGOV1_SMOOTH.init(machine["tm"], _view(p, TGOV1_SMOOTH))
    for model, init in ((TWO_AXIS, machine), (IEEE_DC1A, exciter), (TGOV1_SMOOTH, governor)):
        for state in model.states:
            named = np.array([x0[f"{state}[{g}]"] for g in gens])
            np.testing.assert_allclose(named, init[state], rtol=0, atol=1e-12, err_msg=state)
            assert max(abs(f0[f"{state}[{g}]"]) for g in gens) <= 1e-8, state
    np.testing.assert_allclose(p["pref"], governor["pref"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(p["vref"], exciter["vref"], rtol=0, atol=1e-9)
    # the machine's own stator and swing equations at the named states and currents
    xs = tuple(jnp.asarray([x0[f"{s}[{g}]"] for g in gens]) for s in TWO_AXIS.states)
    i_d, i_q = (np.array([z0[f"{a}[{g}]"] for g in gens]) for a in ("Id", "Iq"))
    buses = [system.names["bus"][b] for b in pf.gen_bus]
    vr, vi = (np.array([z0[f"{a}[{b}]"] for b in buses]) for a in ("Vr", "Vi"))
    vd, vq = to_machine_frame(vr, vi, xs[0])
    residual = TWO_AXIS.stator(xs, vd, vq, i_d, i_q, _view(p, TWO_AXIS))
    assert np.max(np.abs(np.asarray(residual))) <= 1e-10
    efd = np.array([x0[f"Efd[{g}]"] for g in gens])
    tm = TGOV1_SMOOTH.output(
        tuple(np.array([x0[f"{s}[{g}]"] for g in gens]) for s in TGOV1_SMOOTH.states),
        np.ones(len(gens)),
        _view(p, TGOV1_SMOOTH),
    )
    d = TWO_AXIS.derivatives(xs, i_d, i_q, efd, tm, _view(p, TWO_AXIS), omega_s)
    assert np.max(np.abs(np.asarray(d))) <= 1e-8
    # bus devices: the motor draws 30 % of its bus's load, the inverter injects 20 % of its own
    config = CaseConfig()
    for kind, model, share, sign in (
        ("motor", INDUCTION_MOTOR, config.motor_share, -1.0),
        ("inverter", GFL_INVERTER, config.inverter_share, 1.0),
    ):
        (name,) = system.names[kind]
        bus = int(np.flatnonzero(pf.bus_numbers == int(name[3:]))[0])
        load_p = per_bus(pf, pf.load_bus, pf.load_s).real
        requested = np.array([sign * share * load_p[bus] + 0j])
        init = model.init(pf.voltage[[bus]], requested, _view(p, model), omega_s)
        for state in model.states:
            assert x0[f"{state}[{name}]"] == pytest.approx(init[state][0], abs=1e-12), state
            assert abs(f0[f"{state}[{name}]"]) <= 1e-8, state
        assert init["power"][0].real == pytest.approx(requested[0].real, abs=1e-12)
        for key in set(init) - set(model.states) - {"power"}:
            assert p[f"{model.param_prefix}{key}"][0] == pytest.approx(init[key][0], abs=1e-12)
        assert [n for n in system.output_names if n.endswith(f"[{name}]")] == [
            f"{m}[{name}]" for m in model.measures
        ]
    assert system.controller_states == tuple(
        n
        for n in system.state_names
        if n.split("[")[0] in IEEE_DC1A.states + TGOV1_SMOOTH.states
        or (n.endswith("[inv9]") and n.split("[")[0] not in ("i_d", "i_q"))
    )


def test_mixed_slots_keep_generator_major_names_and_equations():
    """wscc9 with gen2 bare (field voltage and torque held) and gen3 with a TGOV1 governor: the
    states stay generator-major and every shared device evaluates as in the plain case."""
    grid, slots = wscc9_devices()
    governor = {"R": 0.05, "T1": 0.5, "T2": 1.0, "T3": 5.0, "Dt": 0.0}
    mixed = [
        slots[0],
        GeneratorSlot(slots[1].machine),
        dataclasses.replace(slots[2], governor=Device(TGOV1_SMOOTH, governor, "gen3, governor")),
    ]
    plain, system = assemble(grid, slots, DESCRIPTION), assemble(grid, mixed, DESCRIPTION)
    two_axis, dc1a = ("delta", "omega", "Eq_p", "Ed_p"), ("Efd", "RF", "VR")
    assert system.state_names == tuple(
        f"{s}[{g}]"
        for g, states in (
            ("gen1", two_axis + dc1a),
            ("gen2", two_axis),
            ("gen3", two_axis + dc1a + ("Pv", "Pt")),
        )
        for s in states
    )
    assert system.controller_states == tuple(
        n for n in system.state_names if n.split("[")[0] in dc1a + ("Pv", "Pt")
    )
    assert system.info["init_max_abs_f"] <= 1e-8 and system.info["init_max_abs_g"] <= 1e-8
    assert system.info["generator_models"] == {
        "gen1": "two_axis+ieee_dc1a",
        "gen2": "two_axis",
        "gen3": "two_axis+ieee_dc1a+tgov1",
    }
    assert "pref" in system.params and "pref" not in plain.params
    # the same point, by name, in both layouts: gen1's and gen3's machine and exciter equations
    # agree (gen2 has no exciter in the mixed case: its field voltage is held)
    rng = np.random.default_rng(3)
    x_plain = plain.x0 * (1 + 1e-2 * rng.standard_normal(plain.n_x))
    x_mixed = dict(zip(system.state_names, system.x0, strict=True))
    x_mixed.update(zip(plain.state_names, x_plain, strict=True))
    x_mixed = np.array([x_mixed[n] for n in system.state_names])
    z = plain.z0 * (1 + 1e-3 * rng.standard_normal(plain.n_z))
    f_plain = dict(
        zip(plain.state_names, np.asarray(plain.f(x_plain, z, plain.params)), strict=True)
    )
    f_mixed = dict(
        zip(system.state_names, np.asarray(system.f(x_mixed, z, system.params)), strict=True)
    )
    same = [n for n in plain.state_names if n.endswith(("[gen1]", "[gen3]"))]
    same = [n for n in same if not n.startswith("omega[gen3]")]  # gen3's torque now governed
    np.testing.assert_allclose([f_mixed[n] for n in same], [f_plain[n] for n in same], rtol=1e-13)
    g_plain = np.asarray(plain.g(x_plain, z, plain.params))
    g_mixed = np.asarray(system.g(x_mixed, z, system.params))
    np.testing.assert_allclose(g_mixed, g_plain, rtol=0, atol=1e-13)


def test_two_models_may_not_share_parameter_names():
    grid, slots = wscc9_devices()
    six = {**slots[1].machine.params, "xd_pp": 0.1, "xq_pp": 0.1, "Td0_pp": 0.03, "Tq0_pp": 0.05}
    mixed = [slots[0], GeneratorSlot(Device(SIXTH_ORDER, six, "gen2")), slots[2]]
    with pytest.raises(ValueError, match="parameter 'D' of two_axis is taken by another model"):
        assemble(grid, mixed, DESCRIPTION)


def test_bad_device_data_names_the_device():
    grid, slots = wscc9_devices()
    bad = Device(TWO_AXIS, {**slots[1].machine.params, "H": -1.0}, "gen2 machine data")
    with pytest.raises(ValueError, match="gen2 machine data: two_axis H = -1 must be > 0"):
        assemble(grid, [slots[0], GeneratorSlot(bad), slots[2]], DESCRIPTION)
