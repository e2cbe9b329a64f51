"""A batch's solved runs published together: one Zarr block and one SQL transaction, each run
still read alone (``open_run``), identical to a run written on its own."""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr
from raptorgrid import repository as repo
from raptorgrid.spec import CampaignCreate, expand
from raptorgrid.tables import utcnow
from raptorgrid.zarr_store import BLOCKS, campaign_store, open_run

from workers.runner import WorkerContext, execute_batch, execute_run


def campaign(context: WorkerContext, spec: dict) -> tuple[int, list[int]]:
    parsed = CampaignCreate.model_validate(spec)
    with context.db.write() as session:
        row, run_ids = repo.create_campaign(
            session=session,
            spec=parsed,
            expansion=expand(parsed, settings=context.settings),
            now=utcnow(),
        )
    return row.id, run_ids


def test_a_batch_is_one_block_and_reads_back_as_runs_written_alone(
    make_settings, small_spec, monkeypatch
) -> None:
    """A batch's solved runs are one block; each reads back identical to the same run written
    alone, and the initial states of the runs claimed together were solved together (bit for
    bit as alone: the stored runs are identical)."""
    from raptorgrid import migrate
    from raptorgrid.db import Database

    import models.scenarios

    alone_newtons: list[int] = []  # initial states solved one run at a time
    one = models.scenarios.consistent_z
    monkeypatch.setattr(models.scenarios, "consistent_z",
                        lambda *a, **k: alone_newtons.append(1) or one(*a, **k))  # fmt: skip

    small_spec["methods"].append({"method": "raptor"})  # 2 ICs x 3 configurations
    settings = make_settings(result_flush_seconds=60.0)  # a first compile may take seconds
    migrate.upgrade(settings)
    sqlite_settings, sqlite_db = settings, Database.from_settings(settings)
    context = WorkerContext(settings=settings, db=sqlite_db)
    batched, batched_ids = campaign(context, small_spec)
    alone, alone_ids = campaign(context, small_spec)
    phases: list[dict] = []
    assert execute_batch(batched_ids, worker="t", ctx=context, phases=phases) == ["succeeded"] * 6
    assert len(alone_newtons) == 1  # the first run alone, then the other five claimed together
    for run_id in alone_ids:
        assert execute_run(run_id, worker="t", ctx=context) == "succeeded"
    assert len(alone_newtons) == 7

    store = campaign_store(sqlite_settings.zarr_root, batched)
    blocks = [p for p in (store / BLOCKS).iterdir() if p.suffix == ".zip"]
    assert len(blocks) == 1 and blocks[0].is_file()  # six short runs: one block, one zip file
    for run_id in batched_ids:  # each run's group is a pointer into the block
        pointer = json.loads((store / f"run_{run_id}" / "zarr.json").read_text())
        assert pointer["attributes"]["block"] == f"{BLOCKS}/{blocks[0].name}"
    assert not (campaign_store(sqlite_settings.zarr_root, alone) / BLOCKS).exists()
    with sqlite_db.read() as session:
        for a, b in zip(batched_ids, alone_ids, strict=True):
            run, _, metrics = repo.get_run(session=session, run_id=a)
            assert run.status == "succeeded" and run.sim_time == pytest.approx(1.0)
            assert run.zarr_group == f"campaign_{batched}.zarr/run_{a}"
            mine = open_run(sqlite_settings.zarr_root, batched, a).load()
            own = open_run(sqlite_settings.zarr_root, alone, b).load()
            # the same numbers as the run written alone; the padding of the block cut away
            xr.testing.assert_identical(mine.drop_attrs(), own.drop_attrs())
            assert mine.sizes["step"] == metrics.n_accepted_points
            assert not np.isnan(mine.t_acc.values).any()
            assert mine.attrs["run_id"] == a and "block" not in mine.attrs
            assert metrics.overhead_seconds >= 0 and metrics.state_error is None
    assert all({"claim", "build", "solve", "write", "commit"} <= set(p) for p in phases)
    sqlite_db.dispose()


