"""Case sources and data: MATPOWER .m parsing (as data), pandapower JSON, the case57 transformer
repair, the typical-data rule and its validation, disturbances as data, the cascaded line."""

from __future__ import annotations

import copy

import numpy as np
import pandapower as pp
import pandapower.networks as pn
import pytest
from pydantic import TypeAdapter, ValidationError

from models.cases.cascaded_line import build_cascaded_line
from models.cases.matpower import CaseConfig, build_matpower_case
from models.cases.matpower_io import network_source, pandapower_case, parse_matpower
from models.cases.pandapower_grid import solved_pandapower_grid
from models.cases.typical_data import load_typical_data, validate_typical_data
from models.dae import apply_changes
from models.disturbances import (
    Disturbance,
    GeneratorTrip,
    LoadStep,
    PaperSequence,
    SetpointStep,
)
from models.kernels import as_device_params, kernels_for
from models.library import build_system
from models.scenarios import make_scenario, perturbed_initial_state, perturbed_initial_states
from solvers import RunStatus, solve

CASE5 = """function mpc = tiny5
%% a 5-bus test case: lines and transformers interleaved, the first tap at its LV end
mpc.version = '2';
mpc.baseMVA = 100;
mpc.bus = [
\t1\t3\t0\t0\t0\t0\t1\t1.04\t0\t230\t1\t1.1\t0.9;
\t2\t2\t20\t5\t0\t0\t1\t1.02\t0\t230\t1\t1.1\t0.9;
\t3\t1\t90\t30\t0\t0\t1\t1\t0\t115\t1\t1.1\t0.9;
\t4\t1\t60\t20\t0\t10\t1\t1\t0\t115\t1\t1.1\t0.9;
\t5\t1\t40\t10\t0\t0\t1\t1\t0\t230\t1\t1.1\t0.9;
];
mpc.gen = [
\t1\t100\t0\t200\t-200\t1.04\t100\t1\t300\t0;
\t2\t110\t0\t200\t-200\t1.02\t100\t1\t300\t0;
];
mpc.branch = [
\t1\t2\t0.01\t0.06\t0.05\t0\t0\t0\t0\t0\t1\t-360\t360;
\t3\t2\t0\t0.08\t0\t0\t0\t0\t0.98\t0\t1\t-360\t360;
\t1\t5\t0.02\t0.08\t0.04\t0\t0\t0\t0\t0\t1\t-360\t360;
\t5\t4\t0\t0.1\t0\t0\t0\t0\t1.02\t0\t1\t-360\t360;
\t3\t4\t0.03\t0.1\t0.01\t0\t0\t0\t0\t0\t1\t-360\t360;
\t2\t5\t0.02\t0.07\t0.03\t0\t0\t0\t0\t0\t1\t-360\t360;
];
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("cases") / "tiny5.m"
    path.write_text(CASE5)
    return path


def test_matpower_file_keeps_matpower_order(tiny):
    system = build_matpower_case(tiny)
    assert system.names["branch"] == ("br_1_2", "br_3_2", "br_1_5", "br_5_4", "br_3_4", "br_2_5")
    np.testing.assert_allclose(system.params["branch_x"][[0, 2, 4, 5]], [0.06, 0.08, 0.1, 0.07])
    assert system.info["init_max_abs_f"] <= 1e-8 and system.info["init_max_abs_g"] <= 1e-8
    assert system.names["motor"] == ("mot3",) and system.names["inverter"] == ("inv4",)
    # the power flow of MATPOWER's branch model (tap at the from end) is what the model holds
    v = system.z0[:5] + 1j * system.z0[5:10]
    s_bus = v * np.conj(_ybus_matpower(parse_matpower(CASE5)) @ v)
    np.testing.assert_allclose(s_bus[2:].real, [-0.9, -0.6, -0.4], atol=1e-8)


def _ybus_matpower(ppc):
    """Textbook MATPOWER Ybus (tap at the from end) for the check above."""
    n = len(ppc["bus"])
    y = np.zeros((n, n), dtype=complex)
    for f, t, r, x, b, *_, tap, _shift, _st, _a, _b in ppc["branch"]:
        f, t, tau = int(f) - 1, int(t) - 1, tap or 1.0
        ys = 1 / complex(r, x)
        y[f, f] += (ys + 0.5j * b) / tau**2
        y[t, t] += ys + 0.5j * b
        y[f, t] -= ys / tau
        y[t, f] -= ys / tau
    y[np.diag_indices(n)] += (ppc["bus"][:, 4] + 1j * ppc["bus"][:, 5]) / ppc["baseMVA"]
    return y


def test_matpower_parser_reads_data_only():
    bad = CASE5.replace("\t0.98\t", "\tsystem('rm -rf /')\t")
    with pytest.raises(ValueError, match="non-numeric"):
        parse_matpower(bad)
    with pytest.raises(ValueError, match="mpc.gen"):
        parse_matpower(CASE5.replace("mpc.gen", "mpc.generators"))
    with pytest.raises(KeyError, match="case14"):
        network_source("case15")


def test_pandapower_json_source(tmp_path):
    path = tmp_path / "net.json"
    pp.to_json(pn.case9(), str(path))
    system = build_matpower_case(path, config=CaseConfig(exciter="sexs"))
    assert system.info["n_bus"] == 9 and "xl[gen1]" in system.state_names
    assert system.info["init_max_abs_f"] <= 1e-8
    bad = tmp_path / "bad.json"
    bad.write_text(path.read_text().replace('"pandapower.auxiliary"', '"os"', 1))
    with pytest.raises(ValueError, match="refusing"):
        network_source(bad)


def test_case57_transformer_taps_repaired():
    """pandapower's stored case57 applies 15 MATPOWER taps at the wrong end; once repaired the
    power flow gives MATPOWER's solved voltages (case57.m: bus 30-32 at 0.962, 0.936, 0.949)."""
    src = pandapower_case("case57")
    assert len(src.repaired_trafos) == 15
    pf = solved_pandapower_grid(src.net, "case57")
    np.testing.assert_allclose(np.abs(pf.voltage[[29, 30, 31]]), [0.962, 0.936, 0.949], atol=1.5e-3)
    assert pandapower_case("case14").repaired_trafos == ()


