"""IEEE 14/39/57/118 DAEs from the generic MATPOWER builder: equilibrium, MATPOWER branch order,
small-signal stability, flat runs, droop response, cleared faults and the paper's sequence.

Every case is built and compiled once per test session (``models.library.build_system`` caches
the system and ``models.kernels`` its compiled kernels).
"""

from __future__ import annotations

import time

import jax.numpy as jnp
import numpy as np
import pytest

from models.cases.matpower_io import pandapower_case, stored_branch_order
from models.disturbances import BusFault, GeneratorTrip, LoadStep, NoDisturbance, PaperSequence
from models.kernels import as_device_params, kernels_for
from models.library import NETWORKS, build_system
from models.network import Topology, branch_currents
from models.scenarios import make_scenario
from solvers import RunStatus, solve
from tests.pandapower_reference import pandapower_solution

CASES = {"ieee14": "case14", "ieee39": "case39", "ieee57": "case57", "ieee118": "case118"}
SIZES = {  # n_bus, n_gen, n_branch
    "ieee14": (14, 5, 20),
    "ieee39": (39, 10, 46),
    "ieee57": (57, 7, 80),
    "ieee118": (118, 54, 186),
}
REPORT: dict[str, dict] = {}


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    name = request.param
    start = time.perf_counter()
    system = build_system(name)
    built = time.perf_counter() - start
    kernels, compile_s = kernels_for(system)
    REPORT.setdefault(name, {}).update(build_s=round(built, 2), compile_s=round(compile_s, 2))
    return name, system, kernels


def _fg(kernels, x, z, params):
    p = as_device_params(params)
    f = np.asarray(kernels.f(jnp.asarray(x), jnp.asarray(z), p))
    g = np.asarray(kernels.g(jnp.asarray(x), jnp.asarray(z), p))
    return np.max(np.abs(f)), np.max(np.abs(g))


def test_registered():
    for name in CASES:
        assert name in NETWORKS


def test_sizes_names_and_matpower_branch_order(case):
    name, system, _ = case
    n_bus, n_gen, n_branch = SIZES[name]
    info = system.info
    assert (info["n_bus"], info["n_gen"], info["n_branch"]) == (n_bus, n_gen, n_branch)
    assert info["n_motor"] == 1 and info["n_inverter"] == 1
    assert system.n_x == 9 * n_gen + 3 + 10 and system.n_z == 2 * n_bus + 2 * n_gen
    assert system.names["bus"] == tuple(f"bus{k}" for k in range(1, n_bus + 1))
    order = stored_branch_order(CASES[name])
    assert [b.split("_")[1:3] for b in system.names["branch"]] == [
        [str(f), str(t)] for f, t in order
    ]
    assert len(set(system.names["branch"])) == n_branch
    assert system.output_names[-2:] == ("omega_coi", "kcl_max")
    for key, value in system.params.items():
        assert isinstance(value, np.ndarray) and value.dtype == np.float64, key
    scale = dict(zip(system.state_names, system.perturbation_scale, strict=True))
    assert scale[f"delta[{system.names['generator'][0]}]"] == 0.05
    assert scale[f"Efd[{system.names['generator'][0]}]"] == 0.0


def test_interleaved_order_examples():
    names14 = build_system("ieee14").names["branch"]
    assert names14[:9] == (
        "br_1_2", "br_1_5", "br_2_3", "br_2_4", "br_2_5", "br_3_4", "br_4_5", "br_4_7", "br_4_9",
    )  # fmt: skip
    assert build_system("ieee39").names["branch"][20] == "br_12_11"  # transformer, MATPOWER row 21
    b57 = build_system("ieee57").names["branch"]
    assert b57[18:20] == ("br_4_18", "br_4_18_2")  # parallel transformers
    tap = build_system("ieee14").params["branch_tap"]
    np.testing.assert_allclose(tap[7:10], [0.978, 0.969, 0.932])  # MATPOWER rows 8-10


def test_equilibrium(case):
    name, system, kernels = case
    f_max, g_max = _fg(kernels, system.x0, system.z0, system.params)
    REPORT[name].update(max_f=f_max, max_g=g_max)
    assert f_max <= 1e-8 and g_max <= 1e-8, (f_max, g_max)
    out = dict(zip(system.output_names, system.evaluate_outputs(system.x0, system.z0), strict=True))
    assert out["kcl_max"] <= 1e-8 and out["omega_coi"] == pytest.approx(1.0, abs=1e-14)