def test_runs_longer_than_the_bound_are_published_one_by_one(make_settings, small_spec) -> None:
    from raptorgrid import migrate
    from raptorgrid.db import Database

    settings = make_settings(result_flush_seconds=0.0)
    migrate.upgrade(settings)
    db = Database.from_settings(settings)
    context = WorkerContext(settings=settings, db=db)
    campaign_id, run_ids = campaign(context, small_spec)
    assert execute_batch(run_ids, worker="t", ctx=context) == ["succeeded"] * 4
    store = campaign_store(settings.zarr_root, campaign_id)
    assert not (store / BLOCKS).exists()  # nothing held: each published before the next
    for run_id in run_ids:
        assert open_run(settings.zarr_root, campaign_id, run_id).sizes["time"] == 51
    db.dispose()


def test_short_runs_are_claimed_together_and_keep_their_leases_while_waiting(
    make_settings, small_spec, monkeypatch
) -> None:
    """After the first run (its duration unknown: claimed alone) the runs expected to finish
    within one flush window are claimed in one statement; while the first of them runs far
    past the lease, its heartbeats renew the leases of those waiting behind it, so no other
    worker can claim them; every run ends with one attempt."""
    from raptorgrid import migrate
    from raptorgrid.db import Database

    from workers import runner

    settings = make_settings(lease_seconds=4.0, heartbeat_seconds=0.2, result_flush_seconds=60.0)
    migrate.upgrade(settings)
    db = Database.from_settings(settings)
    context = WorkerContext(settings=settings, db=db)
    _, warm = campaign(context, small_spec)  # build and compile first: the next run is quick
    assert execute_run(warm[0], worker="t", ctx=context) == "succeeded"
    small_spec["initial_conditions"]["count"] = 3  # 6 runs: 3 ICs x 2 configurations
    campaign_id, run_ids = campaign(context, small_spec)
    groups: list[list[int]] = []
    claim_runs = repo.claim_runs

    def recorded(**kw):  # noqa: ANN003
        groups.append(list(kw["run_ids"]))
        return claim_runs(**kw)

    monkeypatch.setattr(repo, "claim_runs", recorded)
    stolen: list[dict] = []
    integrate = runner.integrate

    def slow_second(system, scenario, method, options, heartbeat, **kw):  # noqa: ANN001
        if heartbeat.claim.run_id == run_ids[1]:
            import time

            time.sleep(1.25 * settings.lease_seconds)  # no advance: only the lease thread renews
            with db.write() as session:  # another worker tries to take the waiting runs
                stolen.append(
                    claim_runs(session=session, run_ids=groups[-1][1:], worker="x", now=utcnow(),
                               lease_seconds=60, max_attempts=9)
                )  # fmt: skip
        return integrate(system, scenario, method, options, heartbeat, **kw)

    monkeypatch.setattr(runner, "integrate", slow_second)
    assert execute_batch(run_ids, worker="t", ctx=context) == ["succeeded"] * 6
    # the first run alone, then (bound 1.9 s: half the lease less a heartbeat) a group
    assert groups[0] == run_ids[:1] and groups[1][0] == run_ids[1] and len(groups[1]) >= 2
    assert stolen == [{}]  # the waiting runs' leases were renewed with the running one's
    with db.read() as session:
        for run_id in run_ids:
            run, _, _ = repo.get_run(session=session, run_id=run_id)
            assert (run.status, run.attempts, run.worker) == ("succeeded", 1, "t")
    db.dispose()


