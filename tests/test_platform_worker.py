"""The task body in-process on SQLite: success writes Zarr then SQL; bad input, a soft time limit
and an unexpected exception become failed runs with their reason (and traceback)."""

from __future__ import annotations

import pytest
from raptorgrid import repository as repo
from raptorgrid.settings import Settings
from raptorgrid.spec import CampaignCreate, expand
from raptorgrid.tables import ScenarioRow, utcnow
from raptorgrid.zarr_store import open_run
from sqlalchemy import update

from workers import runner
from workers.runner import WorkerContext, execute_run


class FakeSoftTimeLimit(Exception):
    pass


@pytest.fixture
def ctx(sqlite_settings, sqlite_db, small_spec):
    spec = CampaignCreate.model_validate(small_spec)
    expansion = expand(spec, settings=sqlite_settings)
    with sqlite_db.write() as session:
        campaign, run_ids = repo.create_campaign(
            session=session, spec=spec, expansion=expansion, now=utcnow()
        )
    return WorkerContext(settings=sqlite_settings, db=sqlite_db), campaign.id, run_ids


def read(ctx: WorkerContext, run_id: int):
    with ctx.db.read() as session:
        return repo.get_run(session=session, run_id=run_id)


def test_success_then_duplicate_delivery(ctx) -> None:
    context, campaign_id, run_ids = ctx
    assert execute_run(run_ids[0], worker="t", ctx=context) == "succeeded"
    assert execute_run(run_ids[0], worker="t", ctx=context) == "skipped"
    run, _, metrics = read(context, run_ids[0])
    assert run.status == "succeeded" and run.attempts == 1
    ds = open_run(context.settings.zarr_root, campaign_id, run_ids[0])
    assert ds.sizes["time"] == metrics.n_points == 51
    assert float(ds.t_acc[-1]) == metrics.final_time == pytest.approx(1.0)
    # progress: the last accepted advance reported by the step stream is the horizon
    assert run.sim_time == pytest.approx(1.0)


def test_invalid_input_is_a_failed_run(ctx) -> None:
    context, _, run_ids = ctx
    with context.db.write() as session:
        session.execute(
            update(ScenarioRow).values(disturbance={"kind": "bus_fault", "bus": "nowhere"})
        )
    assert execute_run(run_ids[0], worker="t", ctx=context) == "invalid-input"
    run, _, metrics = read(context, run_ids[0])
    assert (run.status, run.reason) == ("failed", "invalid_input")
    assert "nowhere" in run.message and "bus7" in run.message and metrics is None


def test_soft_time_limit_is_a_time_limit_failure(ctx, monkeypatch) -> None:
    context, _, run_ids = ctx

    def slow(*args, **kwargs):
        raise FakeSoftTimeLimit

    monkeypatch.setattr(runner, "integrate", slow)
    outcome = execute_run(
        run_ids[0], worker="t", ctx=context, time_limit_errors=(FakeSoftTimeLimit,)
    )
    assert outcome == "time-limit"
    run, _, _ = read(context, run_ids[0])
    assert (run.status, run.reason) == ("failed", "time_limit")


def test_a_solver_stuck_inside_a_step_meets_the_time_limit(ctx, monkeypatch) -> None:
    """No accepted advance ever comes (a solver stuck in one step, as MINPACK was on a singular
    algebraic system for 10+ minutes inside a batch): the run's alarm stops it at
    ``soft_time_limit`` and the run is a ``time_limit`` failure; the alarm is disarmed after."""
    import signal
    import time

    import solvers

    context, _, run_ids = ctx
    context = WorkerContext(
        settings=context.settings.model_copy(update={"soft_time_limit": 1.0}), db=context.db
    )

    def stuck(*args, **kwargs):
        time.sleep(60)
        raise AssertionError("the alarm should have stopped the solver")

    monkeypatch.setattr(solvers, "solve", stuck)
    handler, (timer, _) = signal.getsignal(signal.SIGALRM), signal.getitimer(signal.ITIMER_REAL)
    start = time.monotonic()
    assert execute_run(run_ids[0], worker="t", ctx=context) == "time-limit"
    elapsed = time.monotonic() - start
    assert elapsed < 30
    run, _, _ = read(context, run_ids[0])
    assert (run.status, run.reason) == ("failed", "time_limit")
    # the timer and handler armed before (pytest-timeout's, if any) are back, less the time spent
    assert signal.getsignal(signal.SIGALRM) is handler
    left = signal.getitimer(signal.ITIMER_REAL)[0]
    assert left == 0.0 if timer == 0.0 else 0.0 < left <= timer - elapsed + 0.5


