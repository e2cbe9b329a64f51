"""The ESDC2A exciter (PSS/E, IEEE DC2A): at its equilibrium (f = 0), its regulator limits that
move with the terminal voltage, PSS/E's KE = 0 rule (an effective KE that makes VR = 0 at
initialization), VRMAX = 0 read as no upper limit, the WECC 179-bus case with its eight ESDC2A
exciters at an equilibrium to 1e-8, and data errors naming file, line and field."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from models.devices import ESDC2A
from models.devices.base import saturation
from models.devices.esdc2a import NO_LIMIT
from models.psse.case import build_psse_case
from models.psse.records import PsseError
from tests.psse_crosscheck import DATA

KUNDUR_RAW = (DATA / "kundur.raw").read_text()
WECC_VALUES = "0.02 50.0 0.05 0.02 0.0 0.0 -3.0 0.0 0.512 0.07 1.3 0 3.9825 0.5 5.31 1.049"
"""wecc_full.dyr's ESDC2A record at bus 10 (line 60): KE = 0, VRMAX = 0, saturation from
A = 2.009."""
KE_GIVEN = WECC_VALUES.replace("-3.0 0.0 0.512", "-3.0 1.0 0.512").replace(
    " 0.0 0.0 -3", " 0.0 4.0 -3"
)
"""The same with KE = 1 and VRMAX = 4 (neither rule applies)."""


def _params(values: str, n: int = 2) -> dict:
    numbers = [float(v) for v in values.split()]
    return {k: np.full(n, v) for k, v in zip(ESDC2A.params, numbers, strict=True)}


def _jnp(d: dict) -> dict:
    return {k: jnp.asarray(v) for k, v in d.items()}


def _start(values: str, efd, vt):
    p = _params(values, len(efd))
    assert ESDC2A.check(p) == []
    init = ESDC2A.init(np.asarray(efd), np.asarray(vt), p)
    for k in ("sat_a", "sat_b", "KE_eff", "VRMAX_eff"):
        p[k] = init[k]
    return p, init, tuple(jnp.asarray(init[s]) for s in ESDC2A.states)


@pytest.mark.parametrize("values", [WECC_VALUES, KE_GIVEN])
def test_esdc2a_starts_at_its_equilibrium_and_gives_the_field_voltage(values: str) -> None:
    efd, vt = np.array([2.4, 1.6]), np.array([1.02, 0.97])
    p, init, xs = _start(values, efd, vt)
    d = ESDC2A.derivatives(xs, jnp.asarray(vt), jnp.asarray(init["vref"]), 0.0, _jnp(p))
    assert max(float(jnp.max(jnp.abs(v))) for v in d) < 1e-8
    np.testing.assert_allclose(np.asarray(ESDC2A.output(xs, jnp.asarray(vt), _jnp(p))), efd)


def test_ke_zero_is_computed_so_that_the_regulator_starts_at_zero() -> None:
    """PSS/E: KE = 0 means an effective KE = -SE(Efd0), so VR0 = 0; 0 where Efd0 is below the
    saturation's start A (2.009 here); KE != 0 is used as given."""
    efd, vt = np.array([2.4, 1.6]), np.array([1.0, 1.0])
    p, init, _ = _start(WECC_VALUES, efd, vt)
    se0 = saturation(efd, init["sat_a"], init["sat_b"])
    assert se0[0] > 0 and se0[1] == 0  # 2.4 above A, 1.6 below
    np.testing.assert_allclose(init["KE_eff"], -se0, rtol=1e-15)
    np.testing.assert_allclose(init["VR"], 0.0, atol=1e-15)
    np.testing.assert_allclose(init["vref"], vt, atol=1e-15)  # VR = 0: no voltage error
    assert p["KE"].tolist() == [0.0, 0.0]  # the record's zero is kept
    _, given, _ = _start(KE_GIVEN, efd, vt)
    np.testing.assert_allclose(given["KE_eff"], 1.0)
    np.testing.assert_allclose(given["VR"], (1.0 + saturation(efd, given["sat_a"],
                                                               given["sat_b"])) * efd)  # fmt: skip


