"""The PSS/E turbine-governors GAST, HYGOV and IEESGO: each at its equilibrium (f = 0) with its
output the machine's torque, its limits (non-windup, rate, low-value gate), the ieee14 cases of
ANDES's governor spreadsheets (``tests/data/psse/ieee14_governors_from_xlsx.py``) at equilibrium,
and a loading its limits cannot start from refused naming the record and the value."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from models.devices import MODELS
from models.psse.case import build_psse_case
from tests.psse_crosscheck import DATA

IEEE14_RAW = (DATA / "ieee14.raw").read_text()
TM = np.array([0.35, 0.8])
"""Two machines' initial mechanical power (pu on MBASE)."""


def _params(name: str, values: str, n: int = 2) -> dict:
    numbers = [float(v) for v in values.split()]
    return {k: np.full(n, v) for k, v in zip(MODELS[name].params, numbers, strict=True)}


def _record(dyr: str, name: str) -> str:
    """The values of the (one) ``name`` record of a ``.dyr`` text."""
    for rec in dyr.split("/"):
        fields = rec.split()
        if len(fields) > 3 and fields[1].strip("'") == name:
            return " ".join(fields[3:])
    raise KeyError(name)


def _start(name: str, p: dict, tm=TM):
    """(states, pref, derivatives, output) of a governor at its initial point, speed 1 pu."""
    model = MODELS[name]
    init = model.init(tm, p)
    xs = tuple(jnp.asarray(init[s]) for s in model.states)
    pj = {k: jnp.asarray(v) for k, v in p.items()}
    one = jnp.ones(len(tm))
    d = model.derivatives(xs, one, jnp.asarray(init["pref"]), pj)
    return xs, init["pref"], d, model.output(xs, one, pj)


def _case(name: str, dyr: str | None = None):
    file = f"ieee14_{name}.dyr"
    text = (DATA / file).read_text() if dyr is None else dyr
    return build_psse_case(IEEE14_RAW, text, f"ieee14_{name}", raw_file="ieee14.raw",
                           dyr_file=file)  # fmt: skip


GAST_VALUES = _record((DATA / "ieee14_gast.dyr").read_text(), "GAST")
"""ieee14_gast.dyr's GAST record: R 0.05, T1 0.1, T2 0.2, T3 10, AT 1, KT 5, VMAX 1.05, VMIN 0.3,
DTURB 1."""


def test_gast_starts_at_its_equilibrium_and_gives_the_torque() -> None:
    p = _params("GAST", GAST_VALUES)
    _, pref, d, out = _start("GAST", p)
    assert max(float(jnp.max(jnp.abs(v))) for v in d) < 1e-12
    np.testing.assert_allclose(np.asarray(out), TM, atol=1e-12)
    np.testing.assert_allclose(pref, TM)
    assert MODELS["GAST"].check(p) == []


def test_gast_temperature_limit_valve_limits_and_damping() -> None:
    p = _params("GAST", GAST_VALUES)
    pj = {k: jnp.asarray(v) for k, v in p.items()}
    gast = MODELS["GAST"]
    xs, pref, _, _ = _start("GAST", p)
    slow = jnp.full(2, 0.98)  # 2 % under speed: the speed channel asks Pref + 0.4 pu
    d = gast.derivatives(xs, slow, jnp.asarray(pref), pj)
    np.testing.assert_allclose(np.asarray(d[0]), (TM + 0.02 / 0.05 - TM) / 0.1, rtol=1e-12)
    hot = (xs[0], xs[1], jnp.full(2, 1.1))  # exhaust 0.1 pu above AT: limit 1 + 5 (1 - 1.1)
    d = gast.derivatives(hot, slow, jnp.asarray(pref), pj)
    np.testing.assert_allclose(np.asarray(d[0]), (0.5 - TM) / 0.1, rtol=1e-12)
    at_max = (jnp.full(2, 1.05), xs[1], xs[2])  # valve at VMAX, asked to open further
    d = gast.derivatives(at_max, slow, jnp.asarray(pref) + 1.0, pj)
    assert float(jnp.max(jnp.abs(d[0]))) == 0.0
    d = gast.derivatives(at_max, jnp.ones(2), jnp.asarray(pref) - 1.0, pj)
    assert float(jnp.max(d[0])) < 0.0  # leaves the limit as soon as it points inside
    out = gast.output(xs, jnp.full(2, 1.01), pj)  # DTURB = 1 pu power per pu speed
    np.testing.assert_allclose(np.asarray(out), TM - 0.01, rtol=1e-12)