def test_the_run_alarm_outlives_an_earlier_timer() -> None:
    """An earlier timer armed before the run (pytest-timeout's, say) fires its own handler at
    its deadline, once; the run's alarm then still fires at the run's limit."""
    import signal
    import time

    from workers.limits import RunTimeLimit, run_alarm

    calls = []
    previous = signal.signal(signal.SIGALRM, lambda *a: calls.append(time.monotonic()))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        start = time.monotonic()
        with pytest.raises(RunTimeLimit), run_alarm(0.6, run_id=1):
            time.sleep(5)
        assert len(calls) == 1 and calls[0] - start < 0.5  # the earlier one, at its deadline
        assert 0.5 < time.monotonic() - start < 3.0  # ours, at the run's limit
        assert signal.getitimer(signal.ITIMER_REAL)[0] == 0.0  # not re-armed: it had fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_the_run_alarm_waits_for_a_shielded_database_write() -> None:
    """The alarm never interrupts a database write from the progress callback (``alarm_shield``):
    it fires right after the write, and a signal left pending after the block does nothing."""
    import signal
    import time

    from workers.limits import RunTimeLimit, alarm_shield, run_alarm

    handler = signal.getsignal(signal.SIGALRM)
    start = time.monotonic()
    shielded_until = None
    with pytest.raises(RunTimeLimit), run_alarm(0.1, run_id=1):
        with alarm_shield():
            time.sleep(0.4)  # the deadline passes in here: no exception
            shielded_until = time.monotonic()
        time.sleep(5)
    assert shielded_until is not None and shielded_until - start >= 0.4
    assert time.monotonic() - shielded_until < 1.0  # fired within 50 ms of the write, + slack
    assert signal.getsignal(signal.SIGALRM) is handler
    with run_alarm(0.05, run_id=2):  # the block ends before its deadline: nothing fires later
        pass
    time.sleep(0.2)


def test_unexpected_exception_keeps_its_traceback(ctx, monkeypatch) -> None:
    context, campaign_id, run_ids = ctx

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(runner, "integrate", broken)
    assert execute_run(run_ids[0], worker="t", ctx=context) == "internal-error"
    run, _, _ = read(context, run_ids[0])
    assert (run.status, run.reason) == ("failed", "internal_error")
    assert run.message == "RuntimeError: boom" and "RuntimeError: boom" in run.traceback
    with context.db.read() as session:
        assert repo.get_campaign(session=session, campaign_id=campaign_id).n_failed == 1


def test_cancelling_the_campaign_stops_a_running_run(ctx, monkeypatch) -> None:
    context, campaign_id, run_ids = ctx
    context = WorkerContext(
        settings=context.settings.model_copy(update={"heartbeat_seconds": 0.0}), db=context.db
    )

    def cancelled_midway(system, scenario, method, options, progress, probe=False):
        with context.db.write() as session:
            repo.cancel_campaign(session=session, campaign_id=campaign_id, now=utcnow())
        progress(0.5)  # the heartbeat sees the cancellation and stops the solver
        raise AssertionError("the progress callback should have raised")

    monkeypatch.setattr(runner, "integrate", cancelled_midway)
    assert execute_run(run_ids[0], worker="t", ctx=context) == "cancelled"
    assert execute_run(run_ids[1], worker="t", ctx=context) == "skipped"
    with context.db.read() as session:
        campaign = repo.get_campaign(session=session, campaign_id=campaign_id)
        counts = repo.run_counts(session=session, campaign_id=campaign_id)
    assert counts["cancelled"] == 4 and campaign.status == "cancelled"
    assert campaign.finished_at is not None


def test_settings_fixture_is_isolated(sqlite_settings: Settings, tmp_path) -> None:
    assert sqlite_settings.database_url.startswith(f"sqlite:///{tmp_path}")


@pytest.mark.parametrize("method", ["raptor", "radau"])
def test_soft_time_limit_holds_without_a_signal(make_settings, small_spec, method) -> None:
    """No Celery signal here: the limit is enforced by the worker's own elapsed-time check at
    every accepted advance of the solver driver, for RAPTOR and for a SciPy method."""
    from raptorgrid import migrate
    from raptorgrid.db import Database

    settings = make_settings(soft_time_limit=0.5, hard_time_limit=5.0, visibility_timeout=10)
    migrate.upgrade(settings)
    db = Database.from_settings(settings)
    small_spec["t_end"] = 60.0  # minutes of work at this tolerance
    small_spec["initial_conditions"] = {"count": 1}
    small_spec["methods"] = [{"method": method, "options": {"rtol": 1e-10, "atol": 1e-12}}]
    spec = CampaignCreate.model_validate(small_spec)
    with db.write() as session:
        _, run_ids = repo.create_campaign(
            session=session, spec=spec, expansion=expand(spec, settings=settings), now=utcnow()
        )
    context = WorkerContext(settings=settings, db=db)
    assert execute_run(run_ids[0], worker="t", ctx=context) == "time-limit"
    run, _, _ = read(context, run_ids[0])
    assert (run.status, run.reason) == ("failed", "time_limit")
    assert "soft time limit (0.5 s)" in run.message
    db.dispose()


def test_a_failure_record_interrupted_by_celerys_limit_is_written_again() -> None:
    from workers.limits import despite_late_limit

    class Late(Exception):
        pass

    calls = []

    def record() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise Late  # Celery's soft limit arrived during the write

    despite_late_limit(record, (Late,))
    assert len(calls) == 2
    with pytest.raises(ValueError):  # anything else is not swallowed
        despite_late_limit(lambda: (_ for _ in ()).throw(ValueError("boom")), (Late,))
