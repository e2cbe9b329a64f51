"""PSS/E dynamic data: records attach to machines by bus and ID, unsupported models are listed in
one error (or left out on request with a stored warning), and every imported case starts at an
equilibrium to 1e-8."""

from __future__ import annotations

import numpy as np
import pytest

from models.devices import MODELS
from models.psse.case import ANDES_LOAD_CONVERSION, build_psse_case, convert_loads
from models.psse.dyr import parse_dyr
from models.psse.raw import parse_raw
from models.psse.records import PsseError
from tests.psse_crosscheck import DATA

KUNDUR_RAW = (DATA / "kundur.raw").read_text()
KUNDUR_ESST4B = (DATA / "kundur_full.dyr").read_text().replace("'EXDC2 '", "'ESST4B'")
"""kundur_full.dyr with an exciter model not supported (ESST4B) in place of its EXDC2 records
(lines 4, 13, 22, 31)."""
GENCLS = "".join(f"{b} 'GENCLS' 1 6.5 0.0 /\n" for b in (1, 2, 3, 4))


def build(dyr: str, **kw):
    return build_psse_case(KUNDUR_RAW, dyr, "kundur", raw_file="kundur.raw",
                           dyr_file="k.dyr", **kw)  # fmt: skip


def test_unsupported_models_are_listed_in_one_error() -> None:
    text = KUNDUR_ESST4B + "1 'IEEEG3' 1 " + "1.0 " * 14 + "/\n"
    with pytest.raises(PsseError) as err:
        parse_dyr(text, "k.dyr")
    message = str(err.value)
    for supported in ("GENROU", "TGOV1"):
        assert f"{supported} (" not in message
    for piece in (
        "ESST4B (lines 4, 13, 22, 31); IEEEG3 (line 38)",
        "Supported: " + ", ".join(sorted(MODELS)),
    ):
        assert piece in message, message  # fmt: skip
    wecc = parse_dyr((DATA / "wecc_full.dyr").read_text(), "wecc_full.dyr")  # ESDC2A supported
    assert [r.line for r in wecc.records if r.model == "ESDC2A"] == [60, 111, 192, 275, 292, 324,
                                                                    355, 388]  # fmt: skip


def test_substitution_leaves_controllers_out_with_a_stored_warning() -> None:
    raw, dyr = (DATA / "kundur.raw").read_text(), KUNDUR_ESST4B
    system = build_psse_case(raw, dyr, "kundur", raw_file="kundur.raw", dyr_file="kundur_full.dyr",
                             substitute=True)  # fmt: skip
    warnings = system.info["warnings"]
    assert any("ESST4B exciter at lines 4, 13, 22, 31 left out" in w for w in warnings)
    assert any("'Toggle' record" in w and "read past" in w for w in warnings)
    assert system.info["generator_models"]["gen1_1"] == "GENROU+TGOV1"
    with pytest.raises(PsseError, match="ESST4B"):
        build_psse_case(raw, dyr, "kundur", raw_file="kundur.raw", dyr_file="kundur_full.dyr")


def test_a_stabilizer_needs_an_exciter_and_is_left_out_with_a_substituted_one() -> None:
    ieeest = "1 'IEEEST' 1 1 0 0 0 0 0 0 0 0 0 0 0.75 1 4.2 -2 0.1 -0.1 0 0 /\n"
    base = (DATA / "kundur_genrou_tgov1.dyr").read_text()
    with pytest.raises(ValueError, match=r"k.dyr, line \d+: IEEEST stabilizer needs an exciter"):
        build(base + ieeest)
    system = build(KUNDUR_ESST4B + ieeest, substitute=True)
    assert any("IEEEST stabilizer left out (its machine has no exciter" in w
               for w in system.info["warnings"])  # fmt: skip
    assert system.info["generator_models"]["gen1_1"] == "GENROU+TGOV1"


def test_an_unsupported_machine_cannot_be_substituted() -> None:
    with pytest.raises(PsseError, match="GENTPJ"):
        parse_dyr("1 'GENTPJ' 1 " + "1.0 " * 15 + "/\n", "g.dyr", substitute=True)


