"""A batch message of trapezoid runs solved together (``workers.vectorized``): each run is
stored and recorded as if it had been solved alone, a redelivered batch recomputes nothing, and
the group's lease tells lost and cancelled runs apart."""

from __future__ import annotations

import time

import numpy as np
from raptorgrid import repository as repo
from raptorgrid.tables import utcnow
from raptorgrid.zarr_store import open_run
from test_platform_blocks import campaign

from workers.runner import WorkerContext, execute_batch, execute_run
from workers.vectorized import GroupLease, vector_config

SPEC = {
    "name": "vectorized trapezoid",
    "network": "wscc9",
    "t_end": 0.4,
    "n_eval": 41,
    "disturbances": [
        {"kind": "bus_fault", "bus": "bus7", "t_fault": 0.05, "t_clear": 0.1},
        {"kind": "branch_trip", "branch": "br_6_7", "t": 0.0731},
    ],
    "initial_conditions": {"count": 3, "seed": 0, "spread": 0.3},
    "methods": [{"method": "trapezoid", "options": {"dt": 0.002}}],
}


def test_runs_solved_together_are_stored_as_runs_solved_alone(sqlite_settings, sqlite_db) -> None:
    context = WorkerContext(settings=sqlite_settings, db=sqlite_db)
    together, together_ids = campaign(context, SPEC)
    alone, alone_ids = campaign(context, SPEC)
    inputs = vector_config(context, together_ids)
    assert inputs is not None and set(inputs) == set(together_ids)
    assert {(i.network, i.method) for i in inputs.values()} == {("wscc9", "trapezoid")}
    phases: list[dict] = []
    start = time.perf_counter()
    outcomes = execute_batch(together_ids, worker="t", ctx=context, phases=phases)
    batch_wall = time.perf_counter() - start
    assert outcomes == ["succeeded"] * 6
    assert all({"claim", "build", "solve", "write", "commit"} <= set(p) for p in phases)
    for run_id in alone_ids:
        assert execute_run(run_id, worker="t", ctx=context) == "succeeded"
    root = sqlite_settings.zarr_root
    accounted = 0.0
    with sqlite_db.read() as session:
        for a, b in zip(together_ids, alone_ids, strict=True):
            run, _, metrics = repo.get_run(session=session, run_id=a)
            _, _, own_metrics = repo.get_run(session=session, run_id=b)
            assert run.status == "succeeded" and run.attempts == 1
            mine, own = open_run(root, together, a).load(), open_run(root, alone, b).load()
            for name in ("x", "z", "y", "t_acc", "x_acc"):
                np.testing.assert_allclose(mine[name].values, own[name].values, atol=1e-11)
            for counter in ("accepted", "newton_iterations", "lu_factorizations"):
                assert getattr(metrics, counter) == getattr(own_metrics, counter), counter
            assert metrics.solve_seconds > 0 and metrics.overhead_seconds >= 0
            accounted += (metrics.solve_seconds + metrics.compile_seconds
                          + metrics.load_seconds + metrics.overhead_seconds)  # fmt: skip
    # each run is charged its share of the batch, not the whole batch's time
    assert accounted <= batch_wall, (accounted, batch_wall)
    # a redelivered batch: every run is final already, nothing is solved again
    assert execute_batch(together_ids, worker="t", ctx=context) == ["skipped"] * 6
    with sqlite_db.read() as session:
        assert all(repo.get_run(session=session, run_id=r)[0].attempts == 1 for r in together_ids)


def test_mixed_batches_are_not_vectorized(sqlite_settings, sqlite_db) -> None:
    context = WorkerContext(settings=sqlite_settings, db=sqlite_db)
    spec = dict(SPEC, methods=[{"method": "trapezoid", "options": {"dt": 0.002}},
                               {"method": "trapezoid", "options": {"dt": 0.001}}])  # fmt: skip
    _, run_ids = campaign(context, spec)
    assert vector_config(context, run_ids) is None  # two option sets
    assert vector_config(context, run_ids[:1]) is None  # one run
    radau = dict(SPEC, methods=[{"method": "radau"}])
    _, radau_ids = campaign(context, radau)
    assert vector_config(context, radau_ids) is None


def test_the_group_lease_reports_lost_and_cancelled_runs(sqlite_settings, sqlite_db) -> None:
    context = WorkerContext(settings=sqlite_settings, db=sqlite_db)
    campaign_id, run_ids = campaign(context, SPEC)
    other_id, other_ids = campaign(context, SPEC)
    claims = []
    with sqlite_db.write() as session:
        for run_id in (run_ids[0], run_ids[1], other_ids[0]):
            claims.append(
                repo.claim_run(
                    session=session,
                    run_id=run_id,
                    worker="t",
                    now=utcnow(),
                    lease_seconds=60.0,
                    max_attempts=3,
                )  # fmt: skip
            )
    lease = GroupLease(context, claims)
    assert set(lease.renew().values()) == {repo.LeaseState.HELD}
    stolen = claims[1]
    with sqlite_db.write() as session:  # another attempt took run 2 after its lease expired
        from raptorgrid.tables import Run
        from sqlalchemy import update

        session.execute(update(Run).where(Run.id == stolen.run_id).values(attempts=2))
        repo.cancel_campaign(session=session, campaign_id=other_id, now=utcnow())
    states = lease.renew()
    assert states[claims[0].run_id] is repo.LeaseState.HELD
    assert states[stolen.run_id] is repo.LeaseState.LOST
    assert states[claims[2].run_id] is repo.LeaseState.CANCELLED


def test_runs_solved_together_that_cannot_be_published_are_recorded_failures(
    sqlite_settings, sqlite_db, monkeypatch
) -> None:
    """The vectorized path: a failing block write records every solved run of it as failed
    (found on emt_gfl at dt 1e-6: the runs were left running and the task raised KeyError)."""
    import raptorgrid.zarr_store as zs

    def broken(*args, **kwargs):
        raise ValueError("Codec does not support buffers of > 2147483647 bytes")

    monkeypatch.setattr(zs, "write_dataset", broken)
    context = WorkerContext(settings=sqlite_settings, db=sqlite_db)
    _, run_ids = campaign(context, SPEC)
    assert vector_config(context, run_ids) is not None
    assert execute_batch(run_ids, worker="t", ctx=context) == ["internal-error"] * 6
    with sqlite_db.read() as session:
        for run_id in run_ids:
            run, _, _ = repo.get_run(session=session, run_id=run_id)
            assert (run.status, run.reason, run.attempts) == ("failed", "internal_error", 1)
