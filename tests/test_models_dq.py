"""Block-interconnected dq networks: the interconnection machinery, each preset's equilibrium,
modes and fine-trapezoid agreement, the EMT inverter test and the disturbances as data."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from pydantic import TypeAdapter, ValidationError

from models.disturbances import Disturbance, DisturbanceSequence, InputStep, StateOffset
from models.dq import components as comp
from models.dq.blocks import Assembled, Block, Wiring, build_layout
from models.dq.equilibrium import solve_equilibrium
from models.dq.presets import GFL_EVENTS, build_smib, emt_gfl_events
from models.kernels import as_device_params
from models.library import build_system, network_info
from models.scenarios import make_scenario
from models.smallsignal import modes
from solvers import RunStatus, solve

SMALL = ("dq_smib", "emt_gfl", "dq_ninebus", "dq_microgrid")
SIZES = {  # (n_x, n_z): sums of the blocks' states, algebraics and interconnection unknowns
    "dq_smib": (18, 6),
    "emt_gfl": (24, 1),
    "dq_ninebus": (78, 6),
    "dq_microgrid": (79, 6),
    "dq_ieee39": (307, 60),
    "dq_ieee118": (1341, 327),
}


def _residuals(system):
    p = as_device_params(system.params)
    f = np.max(np.abs(np.asarray(jax.jit(system.f)(system.x0, system.z0, p))))
    g = np.max(np.abs(np.asarray(jax.jit(system.g)(system.x0, system.z0, p))))
    return f, g


# ----------------------------------------------------------------------------- machinery


def _load_pair():
    """Two feedthrough loads wired into each other's voltage port: an algebraic loop."""
    blocks = [Block(n, comp.LOAD, {"g": 1.0, "b": 0.0}) for n in ("a", "b")]
    wiring = Wiring()
    wiring.connect_pair("a", "v", "b", "i")
    wiring.connect_pair("b", "v", "a", "i")
    return blocks, wiring


def test_wiring_errors_name_the_port():
    blocks, wiring = _load_pair()
    wiring.connect("a", "v_X", "b", "i_D")
    with pytest.raises(ValueError, match="no input 'v_X'"):
        build_layout(blocks, wiring)
    blocks, wiring = _load_pair()
    wiring.connect("a", "v_D", "b", "omega")
    with pytest.raises(ValueError, match="no output 'omega'"):
        build_layout(blocks, wiring)
    with pytest.raises(ValueError, match="unwired input ports: \\['a.v_D'"):
        build_layout(blocks[:1], Wiring())
    with pytest.raises(ValueError, match="missing parameters \\['b'\\]"):
        Block("c", comp.LOAD, {"g": 1.0})
    with pytest.raises(ValueError, match="ports must be"):
        build_layout(*_load_pair(), ports="implicit")


def test_feedthrough_cycle_becomes_newton_unknowns():
    explicit = build_layout(*_load_pair(), ports="explicit")
    assert 0 < explicit.unknown_slots.size < explicit.n_slots  # the loop is broken at one slot
    unknowns = build_layout(*_load_pair(), ports="unknowns")
    assert unknowns.unknown_slots.size == unknowns.n_slots == 4
    # a node (no feedthrough) between the loads removes the loop: nothing left to iterate
    node = Block("n", comp.NODE, {"b": 0.1, "g_sh": 0.0, "fault_g": 0.0, "fault_b": 0.0})
    ib = Block("s", comp.INFINITE_BUS, {"r": 0.01, "x": 0.1, "angle": 0.0, "on": 1.0})
    load = Block("l", comp.LOAD, {"g": 1.0, "b": 0.0})
    wiring = Wiring()
    wiring.connect_pair("l", "v", "n", "v")
    wiring.connect_pair("s", "v", "n", "v")
    wiring.connect_pair("n", "i", "l", "i")
    wiring.connect_pair("n", "i", "s", "i")
    wiring.connect("n", "w", "s", "omega")
    wiring.exogenous("s", "E", "s.E", 1.0)
    lay = build_layout([node, ib, load], wiring)
    assert lay.passes == 2  # node voltage -> load current -> node input
    net = Assembled(lay)
    assert net.n_z == 1  # the contract's one algebraic variable, kept as a Newton unknown


