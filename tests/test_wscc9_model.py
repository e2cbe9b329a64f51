"""The WSCC 9-bus DAE: equilibrium, power-flow agreement, small-signal stability, disturbances."""

from __future__ import annotations

import copy

import jax.numpy as jnp
import numpy as np
import pandapower.networks as pn
import pytest
from scipy.integrate import solve_ivp

from models.cases.pandapower_grid import case9_grid, solved_pandapower_grid
from models.cases.wscc9 import build_wscc9, load_dynamic_data, validate_dynamic_data
from models.dae import apply_changes
from models.disturbances import BranchTrip, BusFault, LoadStep
from models.kernels import as_device_params, consistent_z, kernels_for
from models.network import Topology, branch_currents
from tests.pandapower_reference import pandapower_solution


@pytest.fixture(scope="module")
def pf():
    return case9_grid()


@pytest.fixture(scope="module")
def system(pf):
    return build_wscc9(power_flow=pf)


@pytest.fixture(scope="module")
def kernels(system):
    return kernels_for(system)[0]


def _max_fg(system, kernels, x, z, params):
    p = as_device_params(params)
    f = np.asarray(kernels.f(jnp.asarray(x), jnp.asarray(z), p))
    g = np.asarray(kernels.g(jnp.asarray(x), jnp.asarray(z), p))
    return np.max(np.abs(f)), np.max(np.abs(g))


def test_sizes_and_names(system):
    assert (system.n_x, system.n_z) == (21, 24)
    assert system.info["n_bus"] == 9 and system.info["n_branch"] == 9 and system.info["n_gen"] == 3
    assert system.names["bus"] == tuple(f"bus{k}" for k in range(1, 10))
    assert system.names["generator"] == ("gen1", "gen2", "gen3")
    assert system.names["load"] == ("bus5", "bus7", "bus9")
    assert system.names["branch"] == (
        "br_1_4",
        "br_4_5",
        "br_5_6",
        "br_3_6",
        "br_6_7",
        "br_7_8",
        "br_8_2",
        "br_8_9",
        "br_9_4",
    )
    assert system.state_names[:7] == tuple(
        f"{s}[gen1]" for s in ("delta", "omega", "Eq_p", "Ed_p", "Efd", "RF", "VR")
    )
    assert system.alg_names[0] == "Vr[bus1]" and system.alg_names[9] == "Vi[bus1]"
    assert system.alg_names[18:] == tuple(f"{v}[gen{k}]" for v in ("Id", "Iq") for k in (1, 2, 3))
    assert len(system.output_names) == 9 + 9 + 3 + 3 + 3 + 2
    assert system.output_names[-2:] == ("omega_coi", "kcl_max")
    for name, value in system.params.items():
        assert isinstance(value, np.ndarray) and value.dtype == np.float64, name
    scale = system.perturbation_scale.reshape(3, 7)
    assert np.all(scale[:, 0] == 0.05) and np.all(scale[:, 1] == 1e-3) and np.all(scale[:, 2:] == 0)


def test_equilibrium_residuals(system, kernels):
    f_max, g_max = _max_fg(system, kernels, system.x0, system.z0, system.params)
    assert f_max <= 1e-8 and g_max <= 1e-8, (f_max, g_max)
    assert system.evaluate_outputs(system.x0, system.z0)[-1] <= 1e-8  # kcl_max


def test_power_flow_reproduced(system, pf):
    out = dict(zip(system.output_names, system.evaluate_outputs(system.x0, system.z0), strict=True))
    vm = np.array([out[f"V[bus{k}]"] for k in range(1, 10)])
    va = np.array([out[f"theta[bus{k}]"] for k in range(1, 10)])
    np.testing.assert_allclose(vm, np.abs(pf.voltage), atol=1e-8, rtol=0)
    np.testing.assert_allclose(va, np.angle(pf.voltage), atol=1e-8, rtol=0)
    v = system.z0[:9] + 1j * system.z0[9:18]
    np.testing.assert_allclose(v, pf.voltage, atol=1e-8, rtol=0)
    pe = np.array([out[f"Pe[gen{k}]"] for k in (1, 2, 3)])
    np.testing.assert_allclose(pe, pf.gen_s.real, atol=1e-8, rtol=0)
    np.testing.assert_allclose(pf.gen_s.real[1:], [1.63, 0.85], atol=1e-10)  # case9 dispatch
    np.testing.assert_allclose(system.params["tm"], pf.gen_s.real, atol=1e-8)  # Rs = 0: TM = Pe
    assert np.all(np.array([out[f"omega[gen{k}]"] for k in (1, 2, 3)]) == 1.0)


