"""``raptorgrid check`` (``raptorgrid.check``) on SQLite and PostgreSQL: a consistent campaign
passes; a lost result, a result of another run, totals that differ from their runs and a run
stuck under an expired lease are each reported, and the exit status says so."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta

import numpy as np
import pytest
import xarray as xr
from raptorgrid import migrate
from raptorgrid import repository as repo
from raptorgrid.cli import app as cli_app
from raptorgrid.db import Database
from raptorgrid.spec import CampaignCreate, expand
from raptorgrid.tables import Campaign, ConfigTotals, Run, utcnow
from raptorgrid.zarr_store import campaign_store, run_group, write_run
from sqlalchemy import update
from typer.testing import CliRunner

from solvers.status import RunStatus

METRICS = {
    "accepted": 10, "rejected": 1, "newton_iterations": 31, "algebraic_iterations": 0,
    "jacobian_evaluations": 2, "lu_factorizations": 4, "symbolic_analyses": 0,
    "rhs_evaluations": 50, "compile_seconds": 0.5, "load_seconds": 0.0, "solve_seconds": 0.1,
    "overhead_seconds": 0.01, "n_points": 5, "n_accepted_points": 5, "final_time": 1.0,
}  # fmt: skip


@pytest.fixture(params=["sqlite", "postgresql"])
def settings(request, make_settings):
    overrides = {}
    if request.param == "postgresql":
        overrides["database_url"] = request.getfixturevalue("postgres_url")
    settings = make_settings(**overrides)
    migrate.upgrade(settings)
    return settings


def _dataset(run_id: int) -> xr.Dataset:
    t = np.linspace(0.0, 1.0, 5)
    return xr.Dataset(
        {"x": (("time", "state"), np.outer(t, [1.0, 2.0]))},
        coords={"time": t, "state": np.array(["a", "b"], dtype=object)},
        attrs={"run_id": run_id},
    )


def _campaign(db: Database, settings, small_spec: dict) -> tuple[int, list[int]]:  # noqa: ANN001
    """Four runs: two succeeded with their results written, one failed, one still running."""
    spec = CampaignCreate.model_validate(small_spec)
    with db.write() as session:
        campaign, run_ids = repo.create_campaign(
            session=session, spec=spec, expansion=expand(spec, settings=settings), now=utcnow()
        )
    cid = campaign.id
    outcomes = [RunStatus.SUCCEEDED, RunStatus.SUCCEEDED, RunStatus.FAILED, None]
    for run_id, status in zip(run_ids, outcomes, strict=True):
        with db.write() as session:
            claim = repo.claim_run(session=session, run_id=run_id, worker="host:1",
                                   now=utcnow(), lease_seconds=600.0, max_attempts=3)  # fmt: skip
        assert claim is not None
        if status is None:
            continue
        group = None
        if status == RunStatus.SUCCEEDED:
            group = write_run(settings.zarr_root, cid, run_id, _dataset(run_id), fsync=False)
        with db.write() as session:
            repo.finish_run(
                session=session, run_id=run_id, attempt=claim.attempt, status=status,
                now=utcnow(), zarr_group=group, metrics=METRICS,
            )  # fmt: skip
    return cid, run_ids


def _check(settings, monkeypatch, *args: str) -> tuple[int, str]:  # noqa: ANN001
    for key, value in settings.as_env().items():
        monkeypatch.setenv(key, value)
    result = CliRunner().invoke(cli_app, ["check", *args], catch_exceptions=False)
    return result.exit_code, result.stdout


def test_check_reports_lost_results_wrong_totals_and_stuck_runs(
    settings, small_spec, monkeypatch
) -> None:
    db = Database.from_settings(settings)
    try:
        cid, run_ids = _campaign(db, settings, small_spec)
        code, out = _check(settings, monkeypatch, "--campaign", str(cid))
        assert code == 0, out
        assert f"campaign {cid}: 2 results read; consistent" in out

        first, second, failed, running = run_ids
        shutil.rmtree(campaign_store(settings.zarr_root, cid) / run_group(second))
        with db.write() as session:
            session.execute(
                update(Run).where(Run.id == first).values(zarr_group=f"campaign_{cid}.zarr/run_0")
            )
            session.execute(update(Campaign).where(Campaign.id == cid).values(n_failed=5))
            session.execute(
                update(ConfigTotals)
                .where(ConfigTotals.campaign_id == cid, ConfigTotals.config_label.contains("1e-05"))
                .values(succeeded=ConfigTotals.succeeded + 1)
            )
            session.execute(
                update(Run)
                .where(Run.id == running)
                .values(lease_until=utcnow() - timedelta(hours=1))
            )
        code, out = _check(settings, monkeypatch, "--campaign", str(cid), "--stale", "60")
        assert code == 1, out
        assert f"run {first}: its result is 'campaign_{cid}.zarr/run_0', not its own" in out
        assert f"run {second}: its result cannot be read (FileNotFoundError" in out
        assert f"campaign {cid}: n_failed is 5, its runs 1" in out
        assert "runs/succeeded/failed are 2/2/0, its runs 2/1/0" in out
        assert f"run {running}: running on host:1, its lease expired at" in out
        assert "5 problems found" in out

        code, out = _check(settings, monkeypatch, "--campaign", str(cid), "--json")
        report = json.loads(out)
        assert code == 1 and report["ok"] is False and report["results_read"] == 2
        kinds = sorted(f["kind"] for f in report["findings"])
        assert kinds == [
            "campaign_totals",
            "config_totals",
            "stuck_run",
            "unreadable_result",
            "unreadable_result",
        ]
        assert failed not in {f["run_id"] for f in report["findings"]}
    finally:
        db.dispose()
