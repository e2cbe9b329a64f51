"""Campaign spec additions (generators, reference runs, thresholds, limits) and scoring: each run
scored against its scenario's reference exactly once, whichever finishes last."""

from __future__ import annotations

import numpy as np
import pytest
from raptorgrid import repository as repo
from raptorgrid.scoring import score_campaign, score_finished_run, stability_indicators
from raptorgrid.scoring.indicators import tsi
from raptorgrid.spec import CampaignCreate, SpecError, expand
from raptorgrid.tables import Run, RunMetrics, ScenarioIndicators, utcnow
from raptorgrid.zarr_store import open_run
from sqlalchemy import select

from solvers.result import SolveResult, Stats
from solvers.status import RunStatus
from workers.runner import WorkerContext, execute_run

SCORED_SPEC = {
    "name": "scored",
    "network": "wscc9",
    "t_end": 1.0,
    "n_eval": 51,
    "disturbances": [{"kind": "bus_fault", "bus": "bus7", "t_fault": 0.1, "t_clear": 0.2}],
    "methods": [{"method": "radau", "options": {"rtol": [1e-3, 1e-6]}}],
    "reference": {"method": "radau", "options": {"rtol": 1e-10, "atol": 1e-12}},
    "thresholds": {"state_error": 1e-4, "voltage_mae": 1e-4, "kcl_max": 1e-6},
}
"""One fault, two radau configurations and a tight radau reference (fast: no compile)."""


def test_generators_expand_on_the_network(sqlite_settings) -> None:
    spec = CampaignCreate.model_validate(
        {
            "name": "n-1",
            "network": "wscc9",
            "t_end": 1.0,
            "generate": [
                {"kind": "branch_trips", "t": 0.1, "exclude": ["br_1_4"]},
                {"kind": "bus_faults", "t_fault": 0.1, "clearing_time": 0.08},
            ],
            "methods": [{"method": "radau"}],
            "reference": {},
        }
    )
    expansion = expand(spec, settings=sqlite_settings)
    labels = [s.label for s in expansion.scenarios]
    assert len(labels) == 8 + 9 and "branch_trip:br_4_5#0" in labels
    assert "branch_trip:br_1_4#0" not in labels and "bus_fault:bus1#0" in labels
    fault = next(s for s in expansion.scenarios if s.label == "bus_fault:bus9#0").disturbance
    assert fault["t_clear"] == pytest.approx(0.18)
    refs = [r for r in expansion.runs if r.is_reference]
    assert len(refs) == 17 and {r.method for r in refs} == {"kvaerno5"}
    assert refs[0].options == {"rtol": 1e-10, "atol": 1e-12}
    assert len(expansion.runs) == 34


def test_unsupported_generator_and_limits_are_clear(sqlite_settings) -> None:
    base = {"name": "x", "network": "wscc9", "t_end": 1.0, "methods": [{"method": "radau"}]}
    spec = CampaignCreate.model_validate({**base, "generate": [{"kind": "generator_trips"}]})
    try:
        kinds = __import__("models.disturbances", fromlist=["x"]).DISTURBANCE_KINDS
    except ImportError:  # pragma: no cover
        kinds = ()
    if "generator_trip" not in kinds:
        with pytest.raises(SpecError, match="no 'generator_trip' disturbance yet"):
            expand(spec, settings=sqlite_settings)
    small = sqlite_settings.model_copy(update={"max_runs_per_campaign": 10})
    spec = CampaignCreate.model_validate(
        {**base, "generate": [{"kind": "bus_faults"}], "reference": {}}
    )
    with pytest.raises(SpecError, match=r"18 runs .*1 reference.*limit is 10"):
        expand(spec, settings=small)
    with pytest.raises(ValueError, match="unknown method 'nope'"):
        CampaignCreate.model_validate({**base, "reference": {"method": "nope"}})
    with pytest.raises(ValueError, match="at least one disturbance"):
        CampaignCreate.model_validate({**base, "disturbances": []})


