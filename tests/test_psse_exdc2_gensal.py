"""The EXDC2 exciter and the GENSAL machine: each at its equilibrium (f = 0), EXDC2's regulator
limits that move with the terminal voltage, GENSAL against GENROU in the limit where the two are
the same model (no saturation, GENROU's X'q = Xq), the assembled Kundur cases with both, and
data errors naming file, line and field."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np
import pytest

from models.devices import EXDC2, GENROU, GENSAL
from models.disturbances import BranchTrip
from models.psse.case import build_psse_case
from models.psse.records import PsseError
from models.scenarios import make_scenario
from solvers import solve
from tests.psse_crosscheck import DATA

KUNDUR_RAW = (DATA / "kundur.raw").read_text()
EXDC2_VALUES = "0.02 20.0 0.02 1.0 1.0 5.2 -4.16 1.0 0.83 0.0754 1.246 0 3.1 0.33 2.3 0.1"
"""kundur_full.dyr's EXDC2 record with a saturation curve (E1 = 3.1, SE 0.33; E2 = 2.3, SE 0.1
reordered below so that E1 < E2)."""
GENSAL_VALUES = "5.0 0.05 0.1 3.0 0.0 1.8 1.2 0.4 0.25 0.15 0.1 0.4"
"""A salient-pole machine with saturation S(1.0) = 0.1, S(1.2) = 0.4."""


def _params(model, values: str, n: int = 2) -> dict:
    numbers = [float(v) for v in values.split()]
    return {k: np.full(n, v) for k, v in zip(model.params, numbers, strict=True)}


def _exdc2_params() -> dict:
    p = _params(EXDC2, EXDC2_VALUES)
    p["E1"], p["SE1"], p["E2"], p["SE2"] = (np.full(2, v) for v in (2.3, 0.1, 3.1, 0.33))
    return p


def _jnp(d: dict) -> dict:
    return {k: jnp.asarray(v) for k, v in d.items()}


def _states(model, init: dict) -> tuple:
    return tuple(jnp.asarray(init[s]) for s in model.states)


def test_exdc2_starts_at_its_equilibrium_and_gives_the_field_voltage() -> None:
    p = _exdc2_params()
    assert EXDC2.check(p) == []
    efd, vt = np.array([2.4, 1.6]), np.array([1.02, 0.97])
    init = EXDC2.init(efd, vt, p)
    p.update(sat_a=init["sat_a"], sat_b=init["sat_b"])
    assert np.all(init["sat_b"] > 0)  # saturation on at Efd = 2.4
    xs = _states(EXDC2, init)
    d = EXDC2.derivatives(xs, jnp.asarray(vt), jnp.asarray(init["vref"]), 0.0, _jnp(p))
    assert max(float(jnp.max(jnp.abs(v))) for v in d) < 1e-8
    np.testing.assert_allclose(np.asarray(EXDC2.output(xs, jnp.asarray(vt), _jnp(p))), efd)


def test_exdc2_limits_move_with_the_terminal_voltage() -> None:
    p = _exdc2_params()
    efd, vt = np.array([2.4, 1.6]), np.array([1.0, 1.0])
    init = EXDC2.init(efd, vt, p)
    p.update(sat_a=init["sat_a"], sat_b=init["sat_b"])
    pj = _jnp(p)
    xs = list(_states(EXDC2, init))
    xs[2] = jnp.full(2, 5.2)  # VR at VRMAX VT (VT = 1)
    up = jnp.asarray(init["vref"]) + 0.5  # drives VR up
    d = EXDC2.derivatives(tuple(xs), jnp.ones(2), up, 0.0, pj)
    assert float(jnp.max(jnp.abs(d[2]))) == 0.0  # held at the limit
    down = jnp.asarray(init["vref"]) - 0.5
    d = EXDC2.derivatives(tuple(xs), jnp.ones(2), down, 0.0, pj)
    assert float(jnp.max(d[2])) < 0.0  # leaves as soon as the lag points inside
    low_vt = jnp.full(2, 0.5)  # the limit falls to 2.6: VR follows it down, Efd reads 2.6
    d = EXDC2.derivatives(tuple(xs), low_vt, up, 0.0, pj)
    np.testing.assert_allclose(np.asarray(d[2]), 100.0 / 0.02 * (2.6 - 5.2), rtol=1e-12)
    # the exciter reads the limited VR = 2.6
    sat = np.array([float(v) for v in (p["sat_b"] * np.maximum(efd - p["sat_a"], 0) ** 2 / efd)])
    np.testing.assert_allclose(np.asarray(d[3]), (2.6 - (1.0 + sat) * efd) / 0.83,
                               rtol=1e-12)  # fmt: skip
    with pytest.raises(ValueError, match=r"EXDC2: initial regulator output VR .* VRMAX VT"):
        EXDC2.init(efd, np.array([1.0, 0.2]), p)  # VRMAX VT = 1.04 < VR = 1.6 for machine 2


def _gensal_point():
    p = _params(GENSAL, GENSAL_VALUES)
    p["ra"] = np.full(2, 0.003)
    v = np.array([1.02 * np.exp(0.2j), 0.98 * np.exp(-0.1j)])
    s = np.array([0.8 + 0.3j, 0.5 - 0.1j])
    return p, v, s


def test_gensal_starts_at_its_equilibrium_with_d_axis_saturation() -> None:
    p, v, s = _gensal_point()
    assert GENSAL.check(p) == []
    init = GENSAL.init(v, s, p)
    p.update(sat_a=init["sat_a"], sat_b=init["sat_b"])
    pj = _jnp(p)
    xs = _states(GENSAL, init)
    id_, iq = jnp.asarray(init["Id"]), jnp.asarray(init["Iq"])
    d = GENSAL.derivatives(xs, id_, iq, jnp.asarray(init["efd"]), jnp.asarray(init["tm"]), pj,
                           2 * np.pi * 60)  # fmt: skip
    assert max(float(jnp.max(jnp.abs(x))) for x in d) < 1e-8
    delta = init["delta"]
    vdq = v * np.exp(-1j * (delta - np.pi / 2))
    res = GENSAL.stator(xs, jnp.asarray(vdq.real), jnp.asarray(vdq.imag), id_, iq, pj)
    assert max(float(jnp.max(jnp.abs(r))) for r in res) < 1e-12
    air_gap = s.real + p["ra"] * np.abs(s / v) ** 2  # electrical power plus stator losses
    np.testing.assert_allclose(np.asarray(GENSAL.torque(xs, id_, iq, pj)), air_gap, atol=1e-12)
    np.testing.assert_allclose(np.asarray(GENSAL.field_current(xs, id_, iq, pj)), init["efd"],
                               atol=1e-12)  # fmt: skip
    # saturation acts on the d-axis only: Efd exceeds its unsaturated value by B (E'q - A)^2
    eq_p = init["Eq_p"]
    unsat = eq_p + (p["Xd"] - p["Xd_p"]) * init["Id"]
    np.testing.assert_allclose(init["efd"] - unsat,
                               init["sat_b"] * np.maximum(eq_p - init["sat_a"], 0) ** 2,
                               rtol=1e-12)  # fmt: skip
    assert np.all(init["efd"] > unsat)


def test_gensal_is_genrou_without_saturation_and_with_xq_prime_equal_to_xq() -> None:
    """GENROU with X'q = Xq and S = 0: E'd stays 0 and E''d = k2q psi_kq follows GENSAL's
    q-axis, so at any state and current the two give the same derivatives, stator residuals
    and torque (exact, to rounding)."""
    p, v, s = _gensal_point()
    p["S10"], p["S12"] = np.zeros(2), np.zeros(2)
    q = {k: p[k] for k in ("Tdo_p", "Tdo_pp", "Tqo_pp", "H", "D", "Xd", "Xq", "Xd_p", "Xd_pp",
                           "Xl", "S10", "S12", "ra")}  # fmt: skip
    q.update(Tqo_p=np.full(2, 0.7), Xq_p=p["Xq"])
    for d in (p, q):
        d.update(sat_a=np.zeros(2), sat_b=np.zeros(2))
    rng = np.random.default_rng(1)
    delta, omega = rng.uniform(-1, 1, 2), 1 + rng.uniform(-0.01, 0.01, 2)
    eq_p, psi_kd = rng.uniform(0.5, 1.2, 2), rng.uniform(0.5, 1.2, 2)
    ed_pp = rng.uniform(0, 0.5, 2)
    id_, iq, efd, tm = (rng.uniform(-1, 1, 2) for _ in range(4))
    k2q = (q["Xq_p"] - q["Xd_pp"]) / (q["Xq_p"] - q["Xl"])
    x_sal = tuple(jnp.asarray(a) for a in (delta, omega, eq_p, psi_kd, ed_pp))
    x_rou = tuple(jnp.asarray(a) for a in (delta, omega, eq_p, psi_kd, 0 * ed_pp, ed_pp / k2q))
    ps, pr = _jnp(p), _jnp(q)
    args = (jnp.asarray(id_), jnp.asarray(iq))
    d_sal = GENSAL.derivatives(x_sal, *args, jnp.asarray(efd), jnp.asarray(tm), ps, 377.0)
    d_rou = GENROU.derivatives(x_rou, *args, jnp.asarray(efd), jnp.asarray(tm), pr, 377.0)
    for k in range(4):
        np.testing.assert_allclose(np.asarray(d_sal[k]), np.asarray(d_rou[k]), atol=1e-13)
    assert float(jnp.max(jnp.abs(d_rou[4]))) == 0.0  # E'd stays at 0
    np.testing.assert_allclose(np.asarray(d_sal[4]), np.asarray(k2q * d_rou[5]), atol=1e-13)
    vd, vq = jnp.asarray(rng.uniform(0, 1, 2)), jnp.asarray(rng.uniform(0, 1, 2))
    sal, rou = GENSAL.stator(x_sal, vd, vq, *args, ps), GENROU.stator(x_rou, vd, vq, *args, pr)
    for a, b in zip(sal, rou, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-13)


def _genrou_with_xq_prime_xq() -> str:
    """kundur_full.dyr's GENROU records with X'q = Xq (1.7): GENSAL's limit."""
    return (DATA / "kundur_full.dyr").read_text().replace("0.55000      0.25000",
                                                          "1.7000       0.25000")  # fmt: skip


