"""`raptorgrid report`: tables, two PNG plots and a self-contained HTML page from SQL."""

from __future__ import annotations

import pytest
from raptorgrid import repository as repo
from raptorgrid.report import write_report
from raptorgrid.spec import CampaignCreate, expand
from raptorgrid.tables import utcnow

from workers.runner import WorkerContext, execute_run

SPEC = {
    "name": "report",
    "network": "wscc9",
    "t_end": 1.1,
    "n_eval": 111,
    "disturbances": [{"kind": "branch_trip", "branch": "br_5_6", "t": 0.1}],
    "methods": [
        {"method": "raptor"},
        {"method": "radau", "options": {"rtol": [1e-3, 1e-7]}},
    ],
    "reference": {"method": "radau", "options": {"rtol": 1e-11, "atol": 1e-13}},
    "thresholds": {"state_error": 1e-6, "voltage_mae": 1e-6, "kcl_max": 1e-8},
}


def solved_campaign(spec: dict, settings, db) -> int:  # noqa: ANN001
    """The campaign of ``spec``, every run solved in this process; its id."""
    parsed = CampaignCreate.model_validate(spec)
    with db.write() as session:
        campaign, run_ids = repo.create_campaign(
            session=session, spec=parsed, expansion=expand(parsed, settings=settings),
            now=utcnow(),
        )  # fmt: skip
    context = WorkerContext(settings=settings, db=db)
    for run_id in run_ids:
        assert execute_run(run_id, worker="test", ctx=context) == "succeeded"
    return campaign.id


@pytest.mark.slow
def test_report_writes_plots_and_html_with_the_campaign_numbers(
    sqlite_settings, sqlite_db, tmp_path
):
    campaign_id = solved_campaign(SPEC, sqlite_settings, sqlite_db)
    with sqlite_db.read() as session:
        data, files = write_report(
            session=session,
            campaign_id=campaign_id,
            out_dir=tmp_path,
            zarr_root=sqlite_settings.zarr_root,
        )
    assert len(files.trajectory_pngs) == 1  # one scenario: the worst is the only one
    for png in (files.accuracy_png, files.accepted_png, *files.trajectory_pngs):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    worst = data.trajectories[0]
    assert worst.label == data.ranking[0]["label"]
    assert (worst.method["method"], worst.method["config"]) == (
        "raptor",
        data.table_one["subject_config"],
    )  # Table I's subject at its fastest qualified configuration, over the reference
    assert worst.reference is not None and worst.reference["run_id"] != worst.method["run_id"]
    page = files.html.read_text()
    assert page.count("data:image/png;base64,") == 3  # self-contained
    assert "Worst contingencies: trajectories" in page
    radau = next(r for r in data.table_one["rows"] if r["method"] == "radau")
    assert radau["config"] == "rtol=1e-07"  # rtol 1e-3 is not accuracy-qualified
    assert radau["speedup"] is not None and f"{radau['speedup']:.2f}" in page
    assert data.ranking and data.ranking[0]["label"] in page
    # titled with the campaign's name and network; an empty table says "none"
    title = f"{SPEC['name']} — {SPEC['network']} (campaign {campaign_id})"
    assert f"<title>{title}</title>" in page and f"<h1>{title}</h1>" in page
    assert "<h2>Failures</h2><p>none</p>" in page


@pytest.mark.slow
def test_report_without_a_reference_still_draws_work_and_trajectories(
    sqlite_settings, sqlite_db, tmp_path
):
    """No reference: nothing is scored, yet the work plot shows every configuration and the
    trajectory plot the method's run (before, both scatter plots had empty axes)."""
    radau_only = {"method": "radau", "options": {"rtol": [1e-3, 1e-5]}}
    spec = {**SPEC, "methods": [radau_only], "reference": None}
    campaign_id = solved_campaign(spec, sqlite_settings, sqlite_db)
    with sqlite_db.read() as session:
        data, files = write_report(session=session, campaign_id=campaign_id, out_dir=tmp_path,
                                   zarr_root=sqlite_settings.zarr_root)  # fmt: skip
    assert data.pareto == [] and data.table_one["subject_config"] is None
    assert [t.reference for t in data.trajectories] == [None]
    assert data.trajectories[0].method["method"] == "radau"
    import matplotlib.image

    pixels = matplotlib.image.imread(files.accepted_png)
    # two configurations drawn: the plot holds non-background colours beyond axes and text
    coloured = (abs(pixels[..., 0] - pixels[..., 2]) > 0.3).sum()
    assert coloured > 50
    assert files.trajectory_pngs and files.trajectory_pngs[0].stat().st_size > 5000