def test_typical_data_validation():
    data = load_typical_data()
    rule = validate_typical_data(data)
    assert [c["class"] for c in rule["classes"]] == ["small", "medium", "large"]
    assert "Kundur" in rule["source"]
    for path, value, message in (
        (("machine_classes", 1, "machine", "H"), -4.0, "'medium'.*'H' must be > 0"),
        (("machine_classes", 0, "machine", "xd_p"), 3.0, "'small'.*'xd_p'"),
        (("governor", "R"), None, "governor: field 'R' is missing"),
        (("motor", "xm"), "big", "motor: field 'xm' must be a number"),
        (("inverter", "Lf"), float("inf"), "inverter: field 'Lf' must be finite"),
        (("exciters", "ieee_dc1a", "TA"), 0.0, "exciter ieee_dc1a: field 'TA' must be > 0"),
    ):
        bad = copy.deepcopy(data)
        node = bad
        for key in path[:-1]:
            node = node[key]
        if value is None:
            del node[path[-1]]
        else:
            node[path[-1]] = value
        with pytest.raises(ValueError, match=message):
            validate_typical_data(bad)


def test_published_generator_data_override(tiny):
    own = {
        "source": "test data",
        "generators": [
            {
                "name": "gen2",
                "mva": 250.0,
                "machine": {
                    "H": 6.0,
                    "D": 0.0,
                    "Rs": 0.0,
                    "xd": 1.0,
                    "xd_p": 0.2,
                    "xq": 0.9,
                    "xq_p": 0.3,
                    "Td0_p": 8.0,
                    "Tq0_p": 0.4,
                },
                "exciter": {
                    "model": "ieee_dc1a",
                    "KA": 50.0,
                    "TA": 0.05,
                    "KE": 1.0,
                    "TE": 0.5,
                    "KF": 0.05,
                    "TF": 1.0,
                    "SE_A": 0.0,
                    "SE_B": 0.0,
                },
                "governor": {"R": 0.04, "T1": 0.3, "T2": 0.0, "T3": 5.0, "Dt": 0.0},
            }
        ],
    }
    system = build_matpower_case(tiny, generator_data=own)
    assert system.info["generator_class"]["gen2"] == "published"
    assert system.params["H"][1] == pytest.approx(6.0 * 2.5)
    assert system.params["xd_p"][1] == pytest.approx(0.2 / 2.5)
    own["generators"][0]["machine"]["Td0_p"] = -1.0
    with pytest.raises(ValueError, match="generator gen2, machine: field 'Td0_p'"):
        build_matpower_case(tiny, generator_data=own)
    own["generators"][0]["name"] = "gen7"
    with pytest.raises(KeyError, match="gen7"):
        build_matpower_case(tiny, generator_data=own)