def test_limits_move_with_the_terminal_voltage_and_vrmax_zero_is_no_upper_limit() -> None:
    """VR between VRMIN VT and VRMAX VT (EXDC2's tracking of a moving limit); VRMAX = 0: no
    upper limit. TC = 0, TB = 0.02: the regulator's input is the lead-lag's state xl, set here
    to drive VR up (xl = 1, KA xl = 50) or down (xl = -1)."""
    efd, one = np.array([2.4, 1.6]), jnp.ones(2)
    for values, high in ((KE_GIVEN, 4.0), (WECC_VALUES, NO_LIMIT)):
        p, init, xs = _start(values, efd, np.ones(2))
        np.testing.assert_allclose(p["VRMAX_eff"], high)
        pj, vref = _jnp(p), jnp.asarray(init["vref"])
        up, down = list(xs), list(xs)
        up[1], down[1] = jnp.ones(2), -jnp.ones(2)
        up[2] = jnp.full(2, 4.0)  # VR at 4 (VT = 1): VRMAX VT of KE_GIVEN
        d = ESDC2A.derivatives(tuple(up), one, vref, 0.0, pj)
        if high == 4.0:
            assert float(jnp.max(jnp.abs(d[2]))) == 0.0  # held at the limit
            low_vt = jnp.full(2, 0.5)  # the limit falls to 2: VR follows it, Efd reads 2
            d = ESDC2A.derivatives(tuple(up), low_vt, vref, 0.0, pj)
            np.testing.assert_allclose(np.asarray(d[2]), 100.0 / 0.05 * (2.0 - 4.0), rtol=1e-12)
            se = saturation(efd, p["sat_a"], p["sat_b"])
            np.testing.assert_allclose(np.asarray(d[3]), (2.0 - (1.0 + se) * efd) / 0.512,
                                       rtol=1e-12)  # fmt: skip
        else:  # VRMAX = 0: no upper limit, the lag acts
            np.testing.assert_allclose(np.asarray(d[2]), (50.0 - 4.0) / 0.05, rtol=1e-12)
        # the lower limit VRMIN VT = -3 VT binds in both, and moves with VT
        down[2] = jnp.full(2, -3.0)
        d = ESDC2A.derivatives(tuple(down), one, vref, 0.0, pj)
        assert float(jnp.max(jnp.abs(d[2]))) == 0.0
        d = ESDC2A.derivatives(tuple(down), jnp.full(2, 0.5), vref, 0.0, pj)
        np.testing.assert_allclose(np.asarray(d[2]), 100.0 / 0.05 * (-1.5 + 3.0), rtol=1e-12)
        down[1] = jnp.zeros(2)  # the lag points inside: VR leaves the limit at once
        d = ESDC2A.derivatives(tuple(down), one, vref, 0.0, pj)
        np.testing.assert_allclose(np.asarray(d[2]), 3.0 / 0.05, rtol=1e-12)
    with pytest.raises(ValueError, match=r"ESDC2A: initial regulator output VR .* VRMAX VT"):
        ESDC2A.init(np.array([2.4, 5.0]), np.array([1.0, 1.0]), _params(KE_GIVEN))


def _kundur(values: str) -> str:
    """kundur_full.dyr with each EXDC2 record replaced by an ESDC2A record of ``values``."""
    text = (DATA / "kundur_full.dyr").read_text().split("/")
    out = []
    for rec in text:
        fields = rec.split()
        if len(fields) > 2 and fields[1] == "'EXDC2":
            rec = f"\n      {fields[0]} 'ESDC2A' 1 {values} "
        out.append(rec)
    return "/".join(out)


@pytest.mark.parametrize("values", [WECC_VALUES, KE_GIVEN])
def test_kundur_with_esdc2a_starts_at_an_equilibrium(values: str) -> None:
    system = build_psse_case(KUNDUR_RAW, _kundur(values), "k", raw_file="kundur.raw",
                             dyr_file="k.dyr")  # fmt: skip
    assert system.info["init_max_abs_f"] <= 1e-8 and system.info["init_max_abs_g"] <= 1e-8
    assert system.info["generator_models"]["gen1_1"] == "GENROU+ESDC2A+TGOV1"
    readings = [w for w in system.info["warnings"] if "ESDC2A of machine '1' at bus 1:" in w]
    if values == WECC_VALUES:  # KE = 0 and VRMAX = 0: both readings are stated, naming the line
        assert len(readings) == 2 and readings[0].startswith("k.dyr, line ")
        assert "effective KE" in readings[0] and "VRMAX = 0 read as no upper limit" in readings[1]
    else:
        assert readings == []