def test_kundur_gensal_runs_as_genrou_in_their_common_limit() -> None:
    """The derived kundur_gensal_exdc2.dyr (no saturation in Kundur's data) against kundur_full
    with X'q = Xq, a line trip over 2 s: the same trajectories to the solver's tolerance."""
    runs = {}
    for name, dyr in (("gensal", (DATA / "kundur_gensal_exdc2.dyr").read_text()),
                      ("genrou", _genrou_with_xq_prime_xq())):  # fmt: skip
        system = build_psse_case(KUNDUR_RAW, dyr, name, raw_file="kundur.raw", dyr_file="k.dyr")
        assert system.info["init_max_abs_f"] <= 1e-8 and system.info["init_max_abs_g"] <= 1e-8
        branch = next(b for b in system.names["branch"] if b.startswith(("line_7_8", "line_8_7")))
        scenario = make_scenario(system, BranchTrip(branch=branch, t=0.5), t_end=2.0)
        scenario = dataclasses.replace(scenario, t_eval=np.linspace(0.0, 2.0, 201))
        result = solve(system, scenario, "radau", rtol=1e-8, atol=1e-10)
        assert result.succeeded
        runs[name] = result
    for g in ("gen1_1", "gen2_1", "gen3_1", "gen4_1"):
        for kind in ("omega", "delta"):
            a = runs["gensal"].output(f"{kind}[{g}]")
            b = runs["genrou"].output(f"{kind}[{g}]")
            assert float(np.max(np.abs(a - b))) < 1e-6, (g, kind)
    assert float(np.max(np.abs(runs["gensal"].output("omega[gen1_1]") - 1.0))) > 1e-4  # it moved