def test_branch_flows_match_pandapower(system, pf):
    """The project's power flow gives pandapower's voltages, and the branch currents of the
    per-branch pi models its branch power flows."""
    ref = pandapower_solution(pn.case9())
    np.testing.assert_allclose(pf.voltage, ref.voltage, atol=1e-10, rtol=0)
    np.testing.assert_allclose(pf.gen_s.real, ref.gen_p, atol=1e-10, rtol=0)
    v = jnp.asarray(ref.voltage)
    topo = Topology(9, ref.branch_from, ref.branch_to)
    i_f, i_t = branch_currents(topo, v, as_device_params(system.params))
    s_f = np.asarray(v[topo.from_bus] * jnp.conj(i_f))
    s_t = np.asarray(v[topo.to_bus] * jnp.conj(i_t))
    np.testing.assert_allclose(s_f, ref.branch_s_from, atol=1e-8, rtol=0)
    np.testing.assert_allclose(s_t, ref.branch_s_to, atol=1e-8, rtol=0)
    tripped = apply_changes(system.params, BranchTrip(branch="br_4_5").events(system)[0].changes)
    i_f, i_t = branch_currents(topo, v, as_device_params(tripped))
    assert float(jnp.abs(i_f[1])) == 0.0 and float(jnp.abs(i_t[1])) == 0.0
    assert float(jnp.abs(i_f[2])) > 0.1


def test_small_signal_stability(system, kernels):
    jac = np.asarray(kernels.ode_jacobian(system.x0, system.z0, as_device_params(system.params)))
    eig = np.linalg.eigvals(jac)
    assert np.all(eig.real <= 1e-6), np.sort_complex(eig)
    # D = 0 and constant-impedance loads: the common angle and the common speed are neutral
    # (a double zero eigenvalue, split numerically into +-1e-7 j).
    near_zero = np.abs(eig) < 1e-5
    assert near_zero.sum() == 2, np.sort_complex(eig)
    # two lightly damped inter-machine electromechanical modes (about 1.3 and 2.0 Hz)
    electromech = eig[(np.abs(eig.imag) > 6.0) & (eig.real > -1.0)]
    freqs = np.sort(np.abs(electromech.imag)) / (2 * np.pi)
    assert len(freqs) == 4 and 1.0 < freqs[0] < 1.5 and 1.7 < freqs[-1] < 2.3, freqs


def test_disturbances_use_model_parameters(system):
    trip = BranchTrip(branch="br_5_6", t=0.1).events(system)
    assert trip[0].changes[0].name == "branch_status" and trip[0].changes[0].index == 2
    step = LoadStep(bus="bus9", scale=1.2).events(system)
    assert {c.name for c in step[0].changes} == {"load_g", "load_b"}
    assert step[0].changes[0].index == 2
    np.testing.assert_allclose(step[0].changes[0].value, 1.2 * system.params["load_g"][2])
    fault = BusFault(bus="bus7", x=0.01).events(system)
    assert [c.name for c in fault[0].changes] == ["fault_g", "fault_b"]
    assert fault[0].changes[1].index == 6 and fault[0].changes[1].value == pytest.approx(-100.0)
    for event in trip + step + fault:
        changed = apply_changes(system.params, event.changes)
        assert all(changed[k].shape == system.params[k].shape for k in system.params)
    with pytest.raises(KeyError, match="br_4_5"):
        BranchTrip(branch="br_1_2").events(system)
    with pytest.raises(KeyError, match="bus5"):
        LoadStep(bus="bus4").events(system)
    with pytest.raises(KeyError, match="bus9"):
        BusFault(bus="bus10").events(system)


