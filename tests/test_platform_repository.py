"""Repository semantics on SQLite and PostgreSQL: campaign creation, the run claim (one
claimant, expiring leases, attempts), finishing (current attempt only, metrics upsert, the
campaign flips once), cancellation and the reconciler's queries."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from raptorgrid import repository as repo
from raptorgrid.repository.stats import config_stats
from raptorgrid.settings import Settings
from raptorgrid.spec import CampaignCreate, expand
from raptorgrid.tables import CampaignStatus, RunMetrics, utcnow
from sqlalchemy import select

from solvers.status import FailureReason, RunStatus

LEASE = 60.0


def metrics(**overrides: float) -> dict:
    base = {
        "accepted": 10,
        "rejected": 1,
        "newton_iterations": 20,
        "algebraic_iterations": 30,
        "jacobian_evaluations": 2,
        "lu_factorizations": 4,
        "symbolic_analyses": 0,
        "rhs_evaluations": 50,
        "compile_seconds": 0.0,
        "load_seconds": 0.0,
        "solve_seconds": 0.1,
        "overhead_seconds": 0.02,
        "n_points": 51,
        "n_accepted_points": 12,
        "final_time": 1.0,
    }
    return {**base, **overrides}


@pytest.fixture
def campaign(any_db, small_spec, tmp_path):
    spec = CampaignCreate.model_validate(small_spec)
    expansion = expand(spec, settings=Settings(data_dir=tmp_path))
    with any_db.write() as session:
        campaign, run_ids = repo.create_campaign(
            session=session, spec=spec, expansion=expansion, now=utcnow(), raw_spec=small_spec
        )
    return any_db, campaign.id, run_ids


def claim(db, run_id: int, worker: str = "w1", now=None, max_attempts: int = 3):
    with db.write() as session:
        return repo.claim_run(
            session=session,
            run_id=run_id,
            worker=worker,
            now=now or utcnow(),
            lease_seconds=LEASE,
            max_attempts=max_attempts,
        )


def finish(db, run_id: int, attempt: int, status=RunStatus.SUCCEEDED, **kw):
    with db.write() as session:
        return repo.finish_run(
            session=session, run_id=run_id, attempt=attempt, status=status, now=utcnow(), **kw
        )


def test_campaign_rows(campaign) -> None:
    db, campaign_id, run_ids = campaign
    assert len(run_ids) == 4
    with db.read() as session:
        row = repo.get_campaign(session=session, campaign_id=campaign_id)
        counts = repo.run_counts(session=session, campaign_id=campaign_id)
        runs, total = repo.list_runs(session=session, campaign_id=campaign_id, limit=3)
    assert row.spec["name"] == "small" and row.n_runs == 4 and row.n_scenarios == 2
    assert counts["queued"] == 4 and counts["running"] == 0
    assert total == 4 and len(runs) == 3
    assert {r.config_label for r, _ in runs} == {"rtol=0.001", "rtol=1e-05"}


def test_double_claim_returns_nothing(campaign) -> None:
    db, _, run_ids = campaign
    first = claim(db, run_ids[0])
    assert first is not None and first.attempt == 1
    assert claim(db, run_ids[0], worker="w2") is None


def test_expired_lease_is_reclaimable_and_counts_attempts(campaign) -> None:
    db, _, run_ids = campaign
    run_id = run_ids[0]
    first = claim(db, run_id)
    later = utcnow() + timedelta(seconds=LEASE + 1)
    second = claim(db, run_id, worker="w2", now=later)
    assert second is not None and second.attempt == 2
    # The first attempt can no longer heartbeat or finish the run.
    with db.write() as session:
        state = repo.renew_lease(
            session=session, run_id=run_id, attempt=first.attempt, now=later, lease_seconds=LEASE
        )
    assert state is repo.LeaseState.LOST
    assert not finish(db, run_id, first.attempt, metrics=metrics()).recorded
    assert finish(db, run_id, second.attempt, metrics=metrics(accepted=99)).recorded
    with db.read() as session:
        run, _, row = repo.get_run(session=session, run_id=run_id)
    assert run.status == "succeeded" and run.attempts == 2 and run.worker == "w2"
    assert row.accepted == 99 and row.attempt == 2


def test_renewing_several_leases_at_once_matches_one_by_one(campaign) -> None:
    """``renew_leases`` (a worker's block before publishing, a vectorized group): the current
    attempts are renewed with their progress, a stolen run is lost, a cancelled campaign's
    run says so; nothing else changes."""
    db, campaign_id, run_ids = campaign
    now = utcnow()
    first, second, third = (claim(db, r, now=now) for r in run_ids[:3])
    later = now + timedelta(seconds=LEASE + 1)
    stolen = claim(db, second.run_id, worker="w2", now=later)  # its lease expired
    attempts = {c.run_id: c.attempt for c in (first, second, third)}
    with db.write() as session:
        states = repo.renew_leases(
            session=session, attempts=attempts, now=later, lease_seconds=LEASE,
            sim_times={first.run_id: 0.25},
        )  # fmt: skip
    assert states == {
        first.run_id: repo.LeaseState.HELD,
        second.run_id: repo.LeaseState.LOST,
        third.run_id: repo.LeaseState.HELD,
    }
    with db.read() as session:
        runs = {r: repo.get_run(session=session, run_id=r)[0] for r in run_ids[:3]}
    assert runs[first.run_id].sim_time == 0.25 and runs[third.run_id].sim_time is None
    for run_id in (first.run_id, third.run_id):
        assert abs(
            (runs[run_id].lease_until.replace(tzinfo=None) - later.replace(tzinfo=None))
            - timedelta(seconds=LEASE)
        ) < timedelta(seconds=1)
    assert runs[second.run_id].attempts == stolen.attempt == 2  # the thief's attempt untouched
    with db.write() as session:
        repo.cancel_campaign(session=session, campaign_id=campaign_id, now=later)
        states = repo.renew_leases(
            session=session, attempts={stolen.run_id: stolen.attempt}, now=later,
            lease_seconds=LEASE,
        )  # fmt: skip
    # cancelling a campaign cancels its queued runs; a running one learns it from its lease
    assert states == {stolen.run_id: repo.LeaseState.CANCELLED}


def test_attempts_are_limited(campaign) -> None:
    db, _, run_ids = campaign
    now = utcnow()
    for attempt in (1, 2):
        assert claim(db, run_ids[0], now=now, max_attempts=2).attempt == attempt
        now += timedelta(seconds=LEASE + 1)
    assert claim(db, run_ids[0], now=now, max_attempts=2) is None


def test_concurrent_claims_have_one_winner(campaign) -> None:
    db, _, run_ids = campaign
    wins: list[tuple[int, str]] = []
    barrier = threading.Barrier(6)

    def contend(worker: str) -> None:
        barrier.wait()
        for run_id in run_ids:
            if claim(db, run_id, worker=worker) is not None:
                wins.append((run_id, worker))

    threads = [threading.Thread(target=contend, args=(f"w{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r for r, _ in wins) == sorted(run_ids)


def test_campaign_finishes_once_and_metrics_upsert(campaign) -> None:
    db, campaign_id, run_ids = campaign
    outcomes = []
    for i, run_id in enumerate(run_ids):
        c = claim(db, run_id)
        status = RunStatus.FAILED if i == 0 else RunStatus.SUCCEEDED
        reason = FailureReason.MAX_STEPS.value if i == 0 else None
        outcomes.append(finish(db, run_id, c.attempt, status, reason=reason, metrics=metrics()))
    assert [o.campaign_finished for o in outcomes] == [False, False, False, True]
    assert not finish(db, run_ids[-1], 1, metrics=metrics()).recorded  # a duplicate delivery
    with db.read() as session:
        row = repo.get_campaign(session=session, campaign_id=campaign_id)
        n_metrics = len(
            session.scalars(select(RunMetrics).where(RunMetrics.run_id.in_(run_ids))).all()
        )
        summary, _ = config_stats(session=session, campaign_id=campaign_id)
    assert row.status == CampaignStatus.FINISHED.value and row.finished_at is not None
    assert (row.n_succeeded, row.n_failed) == (3, 1)
    assert n_metrics == 4
    assert sum(s.runs for s in summary) == 4 and sum(s.failed for s in summary) == 1


def test_a_block_finish_records_only_the_attempts_still_running(campaign) -> None:
    """``finish_runs`` of a block with the current attempt of one run, a stale attempt of a
    run claimed again since, a run never claimed and a run already final: only the first is
    recorded, with each of its fields; the others' rows are untouched (SQLite, PostgreSQL)."""
    db, campaign_id, (current, stale, never, done) = campaign
    mine = claim(db, current)
    old = claim(db, stale)
    later = utcnow() + timedelta(seconds=LEASE + 1)
    retry = claim(db, stale, worker="w2", now=later)
    assert finish(db, done, claim(db, done).attempt, zarr_group="g/done", metrics=metrics())
    with db.read() as session:
        before = {r: repo.get_run(session=session, run_id=r)[0] for r in (stale, never, done)}
        snapshot = {r: (x.status, x.attempts, x.lease_until, x.zarr_group, x.finished_at)
                    for r, x in before.items()}  # fmt: skip
    finishes = [
        repo.Finish(run_id=current, attempt=mine.attempt, status=RunStatus.FAILED,
                    reason=FailureReason.MAX_STEPS.value, message="too many steps",
                    traceback="tb", zarr_group="g/current", metrics=metrics(solve_seconds=0.25)),
        repo.Finish(run_id=stale, attempt=old.attempt, status=RunStatus.SUCCEEDED,
                    zarr_group="g/stale", metrics=metrics()),
        repo.Finish(run_id=never, attempt=1, status=RunStatus.SUCCEEDED, metrics=metrics()),
        repo.Finish(run_id=done, attempt=1, status=RunStatus.FAILED, zarr_group="g/again"),
    ]  # fmt: skip
    with db.write() as session:
        outcomes = repo.finish_runs(session=session, finishes=finishes, now=utcnow())
    assert [o.recorded for o in outcomes] == [True, False, False, False]
    assert {o.campaign_id for o in outcomes} == {campaign_id}
    with db.read() as session:
        run, _, row = repo.get_run(session=session, run_id=current)
        after = {r: repo.get_run(session=session, run_id=r)[0] for r in (stale, never, done)}
        counts = repo.get_campaign(session=session, campaign_id=campaign_id)
    assert (run.status, run.reason, run.message, run.traceback) == (
        "failed",
        FailureReason.MAX_STEPS.value,
        "too many steps",
        "tb",
    )
    assert run.zarr_group == "g/current" and run.lease_until is None and run.finished_at
    assert run.metric_solve_seconds == pytest.approx(0.25) and row.attempt == mine.attempt
    assert {r: (x.status, x.attempts, x.lease_until, x.zarr_group, x.finished_at)
            for r, x in after.items()} == snapshot  # fmt: skip
    assert after[stale].attempts == retry.attempt == 2 and after[stale].status == "running"
    assert (counts.n_succeeded, counts.n_failed) == (1, 1)  # ``done`` and ``current`` only


def test_cancel_stops_queued_and_flags_running(campaign) -> None:
    db, campaign_id, run_ids = campaign
    running = claim(db, run_ids[0])
    with db.write() as session:
        assert repo.cancel_campaign(session=session, campaign_id=campaign_id, now=utcnow())
    with db.write() as session:
        state = repo.renew_lease(
            session=session,
            run_id=run_ids[0],
            attempt=running.attempt,
            now=utcnow(),
            lease_seconds=LEASE,
        )
        counts = repo.run_counts(session=session, campaign_id=campaign_id)
    assert state is repo.LeaseState.CANCELLED
    assert counts["cancelled"] == 3 and counts["running"] == 1
    assert claim(db, run_ids[1]) is None
    outcome = finish(db, run_ids[0], running.attempt, RunStatus.CANCELLED, reason="cancelled")
    assert outcome.campaign_finished
    with db.read() as session:
        row = repo.get_campaign(session=session, campaign_id=campaign_id)
    assert row.status == CampaignStatus.CANCELLED.value and row.n_cancelled == 4


def test_reconciler_requeues_expired_and_fails_exhausted(campaign) -> None:
    db, campaign_id, run_ids = campaign
    now = utcnow()
    claim(db, run_ids[0], now=now)  # attempt 1 of 3: requeued
    for _ in range(2):  # attempts 1 and 2 of 2: failed
        claim(db, run_ids[1], now=now, max_attempts=2)
        now += timedelta(seconds=LEASE + 1)
    later = now + timedelta(seconds=LEASE + 1)
    with db.write() as session:
        outcome = repo.requeue_expired(session=session, now=later, max_attempts=2)
    mine = set(run_ids)  # the PostgreSQL database is shared by the session's tests
    assert mine & set(outcome.requeued) == {run_ids[0]}
    assert mine & set(outcome.failed) == {run_ids[1]}
    with db.read() as session:
        first, _, _ = repo.get_run(session=session, run_id=run_ids[0])
        second, _, _ = repo.get_run(session=session, run_id=run_ids[1])
    assert first.status == "queued" and first.attempts == 1
    assert second.status == "failed" and second.reason == "internal_error"
    with db.write() as session:
        stale = repo.stale_queued(session=session, now=later + timedelta(seconds=5), older_than=1.0)
        again = repo.stale_queued(session=session, now=later + timedelta(seconds=5), older_than=1.0)
    assert mine & set(stale) == {run_ids[0], run_ids[2], run_ids[3]}
    assert not mine & set(again)