@pytest.mark.parametrize(
    ("dyr", "words"),
    [
        ("1 'GENCLS' 1 6.5 /\n", "GENCLS has 2 values (H, D); 1 given"),
        ("1 'GENCLS' 1 6.5 abc /\n", "field D = 'abc' is not a number"),
        ("9 'GENCLS' 1 6.5 0 /\n", "no in-service machine '1' at bus 9"),
        ("1 'GENCLS' 1 6.5 0\n", "not ended by '/'"),
        (GENCLS + "1 'GENCLS' 1 6.5 0 /\n", "already has a machine (GENCLS, k.dyr, line 1)"),
        (GENCLS.replace("4 'GENCLS' 1 6.5 0.0", "4 'TGOV1' 1 0.05 0.5 1.1 0.3 1 2 0"),
         "no machine model for the in-service generator(s) gen4_1"),
    ],
)  # fmt: skip
def test_bad_records_name_file_and_line(dyr: str, words: str) -> None:
    with pytest.raises(PsseError) as err:
        build(dyr)
    assert words in str(err.value)
    assert str(err.value).startswith("k.dyr")


def test_bad_parameter_values_name_the_record() -> None:
    with pytest.raises(ValueError, match=r"k.dyr, line 2: GENCLS H = -1 must be > 0"):
        build(GENCLS.replace("2 'GENCLS' 1 6.5", "2 'GENCLS' 1 -1"))


@pytest.mark.parametrize(
    ("raw", "dyr"),
    [
        ("kundur.raw", "kundur_genrou_tgov1.dyr"),
        ("kundur.raw", "kundur_sexs_tgov1.dyr"),
        ("kundur.raw", "kundur_full.dyr"),
        ("kundur.raw", "kundur_gensal_exdc2.dyr"),
        ("ieee14.raw", "ieee14_exst1_ieeeg1.dyr"),
        ("ieee14.raw", "ieee14_genrou_tgov1.dyr"),
        ("ieee14.raw", "ieee14.dyr"),
        ("wecc.raw", "wecc_gencls.dyr"),
        ("npcc.raw", "npcc_full.dyr"),
        ("ieee39_repaired.raw", "ieee39_repaired.dyr"),
    ],
)
def test_imported_cases_start_at_equilibrium(raw: str, dyr: str) -> None:
    system = build_psse_case((DATA / raw).read_text(), (DATA / dyr).read_text(), raw,
                             raw_file=raw, dyr_file=dyr)  # fmt: skip
    assert system.info["init_max_abs_f"] <= 1e-8
    assert system.info["init_max_abs_g"] <= 1e-8
    assert len(system.names["generator"]) == system.info["n_gen"]
    assert all(name.startswith(("delta[", "omega[", "Eq_p[", "psi_k", "Ed_p[", "Ed_pp[", "Pv[",
                                "Pt[", "xl[", "Efd[", "Vc[", "VR[", "xf[", "VA[", "xll[", "GV[",
                                "x1[", "x2[", "x3[", "x4[", "VM[", "pt1[", "pt2[", "pwo[",
                                "pll1[", "pll2[", "pll3[", "pf1[", "pf2[", "pf3[", "pf4["))
               for name in system.state_names)  # fmt: skip


def test_load_conversion_keeps_the_operating_point() -> None:
    s, i, y = np.array([1.0 + 0.5j]), np.array([0.2 + 0.1j]), np.array([0.1 - 0.05j])
    vm = np.array([0.95])
    s2, i2, y2 = convert_loads(s, i, y, vm, (0.5, 0.25, 0.0, 1.0))
    before = s + i * vm + y * vm**2
    after = s2 + i2 * vm + y2 * vm**2
    assert abs(after - before)[0] < 1e-15
    assert s2[0] == pytest.approx(0.25 + 0.0j)
    with pytest.raises(ValueError, match="p_to_i = 1.5"):
        convert_loads(s, i, y, vm, (1.5, 0.0, 0.0, 0.0))