@pytest.mark.parametrize(
    "disturbance",
    [BusFault(bus="bus7", x=0.01), BranchTrip(branch="br_6_7"), LoadStep(bus="bus5", scale=1.5)],
    ids=["fault", "trip", "load"],
)
def test_consistent_z_after_event(system, kernels, disturbance):
    params = apply_changes(system.params, disturbance.events(system)[0].changes)
    z, iterations, residual = consistent_z(system, system.x0, params)
    assert residual < 1e-9 and iterations >= 1
    _, g_max = _max_fg(system, kernels, system.x0, z, params)
    assert g_max < 1e-9
    assert np.max(np.abs(z - system.z0)) > 1e-3  # the event really changed the network


@pytest.mark.parametrize(
    ("where", "field", "value", "message"),
    [
        ("machine", "H", -1.0, "'H' must be > 0"),
        ("machine", "xd_p", 2.0, "'xd_p'"),
        ("machine", "Td0_p", -0.1, "'Td0_p' must be > 0"),
        ("machine", "Tq0_p", None, "'Tq0_p' is missing"),
        ("exciter", "TA", 0.0, "'TA' must be > 0"),
        ("exciter", "KA", "twenty", "'KA' must be a number"),
        ("exciter", "SE_A", float("nan"), "'SE_A' must be finite"),
    ],
)
def test_data_validation_rejects_bad_fields(where, field, value, message):
    data = copy.deepcopy(load_dynamic_data())
    validate_dynamic_data(data)  # the shipped data are valid
    entry = data["generators"][1][where]
    if value is None:
        del entry[field]
    else:
        entry[field] = value
    with pytest.raises(ValueError, match=message) as err:
        build_wscc9(data=data)
    assert "gen2" in str(err.value) and where in str(err.value)


def test_data_must_cover_every_generator(pf):
    data = copy.deepcopy(load_dynamic_data())
    del data["generators"][2]
    with pytest.raises(ValueError, match="generator buses"):
        build_wscc9(data=data, power_flow=pf)
    assert "Sauer" in load_dynamic_data()["source"]


def test_flat_run_stays_at_equilibrium(system, kernels):
    """1 s of the reduced ODE x' = f(x, z(x)) from the equilibrium with SciPy's Radau."""
    p = as_device_params(system.params)
    z_last = [system.z0]

    def rhs(t, x):
        z, _, residual = consistent_z(system, x, system.params, z_last[0])
        assert residual < 1e-9
        z_last[0] = z
        return np.asarray(kernels.f(jnp.asarray(x), jnp.asarray(z), p))

    def jac(t, x):
        return np.asarray(kernels.ode_jacobian(jnp.asarray(x), jnp.asarray(z_last[0]), p))

    sol = solve_ivp(rhs, (0.0, 1.0), system.x0, method="Radau", jac=jac, rtol=1e-8, atol=1e-10)
    assert sol.success
    assert np.max(np.abs(sol.y - system.x0[:, None])) < 1e-6


def test_sauer_pai_example_operating_point():
    """With Sauer & Pai's voltage set-points (1.04, 1.025, 1.025 pu) the initialization twins give
    the initial conditions of their Example 7.1 (values as printed there, about 3 digits)."""
    net = pn.case9()
    net.ext_grid["vm_pu"] = 1.04
    net.gen["vm_pu"] = 1.025
    sys_sp = build_wscc9(power_flow=solved_pandapower_grid(net, "case9"))
    x = sys_sp.x0.reshape(3, 7)
    np.testing.assert_allclose(x[:, 0], [0.0625, 1.0664, 0.9449], atol=2e-3)  # delta, rad
    np.testing.assert_allclose(x[:, 2], [1.0564, 0.7882, 0.7679], atol=2e-3)  # Eq_p
    np.testing.assert_allclose(x[:, 3], [0.0, 0.6222, 0.6242], atol=2e-3)  # Ed_p
    np.testing.assert_allclose(x[:, 4], [1.082, 1.789, 1.403], atol=2e-3)  # Efd
    np.testing.assert_allclose(sys_sp.z0[18:21], [0.3, 1.29, 0.56], atol=5e-3)  # Id
    np.testing.assert_allclose(sys_sp.z0[21:24], [0.67, 0.93, 0.62], atol=5e-3)  # Iq
    np.testing.assert_allclose(sys_sp.params["tm"], [0.716, 1.63, 0.85], atol=2e-3)