def _solve_z(system, x, z):
    """Newton on 0 = g(x, z) (a small compile: the test needs no solver kernels)."""
    p = as_device_params(system.params)
    g = jax.jit(system.g)
    g_z = jax.jit(jax.jacfwd(system.g, argnums=1))
    for _ in range(20):
        z = z - np.linalg.solve(np.asarray(g_z(x, z, p)), np.asarray(g(x, z, p)))
    return z, float(np.max(np.abs(np.asarray(g(x, z, p)))))


def test_seed_formulation_matches_explicit_ports():
    """Every port a Newton unknown (seed 001's form) gives the same equilibrium, the same
    vector field away from it and the same modes."""
    explicit = build_system("dq_smib")
    seed_form = build_smib(ports="unknowns")
    assert seed_form.n_z == explicit.n_z + seed_form.info["interconnection_slots"]
    assert explicit.info["interconnection_unknowns"] == 0
    assert np.max(np.abs(seed_form.x0 - explicit.x0)) < 1e-10
    rng = np.random.default_rng(1)
    x = explicit.x0 + 0.01 * rng.standard_normal(explicit.n_x)
    derivatives = []
    for system in (explicit, seed_form):
        z, residual = _solve_z(system, x, system.z0)
        assert residual < 1e-12
        p = as_device_params(system.params)
        derivatives.append(np.asarray(jax.jit(system.f)(x, z, p)))
    assert np.max(np.abs(derivatives[0] - derivatives[1])) < 1e-8 * np.max(np.abs(derivatives[0]))
    eig = [np.sort_complex(modes(s).eigenvalues) for s in (explicit, seed_form)]
    assert np.max(np.abs(eig[0] - eig[1])) < 1e-6 * np.max(np.abs(eig[0]))


def test_equilibrium_fallback_from_an_offset_guess():
    """From a guess 0.23 pu off in the reactive-current direction (seed 001's SMIB offset),
    Newton and the Levenberg-Marquardt fallback both reach the same equilibrium."""
    system = build_system("dq_smib")
    names = system.state_names
    guess = system.x0.copy()
    guess[names.index("grid.i_Q")] += 0.23
    guess[names.index("b2.v_D")] += 0.23
    for force in (False, True):
        eq = solve_equilibrium(
            system.f, system.g, guess, system.z0, system.params, force_fallback=force
        )
        assert np.max(np.abs(eq.x - system.x0)) < 1e-9
        assert eq.report["method"] == ("lm" if force else "newton")
        assert eq.max_f <= 1e-8 and eq.max_g <= 1e-8


# ------------------------------------------------------------------------------- presets


@pytest.mark.parametrize(
    "name", [*SMALL, "dq_ieee39", pytest.param("dq_ieee118", marks=pytest.mark.slow)]
)
def test_equilibrium_and_modes(name):
    system = build_system(name)
    assert (system.n_x, system.n_z) == SIZES[name]
    f, g = _residuals(system)
    assert f <= 1e-8 and g <= 1e-8
    info = network_info(name)
    assert info["equilibrium"]["final_residual"] <= 1e-10
    assert info["pf_max_voltage_deviation"] < 0.05
    m = modes(system)
    print(f"{name}: n_x {system.n_x}, n_z {system.n_z}, {m.summary()}")
    assert m.max_real < 0  # every mode in the left half-plane
    assert 1e4 < m.fastest < 1e6  # electromagnetic network and inverter-filter modes
    y = dict(zip(system.output_names, system.evaluate_outputs(system.x0, system.z0), strict=True))
    assert y["kcl_max"] < 1e-8
    # at nominal frequency up to the droop response to what the power flow did not see (the
    # floor capacitances' and snubbers' small loads): every unit at one common frequency
    omegas = np.array([y[k] for k in y if k.startswith("omega[")])
    assert np.ptp(omegas) < 1e-10 and abs(omegas[0] - 1.0) < 1e-4


