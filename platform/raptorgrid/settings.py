"""One typed settings object for the API, the workers and the CLI.

Every value comes from the environment (prefix ``RAPTORGRID_``) or its default; nothing else in
the package reads ``os.environ``. With no configuration at all the platform is embedded: SQLite,
local Zarr and the serverless kombu SQLAlchemy broker, all under ``./raptorgrid-data``.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Self

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from raptorgrid import zarr_object

ENV_PREFIX = "RAPTORGRID_"
SECRET_FIELDS = {"admin_token", "api_token"}
"""Settings never passed on to child processes (a worker needs no API secret)."""


def _zarr_root(value: Path | str | None, data: Path) -> Path | str:
    """An object-store URL as given (checked), else an absolute folder (default data/zarr)."""
    if zarr_object.is_object_url(value):
        return zarr_object.check_url(str(value))
    return Path(value or data / "zarr").expanduser().absolute()


class Settings(BaseSettings):
    """Platform configuration; derived locations default to files under ``data_dir``."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    data_dir: Path = Field(
        Path("raptorgrid-data"), description="root of local state (cwd-relative)"
    )
    database_url: str = Field("", description="SQLAlchemy URL; default SQLite in data_dir")
    zarr_root: Path | str | None = Field(
        None, description="folder of campaign Zarr stores, or s3://bucket/prefix (object store)"
    )
    broker_url: str = Field("", description="Celery broker; default serverless sqla+sqlite")
    queue: str = Field("raptorgrid.runs", min_length=1, description="the run queue's name")
    jax_cache_dir: Path | None = Field(None, description="JAX persistent compilation cache")
    migrations_dir: Path | None = Field(None, description="Alembic scripts (default: in source)")

    soft_time_limit: float = Field(300.0, gt=0, description="s; the run fails as time_limit")
    hard_time_limit: float = Field(360.0, gt=0, description="s; the pool process is killed")
    visibility_timeout: int = Field(420, gt=0, description="s; must exceed the hard limit")
    lease_seconds: float = Field(120.0, gt=0, description="a claim's lifetime without heartbeat")
    heartbeat_seconds: float = Field(5.0, gt=0, description="least interval between heartbeats")
    max_attempts: int = Field(3, ge=1, description="claims of one run before it is failed")
    requeue_grace_seconds: float = Field(
        30.0, gt=0, description="age of a queued run re-sent when its message is gone"
    )

    max_runs_per_campaign: int = Field(10_000, ge=1)
    max_horizon: float = Field(60.0, gt=0, description="largest t_end (s)")
    max_eval_points: int = Field(20_001, ge=2, description="largest n_eval")

    sqlite_busy_timeout_ms: int = Field(30_000, ge=0)
    broker_polling_interval: float = Field(
        0.1, gt=0, description="s; idle poll of serverless (SQLA) transports"
    )
    embedded_workers: int = Field(
        default_factory=lambda: max(1, len(os.sched_getaffinity(0))),
        ge=1,
        description="worker processes started by `raptorgrid run` (default: usable cores)",
    )
    prebuild_networks: list[str] = Field(
        default_factory=list,
        description="networks a worker process builds and compiles when it starts (JSON list)",
    )
    prebuild_methods: list[str] = Field(
        default_factory=list,
        description="methods compiled for those networks at worker start (JSON list; default: "
        "the reduced-ODE kernels only)",
    )
    zarr_fsync: bool = Field(True, description="flush a run's files before publishing them")
    result_flush_seconds: float = Field(
        2.0,
        ge=0,
        description="longest a batch holds solved runs before publishing them together (s): "
        "a crash recomputes at most this much finished work per worker; a block's write and "
        "commit (~30 ms) are shared by the runs it holds (ieee39 Radau, 0.25 s runs: claim, "
        "Zarr and SQL 8.1 ms per run at 1 s, 3.9 ms at 2 s; docs/platform.md)",
    )
    result_block_max: int = Field(
        64, ge=1, le=1024, description="most runs a batch publishes in one Zarr block"
    )
    max_batch_size: int = Field(
        64, ge=1, description="most runs one task message carries (1 turns batching off)"
    )
    batch_target_seconds: float = Field(
        2.0, gt=0, description="s; expected solve time a batch of short runs is sized to fill"
    )
    batch_min_tasks: int = Field(
        8, ge=1, description="a campaign is split into at least this many messages if it can"
    )
    reconcile_seconds: float = Field(5.0, gt=0, description="interval of the reconciler loop")
    worker_start_timeout: float = Field(120.0, gt=0, description="s; embedded worker start")

    admin_token: SecretStr | None = Field(
        None, description="bootstrap admin API token (from the environment only; never exported)"
    )
    api_token: SecretStr | None = Field(
        None, description="the token `submit`/`cancel`/`status --api` send (from the environment)"
    )
    read_requires_token: bool = Field(
        False, description="GET endpoints need a valid token too (default: reads are open)"
    )
    max_case_bytes: int = Field(5_000_000, ge=1, description="largest uploaded case file (bytes)")
    case_check_cpu_seconds: int = Field(
        20, ge=1, description="s of CPU the check of one uploaded case file may use (422 beyond)"
    )
    case_check_memory_mb: int = Field(
        2048, ge=16, description="MB of memory the check of one uploaded case may add (422 beyond)"
    )
    max_request_bytes: int = Field(
        6_000_000, ge=1, description="largest request body (bytes), refused before parsing"
    )
    max_json_depth: int = Field(32, ge=4, description="deepest nesting of a JSON request body")
    write_rate_per_minute: float = Field(
        120.0, gt=0, description="writes per minute allowed to one token owner (429 beyond)"
    )
    write_burst: int = Field(60, ge=1, description="writes one owner may make at once")
    auth_failures_per_minute: float = Field(
        10.0, gt=0, description="failed authentications per minute allowed to one client (429)"
    )
    auth_failure_burst: int = Field(
        10, ge=1, description="failed authentications one client may make at once"
    )
    db_retry_seconds: float = Field(
        120.0, ge=0, description="s; how long a worker retries a write while the database is down"
    )
    store_retry_seconds: float = Field(
        120.0,
        ge=0,
        description="s; how long a worker retries a write while the results store "
        "is full before handing its runs back to the queue (their attempt not counted)",
    )
    store_degraded_free_bytes: int = Field(
        1 << 30, ge=0, description="/health reports the store degraded below this free space"
    )
    store_failing_free_bytes: int = Field(
        64 << 20, ge=0, description="/health reports the store failing (503) below this"
    )
    zarr_write_pause_seconds: float = Field(
        0.0, ge=0, description="fault injection for tests: pause inside a run's Zarr write"
    )

    api_host: str = "127.0.0.1"
    api_port: int = Field(8000, ge=1, le=65535)
    api_url: str = Field("", description="base URL used by `submit`/`status` (default host:port)")
    log_level: str = "INFO"

    @model_validator(mode="after")
    def _derive(self) -> Self:
        data = self.data_dir.expanduser().absolute()
        derived = {
            "data_dir": data,
            "database_url": self.database_url or f"sqlite:///{data / 'raptorgrid.sqlite'}",
            "zarr_root": _zarr_root(self.zarr_root, data),
            "broker_url": self.broker_url or f"sqla+sqlite:///{data / 'broker.sqlite'}",
            "jax_cache_dir": (self.jax_cache_dir or data / "jax-cache").expanduser().absolute(),
            "api_url": self.api_url or f"http://{self.api_host}:{self.api_port}",
        }
        for name, value in derived.items():
            object.__setattr__(self, name, value)
        if self.hard_time_limit <= self.soft_time_limit:
            raise ValueError("hard_time_limit must exceed soft_time_limit")
        if self.visibility_timeout <= self.hard_time_limit:
            raise ValueError(
                "visibility_timeout must exceed hard_time_limit, else a broker redelivers a "
                "task that is still running"
            )
        if self.lease_seconds <= 2 * self.heartbeat_seconds:
            raise ValueError("lease_seconds must exceed twice heartbeat_seconds")
        return self

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @property
    def broker_is_sqla(self) -> bool:
        return self.broker_url.startswith("sqla+")

    def as_env(self) -> dict[str, str]:
        """The resolved settings as ``RAPTORGRID_*`` variables, so that processes started from
        this one (embedded workers) use exactly the same configuration."""
        env = {}
        for name, value in self.model_dump(mode="json", exclude=SECRET_FIELDS).items():
            if value is not None:
                text = value if isinstance(value, str) else json.dumps(value)
                env[f"{ENV_PREFIX}{name.upper()}"] = text
        return env


@functools.cache
def get_settings() -> Settings:
    """The process-wide settings, read from the environment once."""
    return Settings()