def test_power_flow_and_branch_flows_reproduced(case):
    """Bus voltages equal pandapower's; the per-branch pi models, in MATPOWER order, give
    pandapower's branch flows of the matching lines and transformers."""
    name, system, _ = case
    source = pandapower_case(CASES[name])
    pf = pandapower_solution(source.net)
    n = pf.voltage.size
    v = system.z0[:n] + 1j * system.z0[n : 2 * n]
    np.testing.assert_allclose(v, pf.voltage, atol=1e-8, rtol=0)
    numbers = np.array([int(b[3:]) for b in system.names["bus"]])
    rows = source.branch_rows(numbers, pf.branch_from, pf.branch_to)
    assert sorted(rows.tolist()) == list(range(len(rows)))  # a permutation
    topo = Topology(n, np.array(system.info["branch_from"]), np.array(system.info["branch_to"]))
    np.testing.assert_array_equal(topo.from_bus, pf.branch_from[rows])
    i_f, i_t = branch_currents(topo, jnp.asarray(v), as_device_params(system.params))
    s_f = np.asarray(v[topo.from_bus] * np.conj(np.asarray(i_f)))
    s_t = np.asarray(v[topo.to_bus] * np.conj(np.asarray(i_t)))
    np.testing.assert_allclose(s_f, pf.branch_s_from[rows], atol=1e-8, rtol=0)
    np.testing.assert_allclose(s_t, pf.branch_s_to[rows], atol=1e-8, rtol=0)


def test_small_signal_stability(case):
    """Eigenvalues of the reduced Jacobian: all in the left half-plane except one zero mode (the
    common rotation of every angle, machine and PLL, with constant-impedance loads)."""
    name, system, kernels = case
    jac = np.asarray(kernels.ode_jacobian(system.x0, system.z0, as_device_params(system.params)))
    eig = np.linalg.eigvals(jac)
    zero = np.abs(eig) < 1e-6
    assert zero.sum() == 1, np.sort_complex(eig)[-5:]
    assert np.all(eig[~zero].real < -1e-3), np.sort_complex(eig)[-5:]
    fastest = eig[np.argmax(np.abs(eig))]
    nonzero = np.abs(eig[~zero])
    REPORT[name].update(
        fastest=complex(np.round(fastest, 1)), stiffness=float(nonzero.max() / nonzero.min())
    )
    assert 500.0 < abs(fastest) < 5000.0  # the inverter current loop


def test_flat_run_stays_at_equilibrium(case):
    name, system, _ = case
    result = solve(system, make_scenario(system, NoDisturbance(), t_end=1.0), "radau", rtol=1e-6)
    assert result.status is RunStatus.SUCCEEDED, result.message
    assert np.max(np.abs(result.x_eval - system.x0)) < 1e-6
    assert np.max(result.output("kcl_max")) < 1e-8


def _largest_load(system) -> str:
    return system.names["load"][int(np.argmax(system.params["load_g"]))]


DYNAMIC = ["ieee14", "ieee39", "ieee57"]
"""Cases of the paper-sequence test (ieee118 runs the fault test only: its 1 s Radau runs take
3-5 s on an idle two-core machine, several times that under load)."""


@pytest.mark.parametrize("name", [*DYNAMIC, "ieee118"])
def test_cleared_fault_is_stable(name):
    """A 100 ms fault (x = 0.01 pu) at the largest load bus: the run succeeds, speeds swing and
    stay near synchronism, voltages recover; the 1 s Radau runtime is recorded."""
    system = build_system(name)
    fault = BusFault(bus=_largest_load(system), t_fault=0.1, t_clear=0.2, x=0.01)
    scenario = make_scenario(system, fault, t_end=1.0)
    start = time.perf_counter()
    result = solve(system, scenario, "radau", rtol=1e-5, atol=1e-7)
    REPORT.setdefault(name, {}).update(radau_fault_1s=round(time.perf_counter() - start, 2))
    assert result.status is RunStatus.SUCCEEDED, result.message
    omega = result.y_eval[
        :, [system.output_names.index(f"omega[{g}]") for g in system.names["generator"]]
    ]
    assert np.max(np.abs(omega - 1.0)) < 0.02
    assert np.max(result.output("kcl_max")) < 1e-6
    n_bus = system.info["n_bus"]
    assert np.max(np.abs(result.y_eval[-1, :n_bus] - result.y_eval[0, :n_bus])) < 0.05


