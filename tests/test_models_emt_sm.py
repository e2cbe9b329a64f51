"""The EMT synchronous-machine case: sizes, equilibrium, modes, the source switch-off (Radau
against a fine fixed-step trapezoid) and the ten preset events."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from pydantic import TypeAdapter

from models.cases.emt_sm import EVENT_LOAD_SCALES, build_emt_sm, emt_sm_events
from models.dae import apply_changes
from models.disturbances import BusFault, Disturbance, SourceSwitch
from models.kernels import as_device_params, kernels_for
from models.library import build_system, network_info
from models.scenarios import make_scenario
from solvers import RunStatus, solve


@pytest.fixture(scope="module")
def sm():
    return build_system("emt_sm")


def test_sizes_and_equilibrium(sm):
    assert (sm.n_x, sm.n_z) == (8, 11)  # the paper's 8 differential + 11 algebraic
    kernels, _ = kernels_for(sm)
    p = as_device_params(sm.params)
    assert np.max(np.abs(np.asarray(kernels.f(sm.x0, sm.z0, p)))) <= 1e-8
    assert np.max(np.abs(np.asarray(kernels.g(sm.x0, sm.z0, p)))) <= 1e-8
    y = dict(zip(sm.output_names, sm.evaluate_outputs(sm.x0, sm.z0), strict=True))
    assert y["V[term]"] == pytest.approx(1.0, abs=1e-12)
    assert y["Pe[gen]"] == pytest.approx(0.9, abs=1e-12)
    assert y["omega[gen]"] == 1.0 and y["kcl_max"] < 1e-12
    info = network_info("emt_sm")
    assert (info["n_x"], info["n_z"], info["n_bus"]) == (8, 11, 2)
    assert 0 < info["efd"] < 0.01 and info["tm"] == pytest.approx(0.9, abs=0.01)


def test_build_validation_and_unknown_names(sm):
    with pytest.raises(ValueError, match="x_line"):
        build_emt_sm(x_line=0.0)
    with pytest.raises(ValueError, match="grid_g"):
        build_emt_sm(grid_g=0.0)
    with pytest.raises(KeyError, match="emt_sm"):
        build_system("emt_machine")
    with pytest.raises(KeyError, match="grid"):
        SourceSwitch(source="bus9").events(sm)
    with pytest.raises(KeyError, match="term"):
        SourceSwitch(load="bus2", load_scale=1.1).events(sm)
    no_source = dataclasses.replace(
        sm, params={k: v for k, v in sm.params.items() if k != "source_on"}
    )
    with pytest.raises(KeyError, match="no switchable source"):
        SourceSwitch().events(no_source)


def test_modes_left_half_plane(sm):
    kernels, _ = kernels_for(sm)
    jac = np.asarray(kernels.ode_jacobian(sm.x0, sm.z0, as_device_params(sm.params)))
    eig = np.linalg.eigvals(jac)
    fastest = eig[np.argmax(np.abs(eig))]
    slowest = eig[np.argmin(np.abs(eig))]
    print(f"emt_sm eigenvalues (1/s): {np.sort_complex(eig)}")
    print(f"fastest {fastest:.4g}, stiffness ratio {abs(fastest) / abs(slowest):.3g}")
    assert np.all(eig.real < 0)
    # the stator / line electromagnetic pair near +-j omega_b, lightly damped
    stator = eig[np.argmin(np.abs(eig.imag - 2 * np.pi * 60))]
    assert abs(stator.imag - 2 * np.pi * 60) < 5 and -20 < stator.real < 0
    assert -1e4 < fastest.real < -1e3  # RL mode: machine and line inductances into the load


def test_flat_without_disturbance(sm):
    scenario = make_scenario(sm, None, t_end=0.1, n_eval=11)
    result = solve(sm, scenario, "radau", rtol=1e-8, atol=1e-10)
    assert result.status is RunStatus.SUCCEEDED
    assert np.max(np.abs(result.x_eval - sm.x0)) < 1e-9
    assert np.max(np.abs(result.z_eval - sm.z0)) < 1e-9


def test_source_switch_off_radau_matches_trapezoid(sm):
    event = emt_sm_events()["source_off_load100"]
    scenario = make_scenario(sm, event, t_end=0.2, n_eval=201)
    radau = solve(sm, scenario, "radau", rtol=1e-8, atol=1e-10)
    trap = solve(sm, scenario, "trapezoid", dt=5e-5)
    assert radau.status is RunStatus.SUCCEEDED and trap.status is RunStatus.SUCCEEDED
    scale = np.max(np.abs(trap.x_eval), axis=0)
    rel = np.max(np.abs(radau.x_eval - trap.x_eval) / scale)
    print(f"radau ({radau.stats.accepted} steps) vs trapezoid dt=5e-5: max rel error {rel:.2e}")
    assert rel <= 1e-4
    i_line, omega = radau.output("I[line]"), radau.output("omega[gen]")
    assert np.ptp(i_line[:50]) < 1e-9 and i_line[-1] < 0.9 * i_line[0]  # only the remote load
    assert omega[-1] > 1.0005  # the islanded machine carries less load than Tm: it speeds up


def test_fine_trapezoid_reference_matches_tight_radau(sm):
    """The paper's reference: implicit trapezoid with a full Newton solve per step at
    dt = 1e-6 s; over the first 4 ms after the switch-off it agrees with Radau at rtol 1e-10."""
    switch = SourceSwitch(t=0.001, load="term", load_scale=1.0)
    scenario = make_scenario(sm, switch, t_end=0.005, n_eval=51)
    radau = solve(sm, scenario, "radau", rtol=1e-10, atol=1e-12)
    fine = solve(sm, scenario, "trapezoid", dt=1e-6)
    assert radau.status is RunStatus.SUCCEEDED and fine.status is RunStatus.SUCCEEDED
    moved = np.max(np.abs(radau.x_eval[-1] - radau.x_eval[0]))
    diff = np.max(np.abs(radau.x_eval - fine.x_eval))
    print(f"emt_sm: trapezoid dt=1e-6 ({fine.stats.accepted} steps) vs Radau 1e-10: {diff:.2e}")
    assert moved > 1e-2 and diff <= 1e-6 * max(1.0, moved)


def test_ten_events_as_data(sm):
    events = emt_sm_events()
    assert len(events) == 10 and len(set(events)) == 10
    adapter = TypeAdapter(Disturbance)
    parsed = adapter.validate_python({"kind": "source_switch", "load": "term", "load_scale": 0.8})
    assert parsed == events["source_off_load080"]
    finals = []
    for scale, (name, disturbance) in zip(EVENT_LOAD_SCALES, events.items(), strict=True):
        (event,) = disturbance.events(sm)
        assert event.time == 0.05 and name.startswith("source_off_load")
        changes = {c.name: c.value for c in event.changes}
        assert changes["source_on"] == 0.0
        assert changes["load_g"] == pytest.approx(scale * sm.params["load_g"][0])
        new = apply_changes(sm.params, event.changes)
        assert all(new[k].shape == sm.params[k].shape for k in new)
        scenario = make_scenario(sm, disturbance, t_end=0.1, n_eval=11)
        result = solve(sm, scenario, "radau", rtol=1e-6, atol=1e-8)
        assert result.status is RunStatus.SUCCEEDED
        finals.append(result.output("omega[gen]")[-1])
    assert np.all(np.diff(finals) < 0)  # more island load, slower machine


def test_bus_fault_applies(sm):
    """The quasi-static fault admittance lets the generic bus fault run on this case too."""
    fault = BusFault(bus="term", t_fault=0.1, t_clear=0.183, x=0.01)
    scenario = make_scenario(sm, fault, t_end=0.3, n_eval=31)
    result = solve(sm, scenario, "radau", rtol=1e-6, atol=1e-8)
    assert result.status is RunStatus.SUCCEEDED
    v = result.output("V[term]")
    assert v[15] < 0.2 and abs(v[-1] - 1.0) < 0.1