@pytest.fixture
def scored(sqlite_settings, sqlite_db):
    spec = CampaignCreate.model_validate(SCORED_SPEC)
    expansion = expand(spec, settings=sqlite_settings)
    with sqlite_db.write() as session:
        campaign, run_ids = repo.create_campaign(
            session=session,
            spec=spec,
            expansion=expansion,
            now=utcnow(),
            raw_spec=spec.model_dump(mode="json"),
        )
    return WorkerContext(settings=sqlite_settings, db=sqlite_db), campaign.id, run_ids


def _rows(ctx: WorkerContext, campaign_id: int):
    with ctx.db.read() as session:
        return session.execute(
            select(Run, RunMetrics)
            .join(RunMetrics, RunMetrics.run_id == Run.id)
            .where(Run.campaign_id == campaign_id)
            .order_by(Run.id)
        ).all()


def test_reference_finishing_last_scores_every_run_once(scored) -> None:
    ctx, campaign_id, run_ids = scored
    ref_id, *others = run_ids  # the reference is the first run of its scenario
    for rid in others:  # runs first: nothing to compare with yet
        assert execute_run(rid, worker="t", ctx=ctx) == "succeeded"
    assert all(m.scored_at is None for _, m in _rows(ctx, campaign_id))
    assert execute_run(ref_id, worker="t", ctx=ctx) == "succeeded"
    rows = {r.id: (r, m) for r, m in _rows(ctx, campaign_id)}
    assert rows[ref_id][0].is_reference and rows[ref_id][1].scored_at is None
    stamps = {rid: rows[rid][1].scored_at for rid in others}
    assert all(stamps.values())
    loose, tight = (rows[rid][1] for rid in others)
    assert loose.state_error > tight.state_error > 0
    assert tight.qualified and not loose.qualified  # 1e-3 misses the 1e-4 state threshold
    # independent recomputation from Zarr (solvers.metrics)
    from raptorgrid.scoring import accuracy_of

    ref = open_run(ctx.settings.zarr_root, campaign_id, ref_id)
    acc = accuracy_of(open_run(ctx.settings.zarr_root, campaign_id, others[1]), ref)
    assert tight.state_error == pytest.approx(acc.state_error)
    assert tight.voltage_mae == pytest.approx(acc.voltage_mae)
    # idempotent: rescoring writes nothing and keeps the first timestamps
    again = score_finished_run(db=ctx.db, zarr_root=ctx.settings.zarr_root, run_id=ref_id)
    assert again.scored == [] and again.indicators == []
    assert score_campaign(db=ctx.db, zarr_root=ctx.settings.zarr_root, campaign_id=campaign_id)
    assert {r.id: m.scored_at for r, m in _rows(ctx, campaign_id) if r.id in stamps} == stamps
    with ctx.db.read() as session:
        ind = session.get(ScenarioIndicators, rows[ref_id][0].scenario_id)
    assert ind.from_reference and ind.run_id == ref_id and ind.stable
    assert 0 < ind.max_angle_spread_deg < 180 and ind.min_voltage_pu < 0.9
    assert 0.2 <= ind.voltage_recovery_t <= 1.0
    assert ind.frequency_nadir_hz == pytest.approx(60.0, abs=0.5)  # speeds rise in a fault
    assert ind.frequency_zenith_hz > 60.0 > ind.frequency_nadir_hz - 1e-9  # so the zenith moves
    assert ind.frequency_zenith_t > 0.1  # after the fault's start


