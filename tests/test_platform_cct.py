"""Critical-clearing-time campaigns: each probe a run, the bracket moved in the transaction
that records it, the result checked against an independent fine sweep of clearing times."""

from __future__ import annotations

import numpy as np
import pytest
from raptorgrid import repository as repo
from raptorgrid.repository.cct import cct_table
from raptorgrid.spec import CampaignCreate, SpecError, expand
from raptorgrid.tables import Run, RunMetrics, utcnow
from sqlalchemy import select

from workers.runner import WorkerContext, execute_batch

FAULT = {"kind": "bus_fault", "bus": "bus7", "t_fault": 0.1, "t_clear": 0.2, "x": 0.001}
METHOD = {"method": "radau", "options": {"rtol": 1e-6}}
SPEC = {
    "name": "cct",
    "network": "wscc9",
    "t_end": 1.6,
    "n_eval": 161,
    "disturbances": [FAULT],
    "methods": [METHOD],
    "cct": {"resolution": 0.01, "max_clearing": 0.5, "window": 1.0},
}


def test_a_cct_spec_is_checked(sqlite_settings) -> None:
    def errors(**changes: object) -> str:
        with pytest.raises(SpecError) as caught:
            expand(CampaignCreate.model_validate({**SPEC, **changes}), settings=sqlite_settings)
        return str(caught.value.errors)

    assert "reference" in errors(reference={})
    assert "(bus_fault, line_fault), not branch_trip" in errors(
        disturbances=[{"kind": "branch_trip", "branch": "br_5_6", "t": 0.1}]
    )
    assert "t_end must be at least" in errors(t_end=1.2)
    plan = expand(CampaignCreate.model_validate(SPEC), settings=sqlite_settings)
    assert [r.clearing_time for r in plan.runs] == [0.5]  # the first probe: the longest


def stable_at(duration: float, fault: dict = FAULT) -> bool:
    """The verdict of one solve with the fault cleared after ``duration`` (no platform)."""
    from pydantic import TypeAdapter
    from raptorgrid.scoring.indicators import stability_indicators

    from models.disturbances import Disturbance
    from models.library import build_system
    from models.scenarios import make_scenario
    from solvers import solve

    system = build_system("wscc9")
    cleared = {**fault, "t_clear": fault["t_fault"] + duration}
    fault = TypeAdapter(Disturbance).validate_python(cleared)
    scenario = make_scenario(system, fault, t_end=SPEC["t_end"], n_eval=SPEC["n_eval"])
    result = solve(system, scenario, "radau", rtol=1e-6)
    return stability_indicators(result).stable


@pytest.mark.slow
def test_the_search_brackets_the_cct_found_by_a_fine_sweep(sqlite_settings, sqlite_db) -> None:
    spec = CampaignCreate.model_validate(SPEC)
    campaign_id, rounds = run_search(sqlite_settings, sqlite_db, SPEC)
    with sqlite_db.read() as session:
        (row,) = cct_table(session=session, campaign_id=campaign_id)
        final = repo.get_campaign(session=session, campaign_id=campaign_id)
        durations = sorted(session.scalars(
            select(Run.clearing_time).where(Run.campaign_id == campaign_id)
        ))  # fmt: skip
        stopped = session.execute(
            select(Run.clearing_time, RunMetrics.final_time, RunMetrics.warnings)
            .join(RunMetrics, RunMetrics.run_id == Run.id)
            .where(Run.campaign_id == campaign_id, RunMetrics.warnings.is_not(None))
        ).all()
    assert final.status == "finished" and final.n_runs == rounds == row["probes"]
    # unstable probes stop once the separation passes 360 deg (the verdict cannot change);
    # the bisection below shows their verdicts are still the full solves'
    assert stopped and all(
        t < SPEC["t_end"] and "rotor-angle separation" in w and d > row["cct_s"]
        for d, t, w in stopped
    ), stopped
    assert row["status"] == "done", row
    cct, hi = row["cct_s"], row["hi_s"]
    assert hi - cct <= 0.01 + 1e-12 and row["probes"] <= spec.cct.most_probes
    assert 0.5 in durations and row["solve_seconds"] > 0
    # independently: a 2.5 ms sweep around the bracket finds the same boundary
    sweep = np.arange(cct - 0.01, hi + 0.0125, 0.0025)
    verdicts = [stable_at(float(d)) for d in sweep]
    boundary = next(d for d, ok in zip(sweep, verdicts, strict=True) if not ok)
    assert all(verdicts[: list(sweep).index(boundary)])  # stable below, then unstable
    assert cct < boundary <= hi + 1e-12

    # the API serves the same table (typed), and a campaign without a search says so
    from fastapi.testclient import TestClient
    from raptorgrid.api import create_app

    with TestClient(create_app(sqlite_settings)) as client:
        body = client.get(f"/campaigns/{campaign_id}/cct").json()
        listed = client.get("/campaigns").json()["data"]
    assert body["data"][0]["cct_s"] == cct and body["resolution_s"] == 0.01
    assert "TSI > 0" in body["criterion"] and listed[0]["cct"] is True


