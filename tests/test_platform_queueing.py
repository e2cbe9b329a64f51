"""The embedded broker's depth query returns its database connection (regression: a long
``raptorgrid run`` exhausted kombu's SQLAlchemy pool through the reconciler's depth polls)."""

from __future__ import annotations

import gc
from pathlib import Path

from raptorgrid.celery_app import create_celery
from raptorgrid.queueing import enqueue_runs, queue_depth
from raptorgrid.settings import Settings


def test_depth_polls_do_not_exhaust_the_embedded_broker_pool(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, database_url="")
    celery = create_celery(settings)
    enqueue_runs(celery, [1, 2, 3], queue=settings.queue)
    gc.disable()  # the leak hid behind garbage collection: without it 15 polls ran the pool dry
    try:
        depths = [queue_depth(celery, queue=settings.queue) for _ in range(40)]
    finally:
        gc.enable()
    assert depths == [3] * 40
