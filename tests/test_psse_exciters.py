"""The PSS/E exciters IEEET1, ESST1A, EXAC1, ESAC1A and SCRX by their own equations: each starts
at its equilibrium (f = 0 to 1e-8) and gives the machine's field voltage, its limits stop its
states (non-windup), its data rules and refusals; the IEEE 14-bus pairs with each exciter on
machine 8 (``tests/data/psse/ieee14_<model>.dyr``) build at an equilibrium to 1e-8. Their
trajectories against ANDES are in ``tests/test_psse_crosscheck.py``."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from models.devices import MODELS
from models.devices.base import saturation
from models.devices.esdc2a import NO_LIMIT
from models.devices.esst3a import _fex
from models.devices.exac1 import exciter_voltage
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


@pytest.mark.parametrize("model", ["IEEET1", "ESST1A", "EXAC1", "ESAC1A"])
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


ESST1A_VALUES = "1 1 0.01 0.8 -0.1 1 1 1 1 80 0.04 999 -999 7.3 -7.3 0.1 0.1 1 1 1"
"""UEL, VOS, TR, VIMAX, VIMIN, TC, TB, TC1, TB1, KA, TA, VAMAX, VAMIN, VRMAX, VRMIN, KC, KF, TF,
KLR, ILR: ANDES's ESST1A defaults (``ieee14_esst1a.dyr``'s record)."""
EXAC1_VALUES = "0.01 1 1 80 0.04 8 0 0.8 0.1 1 0.1 0.2 1 2.8 0.04 3.73 0.33"
"""TR, TB, TC, KA, TA, VRMAX, VRMIN, TE, KF, TF, KC, KD, KE, E1, SE(E1), E2, SE(E2): ANDES's
defaults with KD = 0.2 and a saturation."""
ESAC1A_VALUES = "0.01 1 1 80 0.04 999 -999 0.8 0.1 1 0.1 0.2 1 2.8 0.04 3.73 0.33 7.3 -7.3"
"""TR, TB, TC, KA, TA, VAMAX, VAMIN, TE, KF, TF, KC, KD, KE, E1, SE(E1), E2, SE(E2), VRMAX,
VRMIN."""
SCRX_VALUES = "0.1 10 200 0.05 0 4 0 0"
"""TA/TB, TB, K, TE, EMIN, EMAX, CSWITCH (0: bus fed), rc/rfd (0)."""


def _sig(ifd) -> dict:
    return {"ifd": np.asarray(ifd, float)}


@pytest.mark.parametrize(
    ("model", "values"),
    [("ESST1A", ESST1A_VALUES), ("EXAC1", EXAC1_VALUES), ("ESAC1A", ESAC1A_VALUES),
     ("SCRX", SCRX_VALUES)],
)  # fmt: skip
def test_exciter_starts_at_its_equilibrium_and_gives_the_field_voltage(model, values) -> None:
    """Efd0 3.2 (above the saturation's start) and 1.6; LadIfd0 = Efd0 (equilibrium); the AC
    exciters' KC LadIfd / VE lands on FEX's first branch; ESST1A's field current limiter is on
    for both (LadIfd0 > ILR = 1)."""
    efd, vt = np.array([3.2, 1.6]), np.array([1.02, 0.97])
    sig = _sig(efd)
    p, init, xs = _start(model, _params(model, values), efd, vt, sig)
    d = _rates(model, p, xs, vt, init["vref"], sig=sig)
    assert max(float(jnp.max(jnp.abs(v))) for v in d) < 1e-8
    np.testing.assert_allclose(_output(model, p, xs, vt, sig), efd, rtol=1e-13)
    if model == "ESST1A":
        np.testing.assert_allclose(init["VA"], efd + 1.0 * (efd - 1.0))  # KLR (LadIfd - ILR)


def test_ac_exciter_voltage_solves_the_rectifier_on_each_branch() -> None:
    """VE FEX(KC LadIfd / VE) = Efd on the three branches of FEX (IN about 0.1, 0.6, 0.9)."""
    efd = np.array([2.0, 1.0, 0.3])
    ifd = np.array([2.0, 4.0, 6.0])
    kc = np.array([0.1, 0.32, 0.54])
    ve = exciter_voltage(efd, ifd, kc)
    i_n = kc * ifd / ve
    assert i_n[0] < 0.433 < i_n[1] < 0.75 < i_n[2] < 1.0
    np.testing.assert_allclose(ve * _fex(i_n), efd, rtol=1e-14)


def test_esst1a_output_limits_and_current_limiter() -> None:
    """Efd = clip(VA - KLR max(LadIfd - ILR, 0), VT VRMIN, VT VRMAX - KC LadIfd)."""
    p = _params("ESST1A", ESST1A_VALUES, 3)
    xs = (None, None, None, jnp.array([9.0, 2.0, -9.0]), None)
    vt, ifd = np.array([1.0, 1.0, 0.9]), np.array([2.0, 3.0, 0.5])
    out = _output("ESST1A", p, xs, vt, _sig(ifd))
    np.testing.assert_allclose(out, [7.3 - 0.1 * 2.0, 2.0 - 2.0, -7.3 * 0.9])


def test_esac1a_regulator_output_is_clipped_to_vrmax() -> None:
    """VA far above VRMAX: the exciter integrates VRMAX - VFE, not VA - VFE."""
    efd, vt = np.array([1.6, 1.6]), np.ones(2)
    sig = _sig(efd)
    p, init, xs = _start("ESAC1A", _params("ESAC1A", ESAC1A_VALUES), efd, vt, sig)
    xs = (xs[0], xs[1], jnp.array([50.0, 5.0]), xs[3], xs[4])
    d_ve = np.asarray(_rates("ESAC1A", p, xs, vt, init["vref"], sig=sig)[3])
    vfe = init["xf"]
    np.testing.assert_allclose(d_ve, (np.array([7.3, 5.0]) - vfe) / 0.8, rtol=1e-12)


def test_scrx_step_response_matches_its_transfer_function_and_limit() -> None:
    """A step of Vref by D from the equilibrium, VT held at 1: E(t) - E0 = K D h(t) with
    h(t) = 1 - (TB - TA)/(TB - TE) e^(-t/TB) - (TE - TA)/(TE - TB) e^(-t/TE), the step response of
    (1 + s TA)/((1 + s TB)(1 + s TE)) (TA = 0.1 TB), until E reaches EMAX = 4, where the
    non-windup limit holds it (K y stays above EMAX); the lead-lag's state is D (1 - e^(-t/TB)).
    Integrated from the model's derivatives (RK45, rtol 1e-10) against the hand formula."""
    ta_tb, tb, k, te, emax = 0.1, 10.0, 200.0, 0.05, 4.0
    ta = ta_tb * tb
    efd0, vt, step = 2.0, 1.0, 0.05
    p, init, _ = _start("SCRX", _params("SCRX", SCRX_VALUES, 1), [efd0], [vt], _sig([efd0]))
    pj = _jnp(p)
    vref = jnp.asarray(init["vref"] + step)

    def rhs(t, x):
        d = MODELS["SCRX"].derivatives((jnp.asarray(x[:1]), jnp.asarray(x[1:])), jnp.ones(1),
                                       vref, 0.0, pj, _jnp(_sig([efd0])))  # fmt: skip
        return np.concatenate([np.asarray(v) for v in d])

    def h(t):
        return (1 - (tb - ta) / (tb - te) * np.exp(-t / tb)
                - (te - ta) / (te - tb) * np.exp(-t / te))  # fmt: skip

    t_hit = brentq(lambda t: efd0 + k * step * h(t) - emax, 1e-6, 5.0)
    times = np.linspace(0.0, 3.0, 301)
    sol = solve_ivp(rhs, (0.0, 3.0), [init["xl"][0], init["E"][0]], t_eval=times, rtol=1e-10,
                    atol=1e-12, max_step=2e-3)  # fmt: skip
    assert sol.success
    xl0 = init["xl"][0]
    np.testing.assert_allclose(sol.y[0], xl0 + step * (1 - np.exp(-times / tb)), atol=1e-9)
    before, after = times < t_hit - 0.01, times > t_hit + 0.01
    assert 0.1 < t_hit < 2.9 and before.sum() > 10 and after.sum() > 10
    np.testing.assert_allclose(sol.y[1][before], efd0 + k * step * h(times[before]), atol=1e-6)
    np.testing.assert_allclose(sol.y[1][after], emax, atol=1e-6)
    assert np.all(k * (ta_tb * step + (1 - ta_tb) * (sol.y[0][after] - xl0)) + 2.0 > emax)
    efd = _output("SCRX", p, (jnp.asarray(sol.y[0][-1:]), jnp.asarray(sol.y[1][-1:])),
                  np.array([0.9]), _sig([1.0]))  # fmt: skip
    np.testing.assert_allclose(efd, 0.9 * emax, rtol=1e-6)  # bus fed: E VT


def test_scrx_supply_and_negative_field_current() -> None:
    """CSWITCH 0: Efd = E VT; 1: E. LadIfd < 0: Efd = -(rc/rfd) LadIfd where rc/rfd > 0, E VT
    where rc/rfd = 0 (negative current passes)."""
    p = _params("SCRX", SCRX_VALUES, 4)
    p["CSWITCH"] = np.array([0.0, 1.0, 0.0, 0.0])
    p["rc_rfd"] = np.array([0.0, 0.0, 10.0, 10.0])
    xs = (jnp.zeros(4), jnp.full(4, 2.0))
    vt, ifd = np.full(4, 0.9), np.array([1.0, 1.0, -0.05, 1.0])
    np.testing.assert_allclose(_output("SCRX", p, xs, vt, _sig(ifd)), [1.8, 2.0, 0.5, 1.8])
    bad = _params("SCRX", SCRX_VALUES)
    bad["CSWITCH"][0], bad["TB"][1] = 2.0, 0.0
    assert {(f, i) for f, i, _ in MODELS["SCRX"].check(bad)} == {("CSWITCH", 0), ("TB", 1)}