def test_a_probe_whose_state_ran_away_is_unstable_other_failures_end_the_search(
    sqlite_settings, sqlite_db
) -> None:
    from raptorgrid.repository.cct import Probe, advance

    from solvers.status import RunStatus

    spec = CampaignCreate.model_validate(
        {**SPEC, "disturbances": [FAULT, {**FAULT, "bus": "bus5"}]}
    )
    with sqlite_db.write() as session:
        campaign, (first, second) = repo.create_campaign(
            session=session, spec=spec, expansion=expand(spec, settings=sqlite_settings),
            now=utcnow(),
        )  # fmt: skip
        queued = advance(session=session, probes=[
            Probe(first, RunStatus.FAILED, "diverged", None),
            Probe(second, RunStatus.FAILED, "newton_failed", None),
        ])  # fmt: skip
        assert (
            advance(session=session, probes=[Probe(first, RunStatus.FAILED, "diverged", None)])
            == {}
        )
    assert set(queued) == {first}  # the diverged probe bisected on; guarded against replays
    with sqlite_db.read() as session:
        rows = {r["scenario"]: r for r in cct_table(session=session, campaign_id=campaign.id)}
        n_runs = repo.get_campaign(session=session, campaign_id=campaign.id).n_runs
    ran_away, broke = rows["bus_fault:bus7#0"], rows["bus_fault:bus5#0"]
    assert (ran_away["status"], ran_away["hi_s"], ran_away["probes"]) == ("running", 0.5, 1)
    assert broke["status"] == "failed" and "newton_failed" in broke["message"]
    assert n_runs == 3  # the next probe counts in the campaign


def run_search(sqlite_settings, sqlite_db, spec_dict: dict) -> tuple[int, int]:
    """Create the CCT campaign and play what a worker would receive, the queued probes one round
    at a time, until none is queued; returns (campaign id, rounds)."""
    spec = CampaignCreate.model_validate(spec_dict)
    with sqlite_db.write() as session:
        campaign, _ = repo.create_campaign(
            session=session, spec=spec, expansion=expand(spec, settings=sqlite_settings),
            now=utcnow(),
        )  # fmt: skip
    context = WorkerContext(settings=sqlite_settings, db=sqlite_db)
    rounds = 0
    while True:
        with sqlite_db.read() as session:
            queued = list(session.scalars(
                select(Run.id).where(Run.campaign_id == campaign.id, Run.status == "queued")
            ))  # fmt: skip
        if not queued:
            return campaign.id, rounds
        assert execute_batch(queued, worker="t", ctx=context) == ["succeeded"] * len(queued)
        rounds += 1


def test_a_fault_near_a_line_end_cleared_by_tripping_the_line(sqlite_settings, sqlite_db) -> None:
    """The line-end fault's search brackets a boundary that direct solves confirm, and the
    trip leaves a weaker network, so its CCT is at most the same bus fault's."""
    line = {"kind": "line_fault", "branch": "br_6_7", "end": "to", "t_fault": 0.1,
            "t_clear": 0.2, "x": 0.001}  # fmt: skip
    campaign_id, _ = run_search(sqlite_settings, sqlite_db, {**SPEC, "disturbances": [FAULT, line]})
    with sqlite_db.read() as session:
        rows = cct_table(session=session, campaign_id=campaign_id)
    by_kind = {r["scenario"].split(":")[0]: r for r in rows}
    assert by_kind.keys() == {"bus_fault", "line_fault"}
    assert all(r["status"] == "done" for r in rows), rows
    cut = by_kind["line_fault"]
    assert cut["scenario"] == "line_fault:br_6_7:to end#0"
    assert cut["cct_s"] <= by_kind["bus_fault"]["cct_s"] + 1e-12
    assert stable_at(cut["cct_s"], line) and not stable_at(cut["hi_s"], line)
    # generated: a line fault at both ends of every branch, each its own scenario
    spec = CampaignCreate.model_validate(
        {**SPEC, "disturbances": [], "generate": [{"kind": "line_faults", "end": "both"}]}
    )
    labels = [s.label for s in expand(spec, settings=sqlite_settings).scenarios]
    assert len(labels) == len(set(labels)) == 18