def _fine_trapezoid_agrees(system, disturbance, t_end):
    """Both within 1e-3 of the response's size. The trapezoid's error on a mode lambda is a
    phase error of (h |lambda|)^3 / 12 per step, which adds up on a lightly damped
    13,000 rad/s ring (the SMIB source inductance): 6e-5 of the response over the 1,000 steps
    of 1 ms; elsewhere the two agree to 1e-6-6e-5 of the response."""
    scenario = make_scenario(system, disturbance, t_end=t_end, n_eval=41)
    radau = solve(system, scenario, "radau", rtol=1e-10, atol=1e-12)
    trap = solve(system, scenario, "trapezoid", dt=1e-6)
    assert radau.status is RunStatus.SUCCEEDED and trap.status is RunStatus.SUCCEEDED
    y_diff = np.max(np.abs(radau.y_eval[:, :-1] - trap.y_eval[:, :-1]))
    moved = np.max(np.abs(radau.y_eval[-1, :-1] - radau.y_eval[0, :-1]))
    print(
        f"{system.name}: Radau 1e-10 ({radau.stats.accepted} steps) vs trapezoid dt=1e-6 "
        f"({trap.stats.accepted} steps): max output difference {y_diff:.2e}, response {moved:.2e}"
    )
    assert moved > 1e-3  # the disturbance did something
    assert y_diff <= 1e-3 * moved


@pytest.mark.parametrize(
    ("name", "disturbance"),
    [
        ("dq_smib", {"kind": "input_step", "input": "grid.E", "t": 2e-4, "scale": 0.95}),
        ("emt_gfl", {"kind": "input_step", "input": "inv.P_ref", "t": 2e-4, "scale": 0.5}),
        ("dq_ninebus", {"kind": "load_step", "bus": "bus5", "t": 2e-4, "scale": 1.2}),
        ("dq_microgrid", {"kind": "load_step", "bus": "b5", "t": 2e-4, "scale": 1.2}),
        ("dq_ieee39", {"kind": "load_step", "bus": "bus16", "t": 2e-4, "scale": 1.2}),
    ],
)
def test_fine_trapezoid_matches_tight_radau(name, disturbance):
    """Trapezoid at dt = 1e-6 s against Radau rtol 1e-10 over the first millisecond of a
    step's electromagnetic response (the fastest modes; the slow ones agree more easily).
    dq_ieee118 (a dense 1,668-unknown Newton per trapezoid step, 0.2 s each here) is checked by
    ``benchmarks/dq_networks.py --fine``, not in the suite."""
    system = build_system(name)
    t_end = 1e-3
    _fine_trapezoid_agrees(system, TypeAdapter(Disturbance).validate_python(disturbance), t_end)


# ------------------------------------------------------------------------- EMT inverter


def test_emt_gfl_two_disturbances_over_two_seconds():
    system = build_system("emt_gfl")
    assert "inv.xi_p" in system.controller_states and "inv.ig_d" not in system.controller_states
    events = emt_gfl_events()
    assert len(events) == 10
    name = "pref050_dip095"
    assert name in events and GFL_EVENTS[0] == (0.5, 0.95)
    scenario = make_scenario(system, events[name], t_end=2.0, n_eval=201)
    assert [e.time for e in scenario.events] == [0.5, 1.2]
    radau = solve(system, scenario, "radau", rtol=1e-4, atol=1e-6)
    assert radau.status is RunStatus.SUCCEEDED, radau.message
    print(f"emt_gfl 2 s, Radau rtol 1e-4: {radau.stats.accepted} steps")
    pe = radau.output("Pe[inv]")  # at the PCC, after the filter's losses
    p0 = system.info["exogenous_inputs"]["inv.P_ref"]  # at the filter capacitor
    assert pe[40] == pytest.approx(0.8, abs=1e-6)  # t = 0.4 s: the dispatched 0.8 pu
    assert pe[40] - pe[110] == pytest.approx(0.5 * p0, abs=5e-3)  # t = 1.1 s: half P_ref
    assert pe[-1] == pytest.approx(pe[110], abs=5e-3)  # the P loop rides through the dip
    v = radau.output("V[pcc]")
    assert v[-1] < v[110] - 0.02  # the grid-voltage dip reaches the PCC


@pytest.mark.slow
def test_emt_gfl_delayed_control_trapezoid():
    """The controller states are declared, so the delayed-control trapezoid runs; its one-step
    lag costs accuracy against the simultaneous trapezoid at the same step."""
    system = build_system("emt_gfl")
    step = InputStep(input="inv.P_ref", t=0.01, scale=0.5)
    scenario = make_scenario(system, step, t_end=0.1, n_eval=101)
    ref = solve(system, scenario, "radau", rtol=1e-9, atol=1e-11)
    err = {}
    for method in ("trapezoid", "trapezoid-delayed"):
        result = solve(system, scenario, method, dt=2e-4)
        assert result.status is RunStatus.SUCCEEDED, result.message
        err[method] = np.max(np.abs(result.y_eval[:, :-1] - ref.y_eval[:, :-1]))
    print(f"emt_gfl output error vs Radau 1e-9 at dt = 2e-4: {err}")
    assert err["trapezoid"] < err["trapezoid-delayed"]


