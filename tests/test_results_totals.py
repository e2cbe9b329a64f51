"""The per-configuration totals (``config_totals``) give exactly what aggregating the runs
gives, through every kind of run change, on SQLite and PostgreSQL: counts, means, extremes
and the percentiles (pivots moved one step per run, ties and repeated values included); the
bulk-load ``rebuild`` and the 0006 backfill agree with the incremental totals."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import timedelta

import pytest
from alembic import command
from raptorgrid import migrate
from raptorgrid import repository as repo
from raptorgrid.db import Database
from raptorgrid.repository import totals
from raptorgrid.repository.stats import ConfigStats, Filters, _aggregated, config_stats
from raptorgrid.scoring.score import write_scores
from raptorgrid.settings import Settings
from raptorgrid.spec import CampaignCreate, Thresholds, expand
from raptorgrid.tables import ConfigTotals, utcnow
from sqlalchemy import select, text

from solvers.metrics import Accuracy
from solvers.status import RunStatus

VIEWS = [
    Filters(),
    Filters(include_reference=True),
    Filters(method="radau"),
    Filters(method="kvaerno5", include_reference=True),
]
LEVELS = [0.05, 0.1, 0.1, 0.2, 0.35, 0.5, 0.5, 0.5, 1.25, 3.0]
"""Runtimes drawn from few values, so percentiles often sit on ties."""


def metrics(runtime: float, solve: float, accepted: int) -> dict:
    return {
        "accepted": accepted,
        "rejected": accepted // 7,
        "newton_iterations": 3 * accepted + 1,
        "algebraic_iterations": 0,
        "jacobian_evaluations": 2,
        "lu_factorizations": 4,
        "symbolic_analyses": 0,
        "rhs_evaluations": 50,
        "compile_seconds": runtime - solve,
        "load_seconds": 0.0,
        "solve_seconds": solve,
        "overhead_seconds": 0.25 * solve,
        "n_points": 51,
        "n_accepted_points": 12,
        "final_time": 1.0,
    }


def make_campaign(db: Database, small_spec: dict, data_dir, count: int) -> tuple[int, list[int]]:  # noqa: ANN001
    small_spec["initial_conditions"]["count"] = count
    small_spec["reference"] = {}
    spec = CampaignCreate.model_validate(small_spec)
    expansion = expand(spec, settings=Settings(data_dir=data_dir))
    with db.write() as session:
        campaign, run_ids = repo.create_campaign(
            session=session, spec=spec, expansion=expansion, now=utcnow(), raw_spec=small_spec
        )
    return campaign.id, run_ids


def both(db: Database, campaign_id: int, view: Filters) -> tuple[list[ConfigStats], list]:
    """The view from the totals and from aggregating the runs."""
    with db.read() as session:
        fast, total = config_stats(session=session, campaign_id=campaign_id, filters=view)
        slow, _ = _aggregated(
            session=session, campaign_id=campaign_id, filters=view, limit=None, offset=0
        )
        assert total == len(fast)
    return fast, slow


SUMMED = ("mean_compile_s", "mean_overhead_s")
"""Means of float seconds: the totals add them in finishing order, the aggregate in its own
order, so they agree to round-off only (every other field is identical)."""


def same(fast: list[ConfigStats], slow: list[ConfigStats], view: Filters) -> None:
    """Every field identical but the ``SUMMED`` ones, equal to round-off."""
    for a, b in zip(fast, slow, strict=True):
        for name in SUMMED:
            x, y = getattr(a, name), getattr(b, name)
            assert (x is None and y is None) or x == pytest.approx(y, rel=1e-12), view
    blank = dict.fromkeys(SUMMED)
    assert [replace(a, **blank) for a in fast] == [replace(b, **blank) for b in slow], view


def check(db: Database, campaign_id: int) -> None:
    assert totals_rows(db, campaign_id)  # config_stats reads them, not the runs
    for view in VIEWS:
        same(*both(db, campaign_id, view), view)


def totals_rows(db: Database, campaign_id: int) -> list[dict]:
    with db.read() as session:
        rows = session.execute(
            select(ConfigTotals.__table__)
            .where(ConfigTotals.campaign_id == campaign_id)
            .order_by(ConfigTotals.first_run)
        ).all()
    # float sums: equal to round-off whatever order they were added in
    return [
        {k: round(v, 9) if k.startswith("sum_") and isinstance(v, float) else v
         for k, v in r._mapping.items()}
        for r in rows
    ]  # fmt: skip


def claim(db: Database, run_id: int, **kw) -> repo.Claim:  # noqa: ANN003
    with db.write() as session:
        return repo.claim_run(
            session=session,
            run_id=run_id,
            worker="w",
            now=kw.get("now") or utcnow(),
            lease_seconds=60.0,
            max_attempts=kw.get("max_attempts", 3),
        )


def test_totals_equal_the_aggregates_through_a_campaign(any_db, small_spec, tmp_path) -> None:
    db, rng = any_db, random.Random(7)
    campaign_id, run_ids = make_campaign(db, small_spec, tmp_path, count=24)
    assert len(run_ids) == 24 * 3
    check(db, campaign_id)  # nothing final yet: no percentile, means None
    order = run_ids[:]
    rng.shuffle(order)
    finished = []
    for i, run_id in enumerate(order[:60]):
        got = claim(db, run_id)
        status = RunStatus.FAILED if i % 9 == 4 else RunStatus.SUCCEEDED
        solve = rng.choice(LEVELS)
        runtime = solve + rng.choice([0.0, 0.0, 0.25])
        with db.write() as session:
            outcome = repo.finish_run(
                session=session,
                run_id=run_id,
                attempt=got.attempt,
                status=status,
                now=utcnow(),
                metrics=None if i % 13 == 6 else metrics(runtime, solve, rng.randint(5, 60)),
            )
        assert outcome.recorded
        finished.append(run_id)
        if i % 4 == 0:
            check(db, campaign_id)
    check(db, campaign_id)

    # scoring, in two batches (one of them several configurations at once)
    def score(ids: list[int]) -> list[int]:
        with db.write() as session:
            return write_scores(
                session,
                campaign_id=campaign_id,
                scores=[
                    (rid, Accuracy(state_error=10 ** rng.uniform(-9, -3), voltage_mae=1e-6,
                                   max_kcl=rng.choice([1e-12, 1e-3])))
                    for rid in ids
                ],
                thresholds=Thresholds(),
                now=utcnow(),
            )  # fmt: skip

    assert score(finished[:20])
    check(db, campaign_id)
    assert score(finished[10:40])  # the first ten again: not counted twice
    check(db, campaign_id)

    # the reconciler gives up on a run; cancellation of the rest
    stuck = order[60]
    claim(db, stuck, now=utcnow() - timedelta(seconds=120), max_attempts=1)
    with db.write() as session:
        assert repo.requeue_expired(session=session, now=utcnow(), max_attempts=1).failed == [stuck]
    check(db, campaign_id)
    with db.write() as session:
        assert repo.cancel_campaign(session=session, campaign_id=campaign_id, now=utcnow())
    check(db, campaign_id)
    stats = {(r.method, r.config): r for r in both(db, campaign_id, Filters())[0]}
    assert sum(r.runs for r in stats.values()) == 48
    assert all(r.median_runtime_s is not None for r in stats.values())

    # a rebuild from the rows (what a bulk load calls) gives the same totals, copies repaired
    before = totals_rows(db, campaign_id)
    with db.write() as session:
        session.execute(
            text(
                "UPDATE runs SET metric_solve_seconds = CASE WHEN id % 2 = 0 THEN NULL "
                "ELSE 7.0 END WHERE campaign_id = :c"
            ),
            {"c": campaign_id},
        )
        totals.rebuild(session=session, campaign_id=campaign_id)
    assert totals_rows(db, campaign_id) == before
    check(db, campaign_id)

    # pages come from the same rows; deleting the campaign deletes its totals
    with db.read() as session:
        page, total = config_stats(
            session=session, campaign_id=campaign_id, filters=Filters(include_reference=True),
            limit=1, offset=1,
        )  # fmt: skip
    assert total == 3
    same(page, both(db, campaign_id, Filters(include_reference=True))[1][1:2], Filters())
    with db.write() as session:
        assert repo.delete_campaign(session=session, campaign_id=campaign_id)
    assert totals_rows(db, campaign_id) == []


def test_pivots_follow_many_runs_of_one_configuration(any_db, small_spec, tmp_path) -> None:
    """Every run of a configuration finishing in turn, values drawn to collide often: after
    each the three pivots are where ``percentile_cont`` puts them."""
    db, rng = any_db, random.Random(11)
    small_spec["methods"] = [{"method": "radau", "options": {"rtol": [1e-3]}}]
    campaign_id, run_ids = make_campaign(db, small_spec, tmp_path, count=41)
    radau = run_ids[1::2]
    for run_id in radau:
        got = claim(db, run_id)
        value = rng.choice([0.125, 0.25, 0.5, 1.0]) * rng.choice([1, 1, 3])
        with db.write() as session:
            repo.finish_run(
                session=session,
                run_id=run_id,
                attempt=got.attempt,
                status=RunStatus.SUCCEEDED,
                now=utcnow(),
                metrics=metrics(value + 0.5, value, 10),
            )
        fast, slow = both(db, campaign_id, Filters())
        assert fast == slow
    assert fast[0].runs == 41 and fast[0].succeeded == 41


def test_pivots_follow_blocks_of_runs_finished_together(any_db, small_spec, tmp_path) -> None:
    """A worker's block finishes several runs in one transaction: each pivot then moves by
    several places in one step; after every block (sizes 1 to 9, colliding values) the pivots
    are where ``percentile_cont`` puts them."""
    db, rng = any_db, random.Random(5)
    small_spec["methods"] = [{"method": "radau", "options": {"rtol": [1e-3]}}]
    campaign_id, run_ids = make_campaign(db, small_spec, tmp_path, count=61)
    with db.write() as session:  # an empty block records nothing
        assert repo.finish_runs(session=session, finishes=[], now=utcnow()) == []
    radau = run_ids[1::2]
    while radau:
        size = rng.randint(1, 9)
        block, radau = radau[:size], radau[size:]
        finishes = []
        for run_id in block:
            value = rng.choice([0.125, 0.25, 0.5, 1.0]) * rng.choice([1, 1, 3])
            finishes.append(
                repo.Finish(run_id, claim(db, run_id).attempt, RunStatus.SUCCEEDED,
                            metrics=metrics(value + 0.5, value, 10))
            )  # fmt: skip
        with db.write() as session:
            repo.finish_runs(session=session, finishes=finishes, now=utcnow())
        fast, slow = both(db, campaign_id, Filters())
        assert fast == slow
    assert fast[0].runs == 61 and fast[0].succeeded == 61


def test_migration_backfills_the_totals(sqlite_settings, small_spec, tmp_path) -> None:
    """A database with finished and scored runs at 0005, upgraded: totals and copies filled."""
    config = migrate.alembic_config(sqlite_settings)
    migrate.upgrade(sqlite_settings)
    db = Database.from_settings(sqlite_settings)
    campaign_id, run_ids = make_campaign(db, small_spec, tmp_path, count=9)
    rng = random.Random(3)
    for i, run_id in enumerate(run_ids[:20]):
        got = claim(db, run_id)
        with db.write() as session:
            repo.finish_run(
                session=session,
                run_id=run_id,
                attempt=got.attempt,
                status=RunStatus.SUCCEEDED if i % 5 else RunStatus.FAILED,
                now=utcnow(),
                metrics=metrics(rng.choice(LEVELS) + 0.1, rng.choice(LEVELS), 7 + i),
            )
    with db.write() as session:
        write_scores(
            session,
            campaign_id=campaign_id,
            scores=[(r, Accuracy(state_error=1e-7 * r, voltage_mae=1e-8, max_kcl=1e-12))
                    for r in run_ids[:20:3]],
            thresholds=Thresholds(),
            now=utcnow(),
        )  # fmt: skip
    expected = {view: both(db, campaign_id, view)[1] for view in VIEWS}
    db.dispose()
    command.downgrade(config, "0005")
    migrate.upgrade(sqlite_settings)
    db = Database.from_settings(sqlite_settings)
    with db.read() as session:
        copies = session.execute(
            text("SELECT count(*) FROM runs WHERE metric_solve_seconds IS NOT NULL")
        ).scalar_one()
    assert copies == 20 and totals_rows(db, campaign_id)
    for view, rows in expected.items():
        fast, slow = both(db, campaign_id, view)
        for got in (fast, slow):  # the downgrade's round trip through the wall time
            same(got, rows, view)  # leaves the overhead equal to round-off
    db.dispose()


@pytest.mark.services
def test_concurrent_finishes_and_scores_keep_the_totals_exact(
    postgres_db, small_spec, tmp_path
) -> None:
    """Workers finishing and scoring runs of one campaign at once on PostgreSQL: the totals
    writers queue on the campaign row (no deadlock) and end equal to the aggregates."""
    db = postgres_db
    small_spec["methods"] = [{"method": "radau", "options": {"rtol": [1e-3, 1e-5, 1e-7]}}]
    campaign_id, run_ids = make_campaign(db, small_spec, tmp_path, count=30)
    chunks = [run_ids[k::4] for k in range(4)]

    def work(ids: list[int]) -> None:
        rng = random.Random(ids[0])
        for run_id in ids:
            got = claim(db, run_id)
            with db.write() as session:
                repo.finish_run(
                    session=session,
                    run_id=run_id,
                    attempt=got.attempt,
                    status=RunStatus.SUCCEEDED,
                    now=utcnow(),
                    metrics=metrics(rng.choice(LEVELS) + 0.5, rng.choice(LEVELS), 9),
                )
            if rng.random() < 0.5:  # any runs, other workers' too (unfinished: not written)
                with db.write() as session:
                    write_scores(
                        session,
                        campaign_id=campaign_id,
                        scores=[(r, Accuracy(state_error=1e-8, voltage_mae=1e-9, max_kcl=0.0))
                                for r in rng.sample(run_ids, 4)],
                        thresholds=Thresholds(),
                        now=utcnow(),
                    )  # fmt: skip

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(work, chunks))
    check(db, campaign_id)
    fast, _ = both(db, campaign_id, Filters(include_reference=True))
    assert sum(r.succeeded for r in fast) == len(run_ids)
