"""A run whose message was lost is re-sent by the reconciler on its next pass after the grace
period, however many messages wait in the queue (issue: hardening, self-healing reconciler).
Real brokers: the embedded SQLAlchemy transport on SQLite, and the machine's Redis; a message is
"lost" as a killed worker loses it (the SQLAlchemy transport hides a delivered message and never
restores it), and on Redis a message a live worker holds unacknowledged is not re-sent."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from raptorgrid import migrate
from raptorgrid import repository as repo
from raptorgrid.celery_app import create_celery
from raptorgrid.db import Database
from raptorgrid.queueing import enqueue_runs, queue_depth, runs_in_broker
from raptorgrid.reconcile import reconcile_once
from raptorgrid.spec import CampaignCreate, expand
from raptorgrid.tables import Run, utcnow
from sqlalchemy import update

N_RUNS = 40
GRACE = 5.0


def _campaign(settings, spec: dict) -> list[int]:  # noqa: ANN001
    spec = {**spec, "initial_conditions": {"count": N_RUNS // 2, "seed": 3, "spread": 0.1}}
    parsed = CampaignCreate.model_validate(spec)
    expansion = expand(parsed, settings=settings)
    db = Database.from_settings(settings)
    with db.write() as session:
        _, run_ids = repo.create_campaign(
            session=session, spec=parsed, expansion=expansion, now=utcnow(), raw_spec=spec
        )
    db.dispose()
    return run_ids


def _age(settings, seconds: float) -> None:  # noqa: ANN001
    """Every queued run was last sent ``seconds`` ago."""
    db = Database.from_settings(settings)
    with db.write() as session:
        session.execute(
            update(Run).where(Run.status == "queued")
            .values(enqueued_at=utcnow() - timedelta(seconds=seconds))
        )  # fmt: skip
    db.dispose()


def _lose_sqla_message(settings, run_id: int) -> None:  # noqa: ANN001
    """What a worker killed after fetching a message leaves: the row hidden, never restored."""
    from raptorgrid.broker import sqla_engine_url
    from sqlalchemy import create_engine, text

    engine = create_engine(sqla_engine_url(settings.broker_url))
    with engine.begin() as connection:
        rows = connection.execute(text("SELECT id, payload FROM kombu_message")).all()
        ids = [i for i, payload in rows if _carries(payload, run_id)]
        assert len(ids) == 1
        hide = text("UPDATE kombu_message SET visible = 0 WHERE id = :i")
        connection.execute(hide, {"i": ids[0]})
    engine.dispose()


def _carries(payload: str, run_id: int) -> bool:
    import base64

    body = json.loads(base64.b64decode(json.loads(payload)["body"]))
    return body[0][0] == [run_id]


def _reconcile_after_grace(settings, celery, run_ids: list[int]) -> list[int]:  # noqa: ANN001
    db = Database.from_settings(settings)
    try:
        assert reconcile_once(db=db, celery=celery, settings=settings).requeued == []  # fresh
        _age(settings, GRACE + 1)
        requeued = reconcile_once(db=db, celery=celery, settings=settings).requeued
        again = reconcile_once(db=db, celery=celery, settings=settings).requeued
    finally:
        db.dispose()
    assert again == []  # marked as sent: not re-sent on every pass
    return [r for r in requeued if r in run_ids]


def test_lost_message_resent_behind_a_deep_embedded_queue(make_settings, small_spec) -> None:
    settings = make_settings(requeue_grace_seconds=GRACE)
    migrate.upgrade(settings)
    celery = create_celery(settings)
    run_ids = _campaign(settings, small_spec)
    enqueue_runs(celery, run_ids, queue=settings.queue)
    lost = run_ids[N_RUNS // 2]
    _lose_sqla_message(settings, lost)
    assert runs_in_broker(celery, queue=settings.queue) == set(run_ids) - {lost}

    assert _reconcile_after_grace(settings, celery, run_ids) == [lost]
    assert queue_depth(celery, queue=settings.queue) == N_RUNS  # 39 waiting + the re-sent one
    assert runs_in_broker(celery, queue=settings.queue) == set(run_ids)


@pytest.mark.services
def test_lost_message_resent_behind_a_deep_redis_queue(
    make_settings, small_spec, redis_url, redis_queue
) -> None:
    settings = make_settings(broker_url=redis_url, queue=redis_queue, requeue_grace_seconds=GRACE)
    migrate.upgrade(settings)
    celery = create_celery(settings)
    run_ids = _campaign(settings, small_spec)
    enqueue_runs(celery, run_ids, queue=settings.queue)
    lost, held = run_ids[N_RUNS // 2], run_ids[0]
    with celery.connection_for_write() as connection:
        import redis

        client = redis.Redis.from_url(redis_url)
        entries = client.lrange(redis_queue, 0, -1)
        mine = [e for e in entries if _carries(json.dumps(json.loads(e)), lost)]
        assert client.lrem(redis_queue, 1, mine[0]) == 1  # the message is gone
        client.close()
        # a live worker's delivered, unacknowledged message (first in line): not lost
        queue = connection.SimpleQueue(redis_queue, no_ack=False)
        message = queue.get(timeout=5)
        assert json.loads(message.body)[0] == [[held]]
        assert queue_depth(celery, queue=redis_queue) == N_RUNS - 2
        assert runs_in_broker(celery, queue=redis_queue) == set(run_ids) - {lost}

        assert _reconcile_after_grace(settings, celery, run_ids) == [lost]
        assert runs_in_broker(celery, queue=redis_queue) == set(run_ids)
        message.ack()