def test_published_data_bases_and_rule_fallbacks(tiny):
    """``machine_base_mva`` converts the machine block, ``mva`` (default: the rule's rating) the
    governor; a missing exciter or governor takes the rule's typical one."""
    typical = build_matpower_case(tiny)
    machine = {"H": 30.0, "D": 0.0, "Rs": 0.0, "xd": 0.3, "xd_p": 0.06, "xq": 0.28}
    machine.update(xq_p=0.1, Td0_p=6.0, Tq0_p=1.0)
    own = {"source": "test", "generators": [{"name": "gen2", "machine_base_mva": 100.0}]}
    own["generators"][0]["machine"] = machine
    system = build_matpower_case(tiny, generator_data=own)
    p, q = system.params, typical.params
    assert system.info["generator_mva"]["gen2"] == typical.info["generator_mva"]["gen2"]
    assert (p["H"][1], p["xd_p"][1]) == (30.0, 0.06)  # 100 MVA data: no conversion
    for key in ("gov_R", "gov_T3", "exc_KA", "exc_TE"):
        assert p[key][1] == pytest.approx(q[key][1]), key
    own["generators"][0].update(mva=400.0, machine_base_mva=200.0)
    system = build_matpower_case(tiny, generator_data=own)
    assert system.params["H"][1] == pytest.approx(60.0)
    assert system.params["gov_R"][1] == pytest.approx(0.05 / 4.0)
    own["generators"][0]["exciter"] = {"model": "sexs", "K": 50.0}
    with pytest.raises(ValueError, match="model 'ieee_dc1a'"):
        build_matpower_case(tiny, generator_data=own)


def test_published_data_of_the_library_cases():
    """ieee39: Athay / Pai machine data on 100 MVA (unit 1 = bus 39, H = 500 s), typical exciters
    and governors; ieee14: Kodsi & Canizares machines on their ratings with their AVRs."""
    from models.cases.matpower import published_generator_data

    assert published_generator_data("case57") is None
    s39 = build_system("ieee39")
    assert set(s39.info["generator_class"].values()) == {"published"}
    assert "Athay" in s39.info["sources"]
    k39, k30 = s39.names["generator"].index("gen39"), s39.names["generator"].index("gen30")
    p = s39.params
    assert (p["H"][k39], p["xd_p"][k39], p["Td0_p"][k39]) == (500.0, 0.006, 7.0)
    assert p["xq_p"][k30] == p["xq"][k30] == 0.069  # published T'q0 = 0: no q-axis circuit
    assert np.all(p["D"] == 0.0) and np.all(p["exc_KA"] == 20.0)
    assert p["gov_R"][k39] == pytest.approx(0.05 * 100.0 / s39.info["generator_mva"]["gen39"])
    s14 = build_system("ieee14")
    assert s14.info["generator_mva"] == {
        "gen1": 615.0, "gen2": 60.0, "gen3": 60.0, "gen6": 25.0, "gen8": 25.0,
    }  # fmt: skip
    q = s14.params
    assert q["H"][0] == pytest.approx(5.148 * 6.15) and q["xd"][0] == pytest.approx(0.8979 / 6.15)
    np.testing.assert_allclose(q["exc_KA"], [200.0, 20.0, 20.0, 20.0, 20.0])
    np.testing.assert_allclose(q["exc_TE"], [0.2, 1.98, 1.98, 0.7, 0.7])
    np.testing.assert_allclose(q["D"], 2.0 * np.array([6.15, 0.6, 0.6, 0.25, 0.25]))


