"""CIM5BL induction motor loads (``models/devices/cim5.py``) by their own equations: ANDES 2.0.0
has no CIM5 (its motors, ``andes/models/motor``, are PSAT's Motor3/Motor5 on their own data), so
no cross-check. Checked: the importer's attachment to a load and its refusals, the equilibrium
of IEEE 14 with a single-cage and both double-cage motor types (1e-8), the single cage's slip and
torque against the textbook steady-state equivalent circuit, and a voltage dip: the motor slows
to the equilibrium of the circuit at the lower voltage and comes back when the voltage does."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from models.devices import CIM5
from models.devices.cim5 import PARAMS, init_one
from models.psse.case import ANDES_LOAD_CONVERSION, build_psse_case, load_psse_case
from models.psse.records import PsseError
from models.scenarios import make_scenario
from solvers import solve
from tests.psse_crosscheck import DATA

jax.config.update("jax_enable_x64", True)

RAW = (DATA / "ieee14.raw").read_text()
DYR = (DATA / "ieee14_genrou_tgov1.dyr").read_text()
SINGLE = "9 'CIM5BL' '1' 1 0.01 0.1 3.0 0.02 0.12 0 0 0 0 0 0 0 1.25 0.5 0 0 0 2 0 /\n"
TYPE1 = (
    "14 'CIM5BL' '1' 1 0.01 0.1 3.0 0.007 0.1 0.05 0.05 1 0.06 1.2 0.25 40 0 0.7 0.7 6 3 1.5 0 /\n"
)
TYPE2 = "13 'CIM5BL' '1' 2 0.01 0.1 3.0 0.05 0.05 0.007 0.1 0 0 0 0 0 1.5 0.8 0 0 0 0 0 /\n"
OMEGA_B = 2 * np.pi * 60.0


def build(extra: str, **options):
    return build_psse_case(RAW, DYR + extra, "ieee14_cim5", raw_file="ieee14.raw",
                           dyr_file="m.dyr", **options)  # fmt: skip


def values(record: str, scale: float) -> dict[str, float]:
    out = dict(zip(PARAMS, (float(v) for v in record.split()[3:-1]), strict=True))
    return {**out, "scale": scale}


def circuit(slip: float, p: dict) -> complex:
    """Textbook single-cage equivalent circuit, pu on the system base: RA + j XA + j XM ||
    (R1 / s + j X1)."""
    rotor = p["R1"] / slip + 1j * p["X1"]
    return (p["RA"] + 1j * p["XA"] + 1j * p["XM"] * rotor / (1j * p["XM"] + rotor)) / p["scale"]


def test_motors_attach_to_loads_and_start_at_equilibrium() -> None:
    system = build(SINGLE + TYPE1 + TYPE2)
    assert system.info["init_max_abs_f"] <= 1e-8 and system.info["init_max_abs_g"] <= 1e-8
    assert [n for n in system.state_names if n.startswith("s[")] == [
        "s[cim5_9_1]", "s[cim5_14_1]", "s[cim5_13_1]"]  # fmt: skip
    slips = [system.x0[system.state_names.index(f"s[cim5_{b}_1]")] for b in (9, 14, 13)]
    assert all(0.0 < s < 0.1 for s in slips), slips
    text = " ".join(system.info["warnings"])
    assert "motor base 36.875 MVA (MBASE = 0: PMULT 1.25 x PL 29.5 MW)" in text
    assert "motor type 2 (nested cage" in text and "undervoltage trip VT = 0.7" in text
    # the motors take their loads' constant power: bus 9's static load keeps none of it
    case = load_psse_case(RAW, DYR + SINGLE, "c", dyr_file="m.dyr")
    assert case.bus_devices[0].s == pytest.approx(-(0.295 + 0.166j), abs=1e-15)
    # asked for, the conversion leaves the motor's load alone and still starts at equilibrium
    converted = build(SINGLE + TYPE1, load_conversion=ANDES_LOAD_CONVERSION)
    assert converted.info["init_max_abs_f"] <= 1e-8 and converted.info["init_max_abs_g"] <= 1e-8


def test_refusals_name_the_record() -> None:
    with pytest.raises(PsseError, match=r"m.dyr, line 22.*no in-service load '2' at bus 9"):
        build(SINGLE.replace("'1'", "'2'"))
    with pytest.raises(PsseError, match="already has a motor"):
        build(SINGLE + SINGLE)
    with pytest.raises(ValueError, match=r"m.dyr, line 22: CIM5BL IT = 3 must be 1 or 2"):
        build(SINGLE.replace("'1' 1 0.01", "'1' 3 0.01"))
    with pytest.raises(ValueError, match="PMULT = 0 must be > 0 where MBASE = 0"):
        build(SINGLE.replace(" 0 1.25 0.5", " 0 0 0.5"))


@pytest.mark.parametrize("v", [1.0 + 0.0j, 0.95 * np.exp(-0.2j)])
def test_single_cage_matches_the_equivalent_circuit(v: complex) -> None:
    """The initial slip draws P through the textbook circuit, the device's current and torque
    are the circuit's (air-gap power RA-losses excluded), and every derivative is 0."""
    p = values(SINGLE, 0.36875)
    power = 0.295 + 0.166j
    init = init_one(v, power, p, OMEGA_B)
    z = circuit(init["s"], p)
    i = v / z
    assert (v * np.conj(i)).real == pytest.approx(power.real, rel=1e-12)
    te = (v * np.conj(i)).real - p["RA"] / p["scale"] * abs(i) ** 2
    assert init["te"] == pytest.approx(te, rel=1e-10)
    assert init["T0"] * (1 - init["s"]) ** p["D"] == pytest.approx(te, rel=1e-12)
    params = {k: jnp.asarray([val]) for k, val in {**p, "T0": init["T0"], "bc": init["bc"]}.items()}
    xs = tuple(jnp.asarray([init[s]]) for s in CIM5.states)
    vr, vi = jnp.asarray([v.real]), jnp.asarray([v.imag])
    derivs = CIM5.derivatives(xs, vr, vi, params, OMEGA_B)
    assert max(abs(float(d[0])) for d in derivs) < 1e-12
    ir, ii = CIM5.current(xs, vr, vi, params, OMEGA_B)
    drawn = -v * np.conj(complex(float(ir[0]), float(ii[0])))
    assert drawn == pytest.approx(power, abs=1e-12)  # motor and compensating shunt