def test_loads_are_converted_by_default_and_kept_as_given_on_request() -> None:
    """By default the constant-power parts go to constant admittance (PSS/E's CONL practice,
    ANDES's default); with ``load_conversion=None`` the dynamics draw each load record's parts
    as the power flow does (Kundur's loads: constant power). Both start at the same operating
    point, at equilibrium, and the warning names the load model used."""
    dyr = (DATA / "kundur_sexs_tgov1.dyr").read_text()
    given, converted = build(dyr, load_conversion=None), build(dyr)
    assert build(dyr, load_conversion=ANDES_LOAD_CONVERSION).params["load_g"].tolist() == (
        converted.params["load_g"].tolist()
    )
    loads = {ld.bus: complex(ld.pl, ld.ql) / 100.0 for ld in parse_raw(KUNDUR_RAW).loads}
    for system in (given, converted):
        assert system.info["init_max_abs_f"] <= 1e-8 and system.info["init_max_abs_g"] <= 1e-8
    p, q = given.params, converted.params
    assert np.sum(p["load_pp"]) == pytest.approx(sum(s.real for s in loads.values()), rel=1e-12)
    assert np.sum(p["load_pq"]) == pytest.approx(sum(s.imag for s in loads.values()), rel=1e-12)
    assert not np.any(p["load_g"]) and not np.any(p["load_ip"])
    assert not np.any(q["load_pp"]) and not np.any(q["load_pq"]) and np.all(q["load_g"] > 0)
    assert given.info["load_conversion"] == dict.fromkeys(("p_to_i", "p_to_z", "q_to_i",
                                                            "q_to_z"), 0.0)  # fmt: skip
    assert any("as the load records give them" in w and "no conversion" in w
               for w in given.info["warnings"])  # fmt: skip
    assert any("1 to constant admittance" in w for w in converted.info["warnings"])


def test_every_campaign_generator_runs_on_an_imported_case() -> None:
    """N-1, a fault at every bus and every generator trip on the imported Kundur case: each
    scenario is valid and one of each kind integrates (Radau)."""
    from raptorgrid.campaign_gen import BranchTrips, BusFaults, GeneratorTrips

    from models.scenarios import make_scenario
    from solvers import solve

    # loads converted to constant admittance (as ANDES): Kundur's constant-power loads as given
    # have no algebraic solution through a bus fault (PSS/E's PQBRAK characteristic, which would
    # reduce them at low voltage, is not modelled; docs/models.md)
    system = build((DATA / "kundur_sexs_tgov1.dyr").read_text(),
                   load_conversion=ANDES_LOAD_CONVERSION)  # fmt: skip
    for generator, count in ((BranchTrips(t=0.1), 15), (BusFaults(t_fault=0.1), 10),
                             (GeneratorTrips(t=0.1), 4)):  # fmt: skip
        disturbances = generator.disturbances(system)
        assert len(disturbances) == count
        scenarios = [make_scenario(system, d, t_end=0.5, n_eval=11) for d in disturbances]
        result = solve(system, scenarios[-1], "radau", rtol=1e-5)
        assert result.succeeded, result.message


IEEEX1_RECORD = (
    "21 'IEEEX1' 1 {TR} 50 0.06 {TB} 0 1.0 -1.0 {KE} 0.5 0.08 1.0 0 2.0 0.0016 3.0 1.73 /\n"
)


def test_ieeex1_bypasses_zero_time_constants_and_refuses_ke_zero() -> None:
    """A zero TR (or TB) removes the block, as PSS/E does: the states of the bypassed blocks
    stay put at the equilibrium and the two forms give the same derivative there."""
    import jax.numpy as jnp

    from models.devices import IEEEX1
    from models.devices.ieeex1 import PARAMS

    def params(tr: float, tb: float, ke: float) -> dict:
        values = [float(v) for v in IEEEX1_RECORD.format(TR=tr, TB=tb, KE=ke).split()[3:-1]]
        return {k: np.array([v]) for k, v in zip(PARAMS, values, strict=True)}

    for tr, tb in ((0.0, 0.0), (0.02, 0.5)):
        p = params(tr, tb, -0.02)
        assert IEEEX1.check(p) == []
        init = IEEEX1.init(np.array([2.1]), np.array([1.02]), p)
        p.update(sat_a=init["sat_a"], sat_b=init["sat_b"])
        xs = tuple(jnp.asarray(init[s]) for s in IEEEX1.states)
        d = IEEEX1.derivatives(xs, 1.02, init["vref"], 0.0, p)
        assert max(abs(float(v[0])) for v in d) < 1e-12
        moved = IEEEX1.derivatives(xs, 1.0, init["vref"], 0.0, p)  # a 0.02 pu voltage dip
        if tr == 0:  # bypassed transducer: the regulator sees the dip at once
            assert float(moved[0][0]) == 0.0 and float(moved[2][0]) > 0
        else:  # the transducer lags it
            assert float(moved[0][0]) == pytest.approx(-0.02 / tr) and float(moved[2][0]) == 0
    assert [name for name, _, _ in IEEEX1.check(params(0.0, 0.0, 0.0))] == ["KE"]