def test_disturbances_as_data():
    system = build_system("ieee14")
    adapter = TypeAdapter(Disturbance)
    step = adapter.validate_python(
        {"kind": "setpoint_step", "setpoint": "avr_vref", "element": "gen2", "delta": 0.05}
    )
    (event,) = step.events(system)
    (change,) = event.changes
    assert change.name == "vref" and change.index == 1
    assert change.value == pytest.approx(system.params["vref"][1] + 0.05)
    motor = SetpointStep(setpoint="motor_torque", scale=1.1).events(system)[0].changes[0]
    assert motor.name == "mot_tm" and motor.value == pytest.approx(1.1 * system.params["mot_tm"][0])
    with pytest.raises(KeyError, match="valid set-points"):
        SetpointStep(setpoint="boiler_pressure", delta=1.0).events(system)
    with pytest.raises(KeyError, match="inv9"):
        SetpointStep(setpoint="inverter_pref", element="inv3", scale=0.5).events(system)
    with pytest.raises(ValidationError, match="exactly one"):
        SetpointStep(setpoint="avr_vref")
    trip = GeneratorTrip(generator="gen3", t=0.2).events(system)[0].changes[0]
    assert (trip.name, trip.index, trip.value) == ("gen_status", 2, 0.0)
    with pytest.raises(KeyError, match="gen1"):
        GeneratorTrip(generator="gen4").events(system)
    seq = adapter.validate_python({"kind": "paper_sequence", "t_avr": 0.7})
    assert isinstance(seq, PaperSequence)
    assert [e.changes[0].name for e in seq.events(system)] == ["mot_tm", "inv_pref", "vref"]
    assert [e.time for e in seq.events(system)] == [0.1, 0.3, 0.7] and seq.last_time() == 0.7
    alias = adapter.validate_python({"kind": "setpoint_sequence"})
    assert isinstance(alias, PaperSequence) and len(alias.events(system)) == 3
    load = LoadStep(bus=system.names["load"][0], scale=1.3).events(system)[0]
    assert {c.name for c in load.changes} == {"load_g", "load_b"}
    for ev in (event, trip, *seq.events(system)):
        changes = ev.changes if hasattr(ev, "changes") else (ev,)
        new = apply_changes(system.params, changes)
        assert all(new[k].shape == system.params[k].shape for k in new)


def test_perturbed_initial_states_are_consistent():
    system = build_system("ieee14")
    x, z = perturbed_initial_state(system, seed=3, spread=1.0)
    moved = np.flatnonzero(x != system.x0)
    assert {system.state_names[i].split("[")[0] for i in moved} == {"delta", "omega", "s"}
    kernels, _ = kernels_for(system)
    g = np.asarray(kernels.g(x, z, as_device_params(system.params)))
    assert np.max(np.abs(g)) < 1e-9