def test_held_runs_keep_their_leases_while_they_are_written(make_settings, small_spec) -> None:
    """A batch's solved runs are published after their attempts have ended (``execute_batch``
    holds them); a write slower than the lease (a 2 s pause inside the Zarr write, lease 1.5 s)
    still keeps them: the batch's lease thread renews them meanwhile, so a worker polling for
    expired leases takes none, and every run ends with one attempt."""
    import threading

    from raptorgrid import migrate
    from raptorgrid.db import Database

    settings = make_settings(lease_seconds=1.5, heartbeat_seconds=0.2, result_flush_seconds=0.0,
                             zarr_write_pause_seconds=2.0)  # fmt: skip
    migrate.upgrade(settings)
    db = Database.from_settings(settings)
    context = WorkerContext(settings=settings, db=db)
    small_spec["initial_conditions"]["count"] = 1  # 2 runs
    _, run_ids = campaign(context, small_spec)
    stolen: list[int] = []
    done = threading.Event()

    def thief() -> None:  # takes any run of worker "t" whose lease has expired
        # it looks in read transactions and writes only to claim an expired lease: a write
        # every 50 ms kept SQLite's lock busy enough to starve the worker's renewals on a
        # loaded machine (a lease lost in one CI run), which a worker polling for expired
        # leases never does
        while not done.wait(0.05):
            with db.read() as session:
                rows = [repo.get_run(session=session, run_id=r)[0] for r in run_ids]
                now = utcnow()
                expired = [row.id for row in rows if row.status == "running"
                           and row.lease_until is not None and row.lease_until < now]  # fmt: skip
            if expired:
                with db.write() as session:
                    taken = repo.claim_runs(
                        session=session, run_ids=expired, worker="x", now=utcnow(),
                        lease_seconds=60, max_attempts=9,
                    )  # fmt: skip
                stolen.extend(taken)

    watcher = threading.Thread(target=thief, daemon=True)
    watcher.start()
    try:
        outcomes = execute_batch(run_ids, worker="t", ctx=context)
    finally:
        done.set()
        watcher.join(timeout=10)
    assert stolen == [] and outcomes == ["succeeded"] * 2
    with db.read() as session:
        for run_id in run_ids:
            run, _, _ = repo.get_run(session=session, run_id=run_id)
            assert (run.status, run.attempts, run.worker) == ("succeeded", 1, "t")
    db.dispose()


def test_a_failing_run_in_a_batch_is_published_with_the_others(
    sqlite_settings, sqlite_db, small_spec
) -> None:
    small_spec["methods"] = [
        {"method": "radau", "options": {"rtol": 1e-4, "max_steps": [2, 10000]}}
    ]
    context = WorkerContext(settings=sqlite_settings, db=sqlite_db)
    campaign_id, run_ids = campaign(context, small_spec)
    outcomes = execute_batch(run_ids, worker="t", ctx=context)
    assert sorted(outcomes) == ["failed", "failed", "succeeded", "succeeded"]
    with sqlite_db.read() as session:
        for run_id, outcome in zip(run_ids, outcomes, strict=True):
            run, _, metrics = repo.get_run(session=session, run_id=run_id)
            assert run.status == outcome and metrics is not None
            if outcome == "failed":
                assert run.reason == "max_steps"


def test_runs_that_cannot_be_published_are_recorded_failures(
    sqlite_settings, sqlite_db, small_spec, monkeypatch
) -> None:
    """A block whose write fails (found with 2e6-step trapezoid runs: a 2.7 GB array past
    Blosc's 2 GiB limit) ends its runs as failed internal errors, each with the reason, instead
    of leaving them running to be retried until their attempts are spent."""
    import raptorgrid.zarr_store as zs

    def broken(*args, **kwargs):
        raise ValueError("Codec does not support buffers of > 2147483647 bytes")

    monkeypatch.setattr(zs, "write_dataset", broken)
    context = WorkerContext(settings=sqlite_settings, db=sqlite_db)
    campaign_id, run_ids = campaign(context, small_spec)
    outcomes = execute_batch(run_ids, worker="t", ctx=context)
    assert outcomes == ["internal-error"] * len(run_ids)
    with sqlite_db.read() as session:
        for run_id in run_ids:
            run, _, _ = repo.get_run(session=session, run_id=run_id)
            assert (run.status, run.reason, run.attempts) == ("failed", "internal_error", 1)
            assert "2147483647" in run.message
        assert repo.get_campaign(session=session, campaign_id=campaign_id).finished_at