@pytest.mark.parametrize(
    ("record", "words"),
    [
        ("1 'EXDC2' 1 " + "1 " * 15 + "/\n",
         "EXDC2 has 16 values (TR, KA, TA, TB, TC, VRMAX, VRMIN, KE, TE, KF, TF1, Switch, E1, "
         "SE1, E2, SE2); 15 given"),
        ("1 'EXDC2' 1 0.02 20 0.02 1 1 5.2 -4.16 x 0.83 0.0754 1.246 0 0 0 1 1 /\n",
         "field KE = 'x' is not a number"),
        ("1 'GENSAL' 1 " + "1 " * 11 + "/\n",
         "GENSAL has 12 values (Tdo_p, Tdo_pp, Tqo_pp, H, D, Xd, Xq, Xd_p, Xd_pp, Xl, S10, S12); "
         "11 given"),
        ("1 'GENSAL' 1 8 0.03 0.05 6.5 0 1.8 1.7 0.3 0.25 oops 0 0 /\n",
         "field Xl = 'oops' is not a number"),
    ],
)  # fmt: skip
def test_exdc2_and_gensal_records_name_the_field(record: str, words: str) -> None:
    dyr = (DATA / "kundur_gensal_exdc2.dyr").read_text()
    with pytest.raises(PsseError) as err:
        build_psse_case(KUNDUR_RAW, record + dyr, "k", raw_file="kundur.raw", dyr_file="k.dyr")
    assert str(err.value).startswith("k.dyr, line 1") and words in str(err.value)


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("'GENSAL' 1   8.0000  0.30000E-01  0.50000E-01  6.5000\n          0.0000  1.8000  1.7000",
         "'GENSAL' 1   8.0000  0.30000E-01  0.50000E-01  6.5000\n          0.0000  1.8000  0.2000",
         "k.dyr, line 1: GENSAL Xq = 0.2 must be >= X''q = X''d"),
        ("1.0000       5.2000      -4.1600", "1.0000       -5.0000      -4.1600",
         "k.dyr, line 4: EXDC2 VRMAX = -5 must be > VRMIN"),
        ("1.0000       5.2000      -4.1600       1.0000", "1.0000       5.2000      -4.1600  0.0",
         "KE = 0 = 0 (computed at initialization) is not supported"),
    ],
)  # fmt: skip
def test_bad_exdc2_and_gensal_values_name_the_record(old: str, new: str, words: str) -> None:
    dyr = (DATA / "kundur_gensal_exdc2.dyr").read_text()
    assert old in dyr
    with pytest.raises(ValueError) as err:
        build_psse_case(KUNDUR_RAW, dyr.replace(old, new, 1), "k", raw_file="kundur.raw",
                        dyr_file="k.dyr")  # fmt: skip
    assert words in str(err.value)