def test_initial_states_solved_together_equal_those_solved_alone():
    """``perturbed_initial_states`` (a batch's runs, their Newtons dispatched together) gives
    each state bit for bit as ``perturbed_initial_state`` gives it alone, so a run's result does
    not depend on its batch; spread 0 (no Newton) and a diverging Newton are left to the
    one-run path, which raises the latter's error."""
    system = build_system("ieee14")
    instances = [(seed, 0.5) for seed in range(12)] + [(7, 0.0), (1, float("inf"))]
    with np.errstate(invalid="ignore"):  # the infinite spread's 0 * inf
        states = perturbed_initial_states(system, [*instances, (3, 0.5)])  # (3, 0.5) again
    assert set(states) == set(instances[:12])
    p = as_device_params(system.params)
    kernels, _ = kernels_for(system)
    for seed, spread in instances[:12]:
        x, z = states[seed, spread]
        x_alone, z_alone = perturbed_initial_state(system, seed, spread)
        np.testing.assert_array_equal(x, x_alone)
        np.testing.assert_array_equal(z, z_alone)
        assert np.max(np.abs(np.asarray(kernels.g(x, z, p)))) <= 1e-9
    with (
        pytest.raises(ValueError, match="no consistent algebraic state"),
        np.errstate(invalid="ignore"),
    ):
        perturbed_initial_state(system, 1, float("inf"))


@pytest.fixture(scope="module")
def line():
    return build_system("cascaded_line")


def test_cascaded_line_modes_and_equilibrium(line):
    assert (line.n_x, line.n_z) == (40, 2) and line.info["sections"] == 10
    kernels, _ = kernels_for(line)
    p = as_device_params(line.params)
    assert np.max(np.abs(np.asarray(kernels.f(line.x0, line.z0, p)))) <= 1e-8
    eig = np.linalg.eigvals(np.asarray(kernels.ode_jacobian(line.x0, line.z0, p)))
    assert np.all(eig.real < 0)
    f_max = np.max(np.abs(eig.imag)) / (2 * np.pi)
    assert 6000.0 < f_max < 8000.0, f_max  # the paper's "modes up to about 7 kHz"
    v_end = np.hypot(*line.x0[-2:])
    assert 0.85 < v_end < 1.05
    assert build_cascaded_line(20).n_x == 80
    with pytest.raises(ValueError, match="sections"):
        build_cascaded_line(0)


def test_cascaded_line_load_step_radau_matches_kvaerno5(line):
    scenario = make_scenario(line, LoadStep(bus="n10", t=0.002, scale=1.5), t_end=0.01, n_eval=51)
    fast = solve(line, scenario, "radau", rtol=1e-6, atol=1e-9)
    ref = solve(line, scenario, "kvaerno5", rtol=1e-10, atol=1e-12)
    assert fast.status is RunStatus.SUCCEEDED and ref.status is RunStatus.SUCCEEDED
    v_fast, v_ref = fast.output("V[n10]"), ref.output("V[n10]")
    assert np.max(np.abs(v_fast - v_ref)) < 1e-4
    assert v_ref[-1] < v_ref[0] - 0.01  # more load, lower receiving-end voltage


def test_registry_and_config_names():
    from models.library import network_info, network_names

    assert {"ieee14", "ieee39", "ieee57", "ieee118", "cascaded_line"} <= set(network_names())
    info = network_info("cascaded_line")
    assert info["n_x"] == 40 and info["highest_lc_mode_hz"] > 6000
    with pytest.raises(KeyError, match="ieee_dc1a"):
        CaseConfig(exciter="st1a")
    with pytest.raises(KeyError, match="sixth_order"):
        CaseConfig(machine="genrou")


def test_generator_trip_on_wscc9():
    from models.kernels import consistent_z

    system = build_system("wscc9")
    (event,) = GeneratorTrip(generator="gen3", t=0.1).events(system)
    params = apply_changes(system.params, event.changes)
    z, _, residual = consistent_z(system, system.x0, params)
    assert residual < 1e-9
    assert z[18 + 2] == 0.0 and z[21 + 2] == 0.0  # Id, Iq of gen3
    np.testing.assert_allclose(
        system.evaluate_outputs(system.x0, z, params)[system.output_names.index("Pe[gen3]")], 0.0
    )
