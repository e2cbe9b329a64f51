"""The PSS/E exciters IEEET1, ESST1A, EXAC1, ESAC1A and SCRX by their own equations: each starts
at its equilibrium (f = 0 to 1e-8) and gives the machine's field voltage, its limits stop its
states (non-windup), its data rules and refusals; the IEEE 14-bus pairs with each exciter on
machine 8 (``tests/data/psse/ieee14_<model>.dyr``) build at an equilibrium to 1e-8. Their
trajectories against ANDES are in ``tests/test_psse_crosscheck.py``."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from models.devices import MODELS
from models.devices.base import saturation
from models.devices.esdc2a import NO_LIMIT
from models.psse.case import build_psse_case
from tests.psse_crosscheck import DATA

IEEET1_VALUES = "0.02 5.0 0.04 7.3 -7.3 1.0 0.8 0.1 1.0 0 2.8 0.04 3.73 0.33"
"""TR, KA, TA, VRMAX, VRMIN, KE, TE, KF, TF, Switch, E1, SE(E1), E2, SE(E2): ANDES's IEEET1
defaults with a saturation (E1 2.8, SE 0.04; E2 3.73, SE 0.33)."""


def _params(model: str, values: str, n: int = 2) -> dict:
    numbers = [float(v) for v in values.split()]
    return {k: np.full(n, v) for k, v in zip(MODELS[model].params, numbers, strict=True)}


def _jnp(d: dict) -> dict:
    return {k: jnp.asarray(v) for k, v in d.items()}


def _start(model: str, p: dict, efd, vt, sig=None):
    """(params with the initialization's, init dict, states) of ``model`` at Efd0, VT0."""
    spec = MODELS[model]
    assert spec.check(p) == []
    extra = (sig,) if spec.inputs else ()
    init = spec.init(np.asarray(efd), np.asarray(vt), p, *extra)
    p = {**p, **{k: v for k, v in init.items() if k not in spec.states and k != "vref"}}
    return p, init, tuple(jnp.asarray(init[s]) for s in spec.states)


def _rates(model: str, p, xs, vt, vref, vs=0.0, sig=None):
    spec = MODELS[model]
    extra = (_jnp(sig),) if spec.inputs else ()
    return spec.derivatives(xs, jnp.asarray(vt), jnp.asarray(vref), vs, _jnp(p), *extra)


def _output(model: str, p, xs, vt, sig=None):
    spec = MODELS[model]
    extra = (_jnp(sig),) if spec.inputs else ()
    return np.asarray(spec.output(xs, jnp.asarray(vt), _jnp(p), *extra))


@pytest.mark.parametrize("ke", [1.0, 0.0])
def test_ieeet1_starts_at_its_equilibrium_and_gives_the_field_voltage(ke: float) -> None:
    efd, vt = np.array([3.2, 1.6]), np.array([1.02, 0.97])
    p = _params("IEEET1", IEEET1_VALUES)
    p["KE"][:] = ke
    p, init, xs = _start("IEEET1", p, efd, vt)
    d = _rates("IEEET1", p, xs, vt, init["vref"])
    assert max(float(jnp.max(jnp.abs(v))) for v in d) < 1e-8
    np.testing.assert_allclose(_output("IEEET1", p, xs, vt), efd)
    se0 = saturation(efd, init["sat_a"], init["sat_b"])
    assert se0[0] > 0 and se0[1] == 0  # 3.2 above the saturation's start, 1.6 below
    if ke == 0:  # PSS/E: KE_eff = -SE(Efd0), so VR starts at 0
        np.testing.assert_allclose(init["KE_eff"], -se0, rtol=1e-15)
        np.testing.assert_allclose(init["VR"], 0.0, atol=1e-15)
    else:
        np.testing.assert_allclose(init["VR"], (1.0 + se0) * efd, rtol=1e-15)


def test_ieeet1_regulator_stops_at_its_limits_and_vrmax_zero_is_no_limit() -> None:
    """A 0.5 pu voltage step: KA u = 2.5 drives VR up at (2.5 - VR0)/TA; at VRMAX (set to VR0
    here) the gate holds it; with VRMAX = 0 (no limit, 999) it rises; downward it is free."""
    efd, vt = np.array([1.5, 1.5]), np.ones(2)
    p = _params("IEEET1", IEEET1_VALUES)
    _, init, _ = _start("IEEET1", p, efd, vt)
    p["VRMAX"] = np.array([float(init["VR"][0]), 0.0])
    p, init, xs = _start("IEEET1", p, efd, vt)
    np.testing.assert_allclose(p["VRMAX_eff"], [init["VR"][0], NO_LIMIT])
    up = np.asarray(_rates("IEEET1", p, xs, vt, init["vref"] + 0.5)[1])
    assert up[0] == 0.0
    np.testing.assert_allclose(up[1], (5.0 * (init["vref"][1] + 0.5 - 1.0) - init["VR"][1]) / 0.04)
    down = np.asarray(_rates("IEEET1", p, xs, vt, init["vref"] - 0.5)[1])
    assert np.all(down < 0)


def test_ieeet1_readings_and_refusals() -> None:
    spec = MODELS["IEEET1"]
    values = dict(zip(spec.params, (float(v) for v in IEEET1_VALUES.split()), strict=True))
    assert spec.readings(values) == []
    said = spec.readings({**values, "KE": 0.0, "VRMAX": 0.0})
    assert len(said) == 2 and "effective KE" in said[0] and "no upper limit" in said[1]
    bad = _params("IEEET1", IEEET1_VALUES)
    bad["TA"][1], bad["Switch"][0], bad["VRMIN"][1] = 0.0, 1.0, 8.0
    assert {(f, i) for f, i, _ in spec.check(bad)} == {("TA", 1), ("Switch", 0), ("VRMAX", 1)}
    p = _params("IEEET1", IEEET1_VALUES)
    with pytest.raises(ValueError, match="IEEET1: initial regulator output"):
        spec.init(np.array([1.5, 9.0]), np.ones(2), p)  # VR0 = (1 + SE) 9 > 7.3


def _pair(model: str) -> tuple[str, str]:
    name = f"ieee14_{model.lower()}.dyr"
    return (DATA / "ieee14.raw").read_text(), (DATA / name).read_text()


@pytest.mark.parametrize("model", ["IEEET1"])
def test_ieee14_pair_builds_at_equilibrium(model: str) -> None:
    raw, dyr = _pair(model)
    built = build_psse_case(raw, dyr, "ieee14", raw_file="ieee14.raw", dyr_file="x.dyr")
    assert built.info["generator_models"]["gen8_1"] == f"GENROU+{model}+TGOV1"
    assert built.info["init_max_abs_f"] <= 1e-8 and built.info["init_max_abs_g"] <= 1e-8


def test_a_record_with_a_wrong_value_is_refused_naming_file_line_and_field() -> None:
    raw, dyr = _pair("IEEET1")
    bad = dyr.replace("8 'IEEET1' 1 0.02 5 0.04", "8 'IEEET1' 1 0.02 5 -0.04")
    with pytest.raises(ValueError, match=r"x.dyr, line 15: IEEET1 TA = -0.04 must be > 0"):
        build_psse_case(raw, bad, "ieee14", raw_file="ieee14.raw", dyr_file="x.dyr")