def test_ieee14_gast_case_starts_at_equilibrium() -> None:
    system = _case("gast")
    assert system.info["init_max_abs_f"] <= 1e-8 and system.info["init_max_abs_g"] <= 1e-8
    assert system.info["generator_models"]["gen8_1"] == "GENROU+GAST"
    assert {"x1[gen8_1]", "x3[gen8_1]"} <= set(system.controller_states)


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        (" 1.0 5.0 1.05 0.3 1.0 /", " 0.3 5.0 1.05 0.3 1.0 /",
         "ieee14_gast.dyr, line 14: GAST initial mechanical power TM0 = 0.35 pu outside "
         "[-inf, 0.3] (above the load limit AT"),
        (" 1.0 5.0 1.05 0.3 1.0 /", " 1.0 5.0 1.05 0.4 1.0 /",
         "ieee14_gast.dyr, line 14: GAST initial valve position (= TM0) = 0.35 pu outside "
         "[0.4, 1.05]"),
    ],
)  # fmt: skip
def test_gast_loading_outside_its_limits_is_refused_naming_record_and_value(
    old: str, new: str, words: str
) -> None:
    dyr = (DATA / "ieee14_gast.dyr").read_text()
    assert dyr.count(old) == 1
    with pytest.raises(ValueError) as err:
        _case("gast", dyr.replace(old, new))
    assert words in str(err.value)


HYGOV_VALUES = _record((DATA / "ieee14_hygov.dyr").read_text(), "HYGOV")
"""ieee14_hygov.dyr's HYGOV record: R 0.05, r 1, Tr 1, Tf 0.05, Tg 0.05, VELM 0.3, GMAX 0.45001,
GMIN 0, TW 1, At 1, Dturb 0, qNL 0.1."""


def test_hygov_starts_at_its_equilibrium_and_gives_the_torque() -> None:
    p = _params("HYGOV", HYGOV_VALUES)
    p["GMAX"] = np.full(2, 1.0)
    xs, pref, d, out = _start("HYGOV", p)
    assert max(float(jnp.max(jnp.abs(v))) for v in d) < 1e-12
    np.testing.assert_allclose(np.asarray(out), TM, atol=1e-12)
    np.testing.assert_allclose(np.asarray(xs[3]), TM + 0.1)  # q = TM / At + qNL, head 1
    np.testing.assert_allclose(pref, 0.05 * (TM + 0.1))  # nref = R c
    assert MODELS["HYGOV"].check(p) == []


def test_hygov_gate_rate_and_position_limits_and_the_penstock() -> None:
    p = _params("HYGOV", HYGOV_VALUES)
    p["GMAX"], p["Dturb"] = np.full(2, 1.0), np.full(2, 0.5)
    pj = {k: jnp.asarray(v) for k, v in p.items()}
    hygov = MODELS["HYGOV"]
    xs, pref, _, _ = _start("HYGOV", p)
    small = (jnp.full(2, 0.01), *xs[1:])  # e = 0.01: (e + Tr de/dt) / (r Tr) below VELM
    d = hygov.derivatives(small, jnp.ones(2), jnp.asarray(pref), pj)
    de = (np.asarray(pref) - 0.05 * np.asarray(xs[1]) - 0.01) / 0.05
    np.testing.assert_allclose(np.asarray(d[1]), 0.01 + de, rtol=1e-12)
    d = hygov.derivatives(xs, jnp.full(2, 0.98), jnp.asarray(pref), pj)  # 2 % under speed
    np.testing.assert_allclose(np.asarray(d[1]), 0.3, rtol=1e-12)  # at the rate limit VELM
    d = hygov.derivatives(xs, jnp.full(2, 1.02), jnp.asarray(pref), pj)
    np.testing.assert_allclose(np.asarray(d[1]), -0.3, rtol=1e-12)
    full = (xs[0], jnp.ones(2), *xs[2:])  # c at GMAX = 1, 10 % under speed: asked to open, held
    d = hygov.derivatives(full, jnp.full(2, 0.9), jnp.asarray(pref), pj)
    assert float(jnp.max(jnp.abs(d[1]))) == 0.0
    d = hygov.derivatives(full, jnp.full(2, 1.02), jnp.asarray(pref), pj)
    assert float(jnp.max(d[1])) < 0.0
    opened = (xs[0], xs[1], xs[2] * 1.1, xs[3])  # gate 10 % wider: head falls, flow rises
    d = hygov.derivatives(opened, jnp.ones(2), jnp.asarray(pref), pj)
    np.testing.assert_allclose(np.asarray(d[3]), 1.0 - 1 / 1.1**2, rtol=1e-12)
    out = hygov.output(opened, jnp.full(2, 1.01), pj)
    q, g = np.asarray(xs[3]), np.asarray(xs[2]) * 1.1
    np.testing.assert_allclose(np.asarray(out), (q / g) ** 2 * (q - 0.1) - 0.5 * 0.01 * g)