# --------------------------------------------------------------------- disturbances as data


def test_input_steps_offsets_and_sequences():
    system = build_system("dq_microgrid")
    adapter = TypeAdapter(Disturbance)
    with pytest.raises(ValidationError, match="exactly one of 'value', 'delta' and 'scale'"):
        adapter.validate_python(
            {"kind": "input_step", "input": "GFM2.P_set", "delta": 1, "scale": 2}
        )
    with pytest.raises(KeyError, match="GFM2.P_set"):
        InputStep(input="GFM2.Pset", delta=0.1).events(system)
    (event,) = InputStep(input="GFM2.P_set", t=0.2, delta=0.1).events(system)
    index = system.names["input"].index("GFM2.P_set")
    assert event.changes[0].value == pytest.approx(system.params["u_exo"][index] + 0.1)

    offset = StateOffset(state="GFM3.delta", delta=0.05)
    scenario = make_scenario(system, offset, t_end=0.1)
    k = system.state_names.index("GFM3.delta")
    assert scenario.x0[k] == pytest.approx(system.x0[k] + 0.05)
    assert np.max(np.abs(np.delete(scenario.x0 - system.x0, k))) == 0.0
    with pytest.raises(KeyError, match="GFM3"):
        StateOffset(state="GFM3.angle", delta=0.1).events(system)

    sequence = adapter.validate_python(
        {
            "kind": "sequence",
            "steps": [
                {"kind": "load_step", "bus": "b6", "t": 0.3, "scale": 1.1},
                {"kind": "input_step", "input": "G1.V_ref", "t": 0.1, "delta": 0.01},
                {"kind": "state_offset", "state": "G1.omega", "delta": 0.001},
            ],
        }
    )
    assert isinstance(sequence, DisturbanceSequence)
    assert [e.time for e in sequence.events(system)] == [0.1, 0.3]
    assert sequence.last_time() == 0.3
    scenario = make_scenario(system, sequence, t_end=0.5, n_eval=51)
    result = solve(system, scenario, "radau")
    assert result.status is RunStatus.SUCCEEDED
    omega = result.output("omega[GFM2]")
    assert omega[-1] < 1.0 - 1e-4  # more load: the droop units settle below nominal frequency


def test_source_switch_opens_the_grid_source():
    system = build_system("emt_gfl")
    switch = TypeAdapter(Disturbance).validate_python(
        {"kind": "source_switch", "source": "grid", "t": 0.05, "load": "pcc", "load_scale": 2.0}
    )
    (event,) = switch.events(system)
    assert {c.name for c in event.changes} == {"source_on", "load_g"}
    scenario = make_scenario(system, switch, t_end=0.06, n_eval=61)
    result = solve(system, scenario, "radau")
    assert result.status is RunStatus.SUCCEEDED, result.message
    p_grid = result.output("Pe[grid]")
    assert p_grid[49] < -0.1  # the grid absorbs the inverter's surplus before the switch
    assert np.all(p_grid[51:] == 0.0)  # and delivers nothing once open


def test_example_campaign_expands_and_names_bad_steps():
    """The EMT inverter example campaign (ten two-step events) expands; a bad input name inside
    a sequence is reported at its step."""
    import json
    from pathlib import Path

    from raptorgrid.settings import Settings
    from raptorgrid.spec import CampaignCreate, SpecError, expand

    path = Path(__file__).resolve().parents[1] / "examples" / "emt_gfl_campaign.json"
    data = json.loads(path.read_text())
    expansion = expand(CampaignCreate.model_validate(data), settings=Settings())
    assert len(expansion.scenarios) == 10
    assert len(expansion.runs) == 10 * (4 + 1)  # two Radau tolerances, two trapezoids, reference
    assert expansion.scenarios[0].label.startswith("input_step:inv.P_ref+input_step:grid.E")
    data["disturbances"][3]["steps"][1]["input"] = "grid.V"
    with pytest.raises(SpecError) as info:
        expand(CampaignCreate.model_validate(data), settings=Settings())
    (loc, message), *_ = info.value.errors
    assert loc == ("disturbances", 3, "steps", 1, "input") and "grid.E" in message