def test_ieee39_spreadsheet_data_load_as_given_with_warnings() -> None:
    """``ieee39_full.raw``/``.dyr`` are written from ANDES's ieee39_full.xlsx (and checked value by
    value) by ``tests/data/psse/ieee39_from_xlsx.py``. Nine of its ten GENROU machines have
    X''d below Xl (X''d copied from the raw's ZSORCE, e.g. 0.00792 pu against Xl 0.125), which
    PSS/E's data sheet does not admit but GENROU's equations can use: the pair loads as given
    with a warning naming each record, starts at equilibrium and runs a bus fault; with
    ``strict`` it is refused naming each record."""
    from models.disturbances import BusFault
    from models.scenarios import make_scenario
    from solvers import solve

    texts = ((DATA / "ieee39_full.raw").read_text(), (DATA / "ieee39_full.dyr").read_text())
    files = {"raw_file": "ieee39_full.raw", "dyr_file": "ieee39_full.dyr"}
    with pytest.raises(ValueError) as err:
        build_psse_case(*texts, "ieee39", strict=True, **files)
    message = str(err.value)
    assert message.count("must be > Xl") == 9
    assert "ieee39_full.dyr, line 1: GENROU Xd_pp = 0.00792 must be > Xl" in message
    system = build_psse_case(*texts, "ieee39", **files)
    warned = [w for w in system.info["warnings"] if "must be > Xl" in w]
    assert len(warned) == 9 and all("not needed by the equations" in w for w in warned)
    assert system.info["init_max_abs_f"] <= 1e-8 and system.info["init_max_abs_g"] <= 1e-8
    fault = BusFault(bus="bus16", t_fault=0.1, t_clear=0.2, x=0.01)
    result = solve(system, make_scenario(system, fault, t_end=1.0, n_eval=51), "radau", rtol=1e-5)
    assert result.succeeded, result.message


def test_ieee39_repaired_pair_keeps_genrou_ordering_and_adds_the_stabilizers() -> None:
    """``ieee39_repaired.raw``/``.dyr`` (same script): each GENROU machine whose X''d is not above
    Xl gets X''d = X''q = (Xl + X'd) / 2, its ZSORCE the same; the others are unchanged, so
    Xl < X''d <= X'q <= X'd holds on all ten. The spreadsheet's IEEEST stabilizers (input code
    3, electrical power) are written too; the pair builds (equilibrium: above)."""
    full, repaired = ({(rec.bus, rec.model): rec.values for rec in parse_dyr(
        (DATA / f"{stem}.dyr").read_text(), f"{stem}.dyr").records} for stem in
        ("ieee39_full", "ieee39_repaired"))  # fmt: skip
    changed = 0
    for (bus, model), values in full.items():
        new = repaired[(bus, model)]
        if model != "GENROU":
            assert new == values
            continue
        xd_p, xq_p, xd_pp, xl = new[8], new[9], new[10], new[11]
        assert xl < xd_pp <= xq_p <= xd_p
        if values[10] <= xl:
            changed += 1
            assert xd_pp == pytest.approx((xl + xd_p) / 2, abs=1e-15)
            assert new[:10] + new[11:] == values[:10] + values[11:]
        else:
            assert new == values
    assert changed == 9
    assert sorted(bus for bus, model in repaired if model == "IEEEST") == list(range(30, 40))
    zsorce = {g.bus: g.zx for g in parse_raw((DATA / "ieee39_repaired.raw").read_text()).generators}
    assert zsorce == {bus: v[10] for (bus, model), v in repaired.items() if model == "GENROU"}
