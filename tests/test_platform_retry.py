"""Retrying failed runs (``raptorgrid retry``, ``POST /campaigns/{id}/retry``): exactly the
failed runs of the chosen reasons go back to the queue, the campaign's counters and
per-configuration totals stay equal to its runs (``raptorgrid check`` finds nothing), a real
worker then runs them to one result each; the route follows the write access rules."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from raptorgrid import migrate
from raptorgrid import repository as repo
from raptorgrid.api import create_app
from raptorgrid.auth import create_token
from raptorgrid.check import check as consistency_check
from raptorgrid.db import Database
from raptorgrid.repository import totals
from raptorgrid.scoring.score import write_scores
from raptorgrid.spec import Thresholds
from raptorgrid.tables import Campaign, Run, RunMetrics, utcnow
from sqlalchemy import select
from test_results_totals import check, claim, make_campaign, metrics, totals_rows

from solvers.metrics import Accuracy
from solvers.status import FailureReason, RunStatus

INTERNAL = FailureReason.INTERNAL_ERROR
NUMERICAL = FailureReason.MAX_STEPS


def finish(db: Database, run_id: int, status: RunStatus, reason: FailureReason | None) -> None:
    got = claim(db, run_id)
    with db.write() as session:
        outcome = repo.finish_run(
            session=session,
            run_id=run_id,
            attempt=got.attempt,
            status=status,
            now=utcnow(),
            reason=None if reason is None else reason.value,
            message="" if reason is None else f"{reason.value} here",
            traceback="Traceback ..." if reason is INTERNAL else None,
            zarr_group=f"campaign_x.zarr/run_{run_id}",
            metrics=None if reason is INTERNAL and run_id % 2 else metrics(0.3, 0.2, 11 + run_id),
        )
    assert outcome.recorded


def rows(db: Database, campaign_id: int) -> dict[int, tuple]:
    with db.read() as session:
        found = session.execute(
            select(Run, RunMetrics)
            .outerjoin(RunMetrics, RunMetrics.run_id == Run.id)
            .where(Run.campaign_id == campaign_id)
        ).all()
    keep = ("status", "reason", "message", "traceback", "attempts", "zarr_group", "finished_at",
            "metric_solve_seconds")  # fmt: skip
    return {
        run.id: (*(getattr(run, k) for k in keep), None if m is None else m.solve_seconds)
        for run, m in found
    }


def clean(db: Database, campaign_id: int, zarr_root) -> None:  # noqa: ANN001
    with db.read() as session:
        report = consistency_check(
            session=session,
            zarr_root=zarr_root,
            now=utcnow(),
            stale=timedelta(minutes=10),
            campaign_id=campaign_id,
            read_results=False,
        )
    assert report.ok, report.findings


def test_retry_requeues_exactly_the_chosen_failures(any_db, small_spec, tmp_path) -> None:
    db = any_db
    campaign_id, run_ids = make_campaign(db, small_spec, tmp_path, count=4)
    assert len(run_ids) == 12
    outcome = {}
    for i, run_id in enumerate(run_ids):
        reason = INTERNAL if i % 4 == 0 else NUMERICAL if i % 4 == 1 else None
        outcome[run_id] = reason
        finish(db, run_id, RunStatus.SUCCEEDED if reason is None else RunStatus.FAILED, reason)
    with db.write() as session:  # scores, a retried run's among them: its score goes too
        write_scores(
            session,
            campaign_id=campaign_id,
            scores=[(r, Accuracy(state_error=1e-6, voltage_mae=1e-6, max_kcl=1e-12))
                    for r in run_ids if outcome[r] is not INTERNAL or r % 2 == 0],
            thresholds=Thresholds(),
            now=utcnow(),
        )  # fmt: skip
    check(db, campaign_id)
    clean(db, campaign_id, tmp_path)
    with db.read() as session:
        before_campaign = session.get(Campaign, campaign_id)
        assert before_campaign.status == "finished" and before_campaign.n_failed == 6
        version = before_campaign.stats_version
    before = rows(db, campaign_id)
    internal = [r for r in run_ids if outcome[r] is INTERNAL]

    with db.write() as session:
        retried = repo.retry_failed(
            session=session, campaign_id=campaign_id, reasons=[INTERNAL], now=utcnow()
        )
    assert retried == internal
    after = rows(db, campaign_id)
    for run_id in run_ids:
        if run_id in internal:
            assert after[run_id] == ("queued", None, "", None, 0, None, None, None, None)
        else:  # succeeded, or failed for another reason: untouched
            assert after[run_id] == before[run_id]
    with db.read() as session:
        campaign = session.get(Campaign, campaign_id)
        assert (campaign.status, campaign.finished_at) == ("running", None)
        assert (campaign.n_succeeded, campaign.n_failed) == (6, 3)
        assert campaign.stats_version > version  # cached statistics invalidated
    check(db, campaign_id)  # the totals equal an aggregation of the runs
    rebuilt = totals_rows(db, campaign_id)
    with db.write() as session:
        totals.rebuild(session=session, campaign_id=campaign_id)
    assert totals_rows(db, campaign_id) == rebuilt
    clean(db, campaign_id, tmp_path)

    # nothing else matches: nothing changes; the retried runs then finish once more
    with db.write() as session:
        assert repo.retry_failed(
            session=session, campaign_id=campaign_id, reasons=[INTERNAL], now=utcnow()
        ) == []  # fmt: skip
    for run_id in internal:
        finish(db, run_id, RunStatus.SUCCEEDED, None)
    with db.read() as session:
        campaign = session.get(Campaign, campaign_id)
        assert (campaign.status, campaign.n_succeeded, campaign.n_failed) == ("finished", 9, 3)
        assert set(session.scalars(select(Run.attempts).where(Run.id.in_(internal)))) == {1}
    check(db, campaign_id)
    clean(db, campaign_id, tmp_path)

    # a cancelled campaign is refused, a missing one is None
    other, _ = make_campaign(db, small_spec, tmp_path, count=1)
    with db.write() as session:
        assert repo.cancel_campaign(session=session, campaign_id=other, now=utcnow())
    with pytest.raises(repo.NotRetryable, match="cancelled"), db.write() as session:
        repo.retry_failed(session=session, campaign_id=other, reasons=[INTERNAL], now=utcnow())
    with db.write() as session:
        assert repo.retry_failed(
            session=session, campaign_id=10**6, reasons=[INTERNAL], now=utcnow()
        ) is None  # fmt: skip


@pytest.fixture
def api_settings(make_settings):
    settings = make_settings()
    migrate.upgrade(settings)
    return settings


def test_retry_route(api_settings, small_spec, tmp_path) -> None:
    with TestClient(create_app(api_settings)) as client:
        db = client.app.state.db
        with db.write() as session:
            alice = create_token(session=session, owner="alice")[1]
            bob = create_token(session=session, owner="bob")[1]
            admin = create_token(session=session, owner="root", is_admin=True)[1]
        headers = {"Authorization": f"Bearer {alice}"}
        created = client.post("/campaigns", json=small_spec, headers=headers).json()
        campaign_id = created["id"]
        with db.read() as session:
            run_ids = list(session.scalars(select(Run.id).where(Run.campaign_id == campaign_id)))
        for run_id, reason in zip(run_ids, [INTERNAL, NUMERICAL, None, None], strict=True):
            finish(db, run_id, RunStatus.SUCCEEDED if reason is None else RunStatus.FAILED, reason)
        url = f"/campaigns/{campaign_id}/retry"

        wrong = client.post(url, json={"reasons": ["internal_error", "gremlins"]}, headers=headers)
        assert wrong.status_code == 422
        (detail,) = wrong.json()["detail"]
        assert detail["loc"] == ["body", "reasons", 1]
        assert "internal_error" in detail["msg"] and "max_steps" in detail["msg"]
        cancelled = client.post(url, json={"reasons": ["cancelled"]}, headers=headers)
        assert cancelled.status_code == 422
        assert cancelled.json()["detail"][0]["loc"] == ["body", "reasons"]
        assert client.post(url, json={"reasons": []}, headers=headers).status_code == 422
        assert client.post(url).status_code == 401
        other = client.post(url, headers={"Authorization": f"Bearer {bob}"})
        assert other.status_code == 403 and "another user" in other.json()["detail"]
        missing = client.post("/campaigns/999999/retry", headers=headers)
        assert missing.status_code == 404

        done = client.post(url, headers=headers)  # the default: the infrastructure reasons
        assert done.status_code == 200, done.text
        body = done.json()
        assert body["requeued"] == 1 and body["status"] == "running" and body["sent"]
        assert body["reasons"] == ["internal_error", "time_limit"]
        runs = client.get(f"/campaigns/{campaign_id}/runs", params={"status": "queued"}).json()
        assert [r["id"] for r in runs["data"]] == [run_ids[0]]
        by_admin = client.post(
            url, json={"reasons": ["max_steps"]}, headers={"Authorization": f"Bearer {admin}"}
        )
        assert by_admin.status_code == 200 and by_admin.json()["requeued"] == 1
        check(db, campaign_id)
        clean(db, campaign_id, tmp_path)

        assert client.post(f"/campaigns/{campaign_id}/cancel", headers=headers).status_code == 200
        refused = client.post(url, headers=headers)
        assert refused.status_code == 409 and "cancelled" in refused.json()["detail"]


def test_retry_cli_refuses_unknown_reasons() -> None:
    from raptorgrid.cli import app
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["retry", "1", "--reason", "gremlins"])
    assert result.exit_code == 2
    assert "gremlins" in result.output and "time_limit" in result.output


@pytest.mark.services
@pytest.mark.slow
def test_retry_end_to_end_with_a_real_worker(
    make_settings, postgres_url, redis_url, redis_queue, small_spec, start_worker, wait_until,
    monkeypatch,
) -> None:  # fmt: skip
    """A run fails for an infrastructure reason (its worker stopped heartbeating as often as
    ``max_attempts`` allows: the reconciler's verdict, internal_error); ``raptorgrid retry``
    sends it again and the worker finishes it: one result, ``raptorgrid check`` clean."""
    from raptorgrid.cli import app
    from raptorgrid.settings import get_settings
    from typer.testing import CliRunner

    settings = make_settings(
        database_url=postgres_url, broker_url=redis_url, queue=redis_queue,
        prebuild_networks=["wscc9"],
    )  # fmt: skip
    migrate.upgrade(settings)
    with TestClient(create_app(settings)) as client:
        db = client.app.state.db
        with db.write() as session:
            token = create_token(session=session, owner="t")[1]
        client.headers["Authorization"] = f"Bearer {token}"
        created = client.post("/campaigns", json=small_spec)
        assert created.status_code == 201, created.text
        campaign_id = created.json()["id"]
        with db.read() as session:
            run_ids = list(session.scalars(select(Run.id).where(Run.campaign_id == campaign_id)))
        lost = run_ids[0]  # claimed by a worker that died, out of attempts
        with db.write() as session:
            assert repo.claim_run(session=session, run_id=lost, worker="gone:1",
                                  now=utcnow() - timedelta(minutes=5), lease_seconds=1.0,
                                  max_attempts=1)  # fmt: skip
        with db.write() as session:
            failed = repo.requeue_expired(session=session, now=utcnow(), max_attempts=1).failed
        assert failed == [lost]

        worker = start_worker(settings, "retry")
        campaign = f"/campaigns/{campaign_id}"

        def finished() -> bool:
            assert worker.process.poll() is None, worker.log()[-3000:]
            return client.get(campaign).json()["finished_at"] is not None

        wait_until(finished, 180, lambda: worker.log()[-3000:])
        counts = client.get(campaign).json()["counts"]
        assert (counts["succeeded"], counts["failed"]) == (3, 1), worker.log()[-3000:]

        for name, value in (
            ("DATABASE_URL", postgres_url),
            ("BROKER_URL", redis_url),
            ("QUEUE", redis_queue),
            ("DATA_DIR", str(settings.data_dir)),
        ):
            monkeypatch.setenv(f"RAPTORGRID_{name}", value)
        get_settings.cache_clear()
        try:
            result = CliRunner().invoke(app, ["retry", str(campaign_id)])
        finally:
            get_settings.cache_clear()
        assert result.exit_code == 0, result.output
        assert "1 failed runs (internal_error, time_limit) queued again" in result.output

        wait_until(finished, 120, lambda: worker.log()[-3000:])
        body = client.get(campaign).json()
        assert body["status"] == "finished" and body["counts"]["succeeded"] == 4, worker.log()
    with db.read() as session:
        run = session.get(Run, lost)
        assert (run.status, run.attempts, run.reason) == ("succeeded", 1, None)
        assert run.zarr_group.endswith(f"run_{lost}")
        assert session.get(RunMetrics, lost) is not None
        report = consistency_check(
            session=session,
            zarr_root=settings.zarr_root,
            now=utcnow(),
            stale=timedelta(minutes=10),
            campaign_id=campaign_id,
        )
    assert report.ok and report.results_read == 4, report.findings
    check(db, campaign_id)
    db.dispose()