@pytest.mark.parametrize("name", DYNAMIC)
def test_paper_sequence(name):
    """Motor torque x1.2 at 0.1 s, inverter P reference x0.5 at 0.3 s, AVR reference +0.02 pu at
    0.5 s: the inverter follows its new reference, the motor slows down."""
    system = build_system(name)
    scenario = make_scenario(system, PaperSequence(), t_end=1.0)
    result = solve(system, scenario, "radau", rtol=1e-5, atol=1e-7)
    assert result.status is RunStatus.SUCCEEDED, result.message
    assert [e["label"].split("[")[0] for e in result.events] == [
        "motor_torque",
        "inverter_pref",
        "avr_vref",
    ]
    inv = system.names["inverter"][0]
    p_inv = result.output(f"P[{inv}]")
    assert p_inv[-1] == pytest.approx(0.5 * system.params["inv_pref"][0], rel=0.02)
    mot = system.names["motor"][0]
    assert (
        result.output(f"slip[{mot}]")[-1] > 1.05 * system.x0[system.state_names.index(f"s[{mot}]")]
    )


def test_load_increase_settles_per_governor_droop():
    """ieee14, load at the largest load bus x1.2 at 0.1 s: the centre-of-inertia frequency falls
    and settles where the governors' droop and the machines' damping balance the change of
    electrical torque: d omega = -d(sum Te) / sum(1/R + D) (system base, Dt = 0)."""
    system = build_system("ieee14")
    scenario = make_scenario(
        system, LoadStep(bus=_largest_load(system), t=0.1, scale=1.2), t_end=60.0, n_eval=121
    )
    result = solve(system, scenario, "radau", rtol=1e-6, atol=1e-8)
    assert result.status is RunStatus.SUCCEEDED, result.message
    coi = result.output("omega_coi")
    assert coi.min() < 1.0 - 1e-4 and coi[-1] < 1.0
    n_gen = system.info["n_gen"]
    n_bus = system.info["n_bus"]
    p = system.params

    def total_te(x, z):
        states = x[: 9 * n_gen].reshape(n_gen, 9)
        id_, iq = z[2 * n_bus : 2 * n_bus + n_gen], z[2 * n_bus + n_gen :]
        eq_p, ed_p = states[:, 2], states[:, 3]
        return np.sum(ed_p * id_ + eq_p * iq + (p["xq_p"] - p["xd_p"]) * id_ * iq)

    d_te = total_te(result.x_eval[-1], result.z_eval[-1]) - total_te(system.x0, system.z0)
    expected = -d_te / np.sum(1.0 / p["gov_R"] + p["D"])
    d_omega = coi[-1] - 1.0
    assert d_te > 0
    assert d_omega == pytest.approx(expected, rel=0.05), (d_omega, expected)
    assert abs(coi[-1] - coi[-5]) < 0.05 * abs(d_omega)  # settled


def test_generator_trip_lowers_frequency():
    system = build_system("ieee39")
    gen = system.names["generator"][2]
    scenario = make_scenario(system, GeneratorTrip(generator=gen, t=0.1), t_end=1.0)
    result = solve(system, scenario, "radau", rtol=1e-5, atol=1e-7)
    assert result.status is RunStatus.SUCCEEDED, result.message
    assert result.output("omega_coi")[-1] < 1.0 - 1e-4
    assert abs(result.output(f"Pe[{gen}]")[-1]) < 1e-9
    k = system.names["generator"].index(gen)
    assert result.z_eval[-1, 2 * system.info["n_bus"] + k] == pytest.approx(0.0, abs=1e-12)


def test_zz_report(capsys):
    """Prints the per-case numbers collected above (run with -s to see them)."""
    with capsys.disabled():
        for name, row in REPORT.items():
            print(f"\n{name}: {row}")


def test_sixth_order_machines_variant():
    """ieee14 with sub-transient sixth-order machines: equilibrium, stable, the paper's sequence
    runs; the machine states follow the sixth-order model's names."""
    from models.cases.matpower import CaseConfig, build_matpower_case

    system = build_matpower_case("case14", config=CaseConfig(machine="sixth_order"))
    assert system.n_x == 11 * 5 + 3 + 10 and "Ed_pp[gen1]" in system.state_names
    assert system.info["init_max_abs_f"] <= 1e-8 and system.info["init_max_abs_g"] <= 1e-8
    kernels, _ = kernels_for(system)
    eig = np.linalg.eigvals(
        np.asarray(kernels.ode_jacobian(system.x0, system.z0, as_device_params(system.params)))
    )
    zero = np.abs(eig) < 1e-6
    assert zero.sum() == 1 and np.all(eig[~zero].real < -1e-3)
    result = solve(system, make_scenario(system, PaperSequence(), t_end=1.0), "radau", rtol=1e-5)
    assert result.status is RunStatus.SUCCEEDED, result.message