def test_run_finishing_last_is_scored_and_concurrent_writes_count_once(scored) -> None:
    ctx, campaign_id, run_ids = scored
    ref_id, first, second = run_ids
    execute_run(ref_id, worker="t", ctx=ctx)
    execute_run(first, worker="t", ctx=ctx)
    rows = {r.id: m for r, m in _rows(ctx, campaign_id)}
    assert rows[first].scored_at is not None
    execute_run(second, worker="t", ctx=ctx)
    # two scorers racing on one run: the conditional UPDATE lets one write
    from raptorgrid.scoring.score import _write_score
    from raptorgrid.spec import Thresholds

    from solvers.metrics import Accuracy

    fake = Accuracy(9.9, 9.9, 9.9)
    with ctx.db.write() as session:
        assert not _write_score(session, second, fake, Thresholds(), utcnow())
    assert {r.id: m for r, m in _rows(ctx, campaign_id)}[second].state_error != 9.9


def _trajectory(x: np.ndarray, y: np.ndarray, events: list[dict] | None = None) -> SolveResult:
    """A result on 11 grid points with the indicators' named states and outputs."""
    return SolveResult(
        status=RunStatus.SUCCEEDED, message="", method="test", options={}, stats=Stats(),
        state_names=("delta[a]", "delta[b]", "omega[a]", "omega[b]"), alg_names=(),
        output_names=("V[1]", "V[2]", "omega[a]", "omega[b]"),
        t=np.zeros(0), x=np.zeros((0, 4)), z=np.zeros((0, 0)), t_eval=np.linspace(0, 1, 11),
        x_eval=x, z_eval=np.zeros((11, 0)), y_eval=y, events=events or [],
    )  # fmt: skip


def test_indicators_by_name() -> None:
    delta = np.stack([np.zeros(11), np.radians(np.linspace(0, 400, 11))], axis=1)
    volts = np.ones((11, 2))
    volts[3:6, 1] = [0.5, 0.7, 0.95]
    volts[6, 1] = 0.85
    x, y = np.hstack([delta, np.ones((11, 2))]), np.hstack([volts, 1 - 0.01 * delta])
    ds = _trajectory(x, y)
    ind = stability_indicators(ds, f_hz=50.0)
    assert ind.max_angle_spread_deg == pytest.approx(400.0) and not ind.stable
    assert (ind.min_voltage_pu, ind.min_voltage_t) == (0.5, pytest.approx(0.3))
    assert ind.voltage_recovery_t == pytest.approx(0.7)
    assert ind.frequency_nadir_t == pytest.approx(1.0)
    # omega = 1 - 0.01 delta: the speeds only fall, so the zenith is the start, 50 Hz
    assert (ind.frequency_zenith_hz, ind.frequency_zenith_t) == (pytest.approx(50.0), 0.0)
    assert ind.frequency_nadir_hz < 50.0
    assert ind.severity == pytest.approx(400 / 360)  # >= 1: unstable, TSI < 0
    assert tsi(ind.severity) == pytest.approx(100 * (360 - 400) / (360 + 400))
    # a cleared fault whose machines separate by 200 deg and swing back is stable (TSI > 0),
    # whatever its voltage dip: the dip is reported beside the index, not mixed into it
    swung = x.copy()
    swung[:, 1] = np.radians(np.concatenate([np.linspace(0, 200, 6), np.linspace(160, 0, 5)]))
    back = stability_indicators(_trajectory(swung, y), f_hz=50.0)
    assert back.stable and back.severity == pytest.approx(200 / 360) and tsi(back.severity) > 0
    # a generator trip: the tripped machine (b) runs away unloaded; out of service, it leaves
    # the angle separation and the centre of inertia (a branch trip's label changes nothing)
    tripped = _trajectory(x, y, [{"time": 0.1, "label": "trip b"}])
    out = stability_indicators(tripped, f_hz=50.0)
    assert out.stable and out.max_angle_spread_deg == 0.0
    assert out.frequency_nadir_hz == pytest.approx(50.0)  # omega[a] = 1 throughout
    line = _trajectory(x, y, [{"time": 0.1, "label": "trip br_1_2"}])
    assert stability_indicators(line, f_hz=50.0).max_angle_spread_deg == pytest.approx(400.0)