@pytest.mark.parametrize(
    ("record", "words"),
    [
        ("1 'ESDC2A' 1 " + "1 " * 15 + "/\n",
         "ESDC2A has 16 values (TR, KA, TA, TB, TC, VRMAX, VRMIN, KE, TE, KF, TF1, Switch, E1, "
         "SE1, E2, SE2); 15 given"),
        ("1 'ESDC2A' 1 " + WECC_VALUES.replace("0.512", "x") + " /\n",
         "field TE = 'x' is not a number"),
    ],
)  # fmt: skip
def test_esdc2a_records_name_the_field(record: str, words: str) -> None:
    with pytest.raises(PsseError) as err:
        build_psse_case(KUNDUR_RAW, record + _kundur(WECC_VALUES), "k", raw_file="kundur.raw",
                        dyr_file="k.dyr")  # fmt: skip
    assert str(err.value).startswith("k.dyr, line 1") and words in str(err.value)


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        (" -3.0 0.0 0.512", " -3.0 0.0 0.0", "ESDC2A TE = 0 must be > 0"),
        ("0.0 0.0 -3.0", "0.0 -4.0 -3.0", "ESDC2A VRMAX = -4 must be > VRMIN (0: no limit)"),
        ("1.3 0 3.9825", "1.3 1 3.9825", "ESDC2A Switch = 1 must be 0"),
        ("0.5 5.31 1.049", "0.5 3.0 1.049", "ESDC2A E2 = 3 saturation needs 0 < E1 < E2"),
        ("0.02 0.0 0.0 -3.0", "0.0 0.5 0.0 -3.0", "ESDC2A TC = 0.5 must be 0 when TB = 0"),
    ],
)  # fmt: skip
def test_bad_esdc2a_values_name_the_record(old: str, new: str, words: str) -> None:
    assert old in WECC_VALUES
    with pytest.raises(ValueError) as err:
        build_psse_case(KUNDUR_RAW, _kundur(WECC_VALUES.replace(old, new, 1)), "k",
                        raw_file="kundur.raw", dyr_file="k.dyr")  # fmt: skip
    assert "k.dyr, line" in str(err.value) and words in str(err.value), str(err.value)


def test_wecc_full_runs_its_eight_esdc2a_exciters_from_an_equilibrium() -> None:
    """wecc_full.dyr in full (no substitution; each data reading stated): all eight ESDC2A records
    have KE = 0 and VRMAX = 0; every machine starts with Efd0 above its saturation's start, so
    each effective KE is negative and each regulator starts at VR = 0."""
    from tests.psse_crosscheck import system

    wecc = system("wecc_full")
    assert wecc.info["init_max_abs_f"] <= 1e-8 and wecc.info["init_max_abs_g"] <= 1e-8
    readings = [w for w in wecc.info["warnings"] if "ESDC2A" in w]
    assert len(readings) == 16  # each record's KE = 0 and VRMAX = 0 readings, stated
    assert sum("VRMAX = 0 read as no upper limit (999 VT)" in w for w in readings) == 8
    with_esdc2a = sorted(g for g, m in wecc.info["generator_models"].items() if "ESDC2A" in m)
    assert with_esdc2a == ["gen10_1", "gen111_1", "gen117_1", "gen139_1", "gen17_1", "gen42_1",
                           "gen76_1", "gen78_1"]  # fmt: skip
    ke = np.asarray(wecc.params["ESDC2A_KE_eff"])
    assert ke.shape == (8,) and np.all(ke < 0)
    np.testing.assert_allclose(wecc.params["ESDC2A_VRMAX_eff"], NO_LIMIT)
    x0 = np.asarray(wecc.x0)
    vr = [x0[wecc.state_names.index(f"VR[{g}]")] for g in with_esdc2a]
    np.testing.assert_allclose(vr, 0.0, atol=1e-12)
