"""The stats cache is exact: after every kind of change to a run (finish with metrics, scoring,
the reconciler giving up, cancellation; claims and requeues for the views they change) it serves
what ``config_stats`` recomputes from the rows, on SQLite and PostgreSQL, and through the API."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from raptorgrid import migrate
from raptorgrid import repository as repo
from raptorgrid.api import create_app
from raptorgrid.db import Database
from raptorgrid.repository.stats import ConfigStats, Filters, config_stats
from raptorgrid.repository.stats_cache import StatsCache, cacheable
from raptorgrid.scoring.score import write_scores
from raptorgrid.settings import Settings
from raptorgrid.spec import CampaignCreate, Thresholds, expand
from raptorgrid.tables import utcnow

from solvers.metrics import Accuracy
from solvers.status import RunStatus

LEASE = 60.0
VIEWS = [
    Filters(),
    Filters(kind="bus_fault"),
    Filters(method="radau"),
    Filters(status="succeeded"),
    Filters(status="failed"),
    Filters(status="cancelled"),
    Filters(status="running"),
    Filters(status="queued"),
]


def metrics(runtime: float) -> dict:
    return {
        "accepted": int(100 * runtime),
        "rejected": 1,
        "newton_iterations": 20,
        "algebraic_iterations": 0,
        "jacobian_evaluations": 2,
        "lu_factorizations": 4,
        "symbolic_analyses": 0,
        "rhs_evaluations": 50,
        "compile_seconds": 0.0,
        "load_seconds": 0.0,
        "solve_seconds": runtime,
        "overhead_seconds": 0.01,
        "n_points": 51,
        "n_accepted_points": 12,
        "final_time": 1.0,
    }


@pytest.fixture
def campaign(any_db, small_spec, tmp_path):
    """2 initial conditions x 2 Radau configurations, plus a third scenario: 6 queued runs."""
    small_spec["initial_conditions"]["count"] = 3
    spec = CampaignCreate.model_validate(small_spec)
    expansion = expand(spec, settings=Settings(data_dir=tmp_path))
    with any_db.write() as session:
        campaign, run_ids = repo.create_campaign(
            session=session, spec=spec, expansion=expansion, now=utcnow(), raw_spec=small_spec
        )
    assert len(run_ids) == 6
    return any_db, campaign.id, run_ids


def claim(db: Database, run_id: int, now=None, max_attempts: int = 3) -> repo.Claim:  # noqa: ANN001
    with db.write() as session:
        return repo.claim_run(
            session=session,
            run_id=run_id,
            worker="w",
            now=now or utcnow(),
            lease_seconds=LEASE,
            max_attempts=max_attempts,
        )


def finish(db: Database, run_id: int, status: RunStatus, runtime: float) -> None:
    got = claim(db, run_id)
    with db.write() as session:
        outcome = repo.finish_run(
            session=session,
            run_id=run_id,
            attempt=got.attempt,
            status=status,
            now=utcnow(),
            metrics=metrics(runtime),
        )
    assert outcome.recorded


class Probe:
    """Reads every view through one cache and checks each against a fresh recomputation."""

    def __init__(self, db: Database, campaign_id: int) -> None:
        self.db, self.campaign_id, self.cache = db, campaign_id, StatsCache()

    def read(self, filters: Filters) -> list[ConfigStats]:
        with self.db.read() as session:
            campaign = repo.get_campaign(session=session, campaign_id=self.campaign_id)
            return self.cache.config_stats(session=session, campaign=campaign, filters=filters)

    def fresh(self, filters: Filters) -> list[ConfigStats]:
        with self.db.read() as session:
            return config_stats(session=session, campaign_id=self.campaign_id, filters=filters)[0]

    def check(self) -> dict[Filters, list[ConfigStats]]:
        """Every view twice: the first read agrees with the rows, the second is a hit."""
        seen = {}
        for view in VIEWS:
            first = self.read(view)
            assert first == self.fresh(view), view
            hits = self.cache.hits
            assert self.read(view) == first
            assert self.cache.hits == hits + cacheable(view), view
            seen[view] = first
        return seen


def by_config(rows: list[ConfigStats]) -> dict[str, ConfigStats]:
    return {r.config: r for r in rows}


def config_of(db: Database, run_id: int) -> str:
    with db.read() as session:
        return repo.get_run(session=session, run_id=run_id)[0].config_label


def test_cache_follows_every_run_change(campaign) -> None:
    db, campaign_id, run_ids = campaign
    config = config_of(db, run_ids[0])
    same = [r for r in run_ids[1:] if config_of(db, r) == config]
    other = [r for r in run_ids[1:] if config_of(db, r) != config]
    probe = Probe(db, campaign_id)
    before = probe.check()
    assert all(r.succeeded == 0 and r.median_runtime_s is None for r in before[Filters()])

    # a run finishes with metrics (record_final bumps the version)
    finish(db, run_ids[0], RunStatus.SUCCEEDED, 0.5)
    stats = by_config(probe.check()[Filters()])
    assert stats[config].succeeded == 1 and stats[config].median_runtime_s == pytest.approx(0.5)

    # another run of the configuration: the median moves (a stale entry would keep 0.5)
    finish(db, same[0], RunStatus.SUCCEEDED, 1.5)
    stats = by_config(probe.check()[Filters()])
    assert stats[config].succeeded == 2 and stats[config].median_runtime_s == pytest.approx(1.0)

    # scoring writes errors and the verdict (write_scores bumps the version)
    with db.write() as session:
        written = write_scores(
            session,
            campaign_id=campaign_id,
            scores=[(run_ids[0], Accuracy(state_error=1e-9, voltage_mae=1e-9, max_kcl=1e-12))],
            thresholds=Thresholds(),
            now=utcnow(),
        )
    assert written == [run_ids[0]]
    scored = by_config(probe.check()[Filters()])
    assert scored[config].scored == 1 and scored[config].max_state_error == pytest.approx(1e-9)

    # a claim and a requeue change only the queued/running views (never cached)
    claim(db, other[0], now=utcnow() - timedelta(seconds=2 * LEASE))
    running = probe.check()[Filters(status="running")]
    assert sum(r.runs for r in running) == 1
    with db.write() as session:
        requeue = repo.requeue_expired(session=session, now=utcnow(), max_attempts=3)
    # the database is shared by the session's tests: other campaigns' expired runs may be there
    assert [r for r in requeue.requeued if r in run_ids] == [other[0]]
    assert probe.check()[Filters(status="running")] == []

    # the reconciler gives up on a run (record_final: failed)
    claim(db, other[1], now=utcnow() - timedelta(seconds=2 * LEASE), max_attempts=1)
    with db.write() as session:
        requeue = repo.requeue_expired(session=session, now=utcnow(), max_attempts=1)
    assert [r for r in requeue.failed if r in run_ids] == [other[1]]
    assert sum(r.failed for r in probe.check()[Filters()]) == 1

    # cancellation: the queued runs become cancelled
    with db.write() as session:
        assert repo.cancel_campaign(session=session, campaign_id=campaign_id, now=utcnow())
    cancelled = probe.check()[Filters(status="cancelled")]
    assert sum(r.runs for r in cancelled) == 3  # the requeued run among them


def test_the_api_serves_cached_stats_until_a_run_changes(sqlite_settings, small_spec) -> None:
    migrate.upgrade(sqlite_settings)
    db = Database.from_settings(sqlite_settings)
    spec = CampaignCreate.model_validate(small_spec)
    expansion = expand(spec, settings=sqlite_settings)
    with db.write() as session:
        campaign, run_ids = repo.create_campaign(
            session=session, spec=spec, expansion=expansion, now=utcnow(), raw_spec=small_spec
        )
    app = create_app(sqlite_settings)
    cache: StatsCache = app.state.stats_cache
    path = f"/campaigns/{campaign.id}/stats"
    with TestClient(app) as client:
        empty = client.get(path).json()
        assert client.get(f"{path}/table1").status_code == 200  # same entry as /stats
        assert client.get(path, params={"limit": 1, "offset": 1}).json()["count"] == 2
        assert (cache.misses, cache.hits) == (1, 2)
        finish(db, run_ids[0], RunStatus.SUCCEEDED, 0.25)
        done = client.get(path).json()
        assert cache.misses == 2
        assert sum(m["succeeded"] for m in done["methods"]) == 1
        assert done["methods"] != empty["methods"]
        medians = [m["median_runtime_s"] for m in done["methods"]]
        assert pytest.approx(0.25) in medians
    db.dispose()