@pytest.mark.parametrize("record", [TYPE1, TYPE2])
def test_double_cage_starts_at_rest_with_its_torque_balanced(record: str) -> None:
    p = values(record, 0.4)
    init = init_one(0.98 + 0.05j, 0.2 + 0.07j, p, OMEGA_B)
    params = {k: jnp.asarray([val]) for k, val in {**p, "T0": init["T0"], "bc": init["bc"]}.items()}
    xs = tuple(jnp.asarray([init[s]]) for s in CIM5.states)
    derivs = CIM5.derivatives(xs, jnp.asarray([0.98]), jnp.asarray([0.05]), params, OMEGA_B)
    assert max(abs(float(d[0])) for d in derivs) < 1e-12
    assert 0.0 < init["s"] < 0.05


def test_voltage_dip_slows_the_motor_to_the_circuits_equilibrium_and_back() -> None:
    """|V| 1.0 -> 0.85 pu for 3 s, then back: the slip rises to the circuit's equilibrium at
    0.85 pu (Te(s) = T0 (1 - s)^D), then returns to its initial value."""
    p = values(SINGLE, 0.36875)
    init = init_one(1.0 + 0j, 0.295 + 0.166j, p, OMEGA_B)
    params = {k: jnp.asarray([val]) for k, val in {**p, "T0": init["T0"], "bc": init["bc"]}.items()}
    f = jax.jit(lambda x, vm: jnp.stack([d[0] for d in CIM5.derivatives(
        tuple(x[k : k + 1] for k in range(5)), jnp.asarray([vm]), jnp.asarray([0.0]), params,
        OMEGA_B)]))  # fmt: skip
    x0 = np.array([init[s] for s in CIM5.states])

    def run(x, vm, t):
        out = solve_ivp(lambda _, y: np.asarray(f(jnp.asarray(y), vm)), (0, t), x, method="Radau",
                        rtol=1e-10, atol=1e-12)  # fmt: skip
        assert out.success
        return out.y[:, -1]

    def torque_gap(slip: float, vm: float) -> float:
        i = vm / circuit(slip, p)
        return (vm * np.conj(i)).real - p["RA"] / p["scale"] * abs(i) ** 2 - init["T0"] * (
            1 - slip) ** p["D"]  # fmt: skip

    low = run(x0, 0.85, 3.0)
    expected = brentq(torque_gap, 1e-6, 0.2, args=(0.85,), xtol=1e-14)
    assert expected > init["s"] * 1.2
    assert low[0] == pytest.approx(expected, rel=1e-6)
    back = run(low, 1.0, 3.0)
    assert back[0] == pytest.approx(init["s"], rel=1e-6)


def test_ieee14_with_motors_rides_through_a_fault() -> None:
    """A bus fault (x = 0.05 pu, 0.1 s) with the three motors and the other loads as given
    (constant power): Radau runs through, the motors' slips rise during the fault and settle
    near their initial values."""
    from models.disturbances import BusFault

    system = build(SINGLE + TYPE1 + TYPE2, load_conversion=None)
    scenario = make_scenario(system, BusFault(bus="bus9", t_fault=0.2, t_clear=0.3, r=0.0,
                                              x=0.05), t_end=3.0, n_eval=301)  # fmt: skip
    result = solve(system, scenario, "radau", rtol=1e-6, atol=1e-8)
    assert result.succeeded, result.message
    for bus in (9, 14, 13):
        slip = result.x_eval[:, system.state_names.index(f"s[cim5_{bus}_1]")]
        assert slip.max() > 1.05 * slip[0], bus
        assert abs(slip[-1] - slip[0]) < 0.2 * slip[0], bus