def test_ieee14_hygov_case_starts_at_equilibrium_and_states_its_reading() -> None:
    system = _case("hygov")
    assert system.info["init_max_abs_f"] <= 1e-8 and system.info["init_max_abs_g"] <= 1e-8
    assert system.info["generator_models"]["gen8_1"] == "GENROU+HYGOV"
    assert any("line 14: HYGOV of machine '1' at bus 8: HYGOV reads VELM as the rate limit" in w
               for w in system.info["warnings"])  # fmt: skip


def test_hygov_loading_outside_its_gate_limits_is_refused_naming_record_and_value() -> None:
    dyr = (DATA / "ieee14_hygov.dyr").read_text()
    assert dyr.count(" 0.3 0.45001 0.0 ") == 1
    with pytest.raises(ValueError) as err:
        _case("hygov", dyr.replace(" 0.3 0.45001 0.0 ", " 0.3 0.4 0.0 "))
    assert ("ieee14_hygov.dyr, line 14: HYGOV initial desired gate c = TM0 / At + qNL = 0.45 pu "
            "outside [0, 0.4]") in str(err.value)  # fmt: skip


IEESGO_VALUES = "0.1 0.5 0.2 0.3 8.0 0.4 20.0 0.7 0.6 1.0 0.2"
"""An IEESGO record with every block active (T1 .. T6, K1 20, K2 0.7, K3 0.6, PMAX 1, PMIN 0.2)."""


def test_ieesgo_starts_at_its_equilibrium_and_gives_the_torque() -> None:
    p = _params("IEESGO", IEESGO_VALUES)
    xs, pref, d, out = _start("IEESGO", p)
    assert max(float(jnp.max(jnp.abs(v))) for v in d) < 1e-12
    np.testing.assert_allclose(np.asarray(out), TM, atol=1e-12)
    np.testing.assert_allclose(np.asarray(xs[4]), 0.7 * 0.6 * TM)
    assert MODELS["IEESGO"].check(p) == []


def test_ieesgo_droop_power_limits_and_stage_fractions() -> None:
    p = _params("IEESGO", IEESGO_VALUES)
    pj = {k: jnp.asarray(v) for k, v in p.items()}
    ieesgo = MODELS["IEESGO"]
    xs, pref, _, _ = _start("IEESGO", p)
    d = ieesgo.derivatives(xs, jnp.full(2, 0.99), jnp.asarray(pref), pj)
    np.testing.assert_allclose(np.asarray(d[0]), 20 * -0.01 / 0.1, rtol=1e-12)  # K1 dw / T1
    droop = (xs[0] - 0.2, *xs[1:])  # lag output x1 = -0.2 (under speed), lead-lag state 0
    d = ieesgo.derivatives(droop, jnp.ones(2), jnp.asarray(pref), pj)
    y = (0.5 / 0.2) * -0.2  # lead-lag output: (T2 / T3) x1 + (1 - T2 / T3) 0
    np.testing.assert_allclose(np.asarray(d[2]), (np.minimum(TM - y, 1.0) - TM) / 0.3)
    low = (xs[0] + 5.0, *xs[1:])  # a large over-speed demand: valve demand held at PMIN
    d = ieesgo.derivatives(low, jnp.ones(2), jnp.asarray(pref), pj)
    np.testing.assert_allclose(np.asarray(d[2]), (0.2 - TM) / 0.3, rtol=1e-12)
    moved = (xs[0], xs[1], xs[2] + 0.1, xs[3], xs[4])  # x3 up 0.1: (1 - K2) of it at once
    out = ieesgo.output(moved, jnp.ones(2), pj)
    np.testing.assert_allclose(np.asarray(out), TM + 0.3 * 0.1, rtol=1e-12)


def test_ieee14_ieesgo_case_starts_at_equilibrium_and_refuses_a_loading_above_pmax() -> None:
    system = _case("ieesgo")
    assert system.info["init_max_abs_f"] <= 1e-8 and system.info["init_max_abs_g"] <= 1e-8
    assert system.info["generator_models"]["gen8_1"] == "GENROU+ESST3A+IEESGO"
    dyr = (DATA / "ieee14_ieesgo.dyr").read_text()
    assert dyr.count(" 1.0 1.0 5.0 0.0 /") == 1
    with pytest.raises(ValueError) as err:
        _case("ieesgo", dyr.replace(" 1.0 1.0 5.0 0.0 /", " 1.0 1.0 0.3 0.0 /"))
    assert ("ieee14_ieesgo.dyr, line 15: IEESGO initial mechanical power TM0 = 0.35 pu outside "
            "[0, 0.3]") in str(err.value)  # fmt: skip
