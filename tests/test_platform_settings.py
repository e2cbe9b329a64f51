"""Settings defaults (the embedded default needs no configuration) and the Celery config."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest
from pydantic import ValidationError
from raptorgrid.celery_app import RUN_TASK, celery_config, create_celery
from raptorgrid.settings import Settings
from raptorgrid.tables import STATS_COLUMNS, RunMetrics

from solvers.result import Stats


def test_defaults_need_no_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    s = Settings()
    data = tmp_path / "raptorgrid-data"
    assert s.data_dir == data
    assert s.database_url == f"sqlite:///{data}/raptorgrid.sqlite"
    assert s.zarr_root == data / "zarr"
    assert s.broker_url == f"sqla+sqlite:///{data}/broker.sqlite"
    assert s.jax_cache_dir == data / "jax-cache"
    assert s.hard_time_limit > s.soft_time_limit
    assert s.visibility_timeout > s.hard_time_limit
    assert s.max_attempts == 3


def test_environment_overrides_and_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAPTORGRID_DATABASE_URL", "postgresql+psycopg://u@db/raptorgrid")
    monkeypatch.setenv("RAPTORGRID_PREBUILD_NETWORKS", '["wscc9"]')
    s = Settings()
    assert s.database_url == "postgresql+psycopg://u@db/raptorgrid"
    assert s.prebuild_networks == ["wscc9"]
    for key, value in s.as_env().items():
        monkeypatch.setenv(key, value)
    assert Settings() == s


def test_visibility_timeout_must_exceed_hard_limit() -> None:
    with pytest.raises(ValidationError, match="visibility_timeout must exceed"):
        Settings(hard_time_limit=400, visibility_timeout=300)
    with pytest.raises(ValidationError, match="hard_time_limit must exceed"):
        Settings(soft_time_limit=100, hard_time_limit=50)


def test_celery_config_redis(tmp_path: Path) -> None:
    s = Settings(data_dir=tmp_path, broker_url="redis://localhost:6379/0", queue="q1")
    conf = celery_config(s)
    for key in ("broker_transport_options", "result_backend_transport_options"):
        assert conf[key]["visibility_timeout"] == s.visibility_timeout
    assert conf["visibility_timeout"] == s.visibility_timeout > conf["task_time_limit"]
    assert s.soft_time_limit < conf["task_soft_time_limit"] < conf["task_time_limit"]
    assert conf["task_time_limit"] == s.hard_time_limit
    assert conf["task_acks_late"] and conf["task_reject_on_worker_lost"]
    assert conf["task_ignore_result"]
    assert conf["worker_prefetch_multiplier"] == 1
    assert conf["worker_pool_start_method"] == "spawn"
    # a broker blip must not stop runs in flight (their results need no broker)
    assert conf["worker_cancel_long_running_tasks_on_connection_loss"] is False
    assert conf["worker_proc_alive_timeout"] == s.worker_start_timeout  # > JAX import + prebuild
    assert conf["task_routes"][RUN_TASK] == {"queue": "q1"}
    assert [q.name for q in conf["task_queues"]] == ["q1"]


def test_celery_config_serverless_broker(tmp_path: Path) -> None:
    """kombu's SQLA channel hands every transport option to create_engine: only engine
    arguments may go there, and the polling interval is set on the transport class."""
    from kombu.transport.sqlalchemy import Transport

    s = Settings(data_dir=tmp_path, broker_polling_interval=0.05)
    conf = celery_config(s)
    assert set(conf["broker_transport_options"]) == {"connect_args"}
    create_celery(s)
    assert Transport.polling_interval == 0.05


def test_stats_schema_is_the_metrics_columns() -> None:
    assert tuple(f.name for f in fields(Stats)) == STATS_COLUMNS
    assert set(STATS_COLUMNS) <= set(RunMetrics.__table__.columns.keys())


def test_celery_limits_are_a_backstop_behind_each_runs_own() -> None:
    """Celery's soft limit comes a margin after the runs' own limits (so the two never race)
    and before the hard limit; a batch of n runs gets n times each run's limits."""
    from raptorgrid.celery_app import task_time_limits

    assert task_time_limits(25.0, 50.0) == (27.5, 50.0)
    assert task_time_limits(300.0, 310.0) == (305.0, 310.0)  # half-way when the gap is small
    assert task_time_limits(5.0, 60.0) == (7.0, 60.0)  # at least 2 s
    assert task_time_limits(25.0, 50.0, 4) == (102.5, 200.0)
