"""One meaning of runtime: the solve time; compile and overhead as their own columns.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03

Before, ``run_metrics.runtime_seconds`` was the wall time of the whole method call (system
build, compilation and solve) while the statistics called the median solve time "runtime" too.
Now:

- ``run_metrics.overhead_seconds``: the worker's time for the attempt outside the solve,
  compilation and executable loading (claim, system build, lease check, result write);
  backfilled as max(0, old runtime - solve - compile - load), which omits the old rows' claim
  and write time. ``run_metrics.runtime_seconds`` is dropped.
- ``runs.metric_runtime_seconds`` and its index ``ix_runs_config_runtime_seconds`` are dropped
  (only the solve-time percentiles are kept).
- ``config_totals``: the runtime pivots are dropped; ``solve_p95`` (+ ``_run``) is added beside
  ``solve_p50`` and filled from the runs; ``sum_compile_seconds`` (compile + load) and
  ``sum_overhead_seconds`` are added and backfilled.
- ``scenario_indicators``: severity becomes the largest rotor-angle separation / 360 deg and the
  verdict TSI > 0 (``scoring.indicators``); rows scored before are recomputed from their stored
  separation (rows judged unstable below the old 180 deg limit were non-finite and stay
  unstable with severity >= 1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("run_metrics") as batch:
        batch.add_column(
            sa.Column("overhead_seconds", sa.Float(), nullable=False, server_default="0")
        )
    op.execute(
        "UPDATE run_metrics SET overhead_seconds = CASE WHEN runtime_seconds - solve_seconds "
        "- compile_seconds - load_seconds > 0 THEN runtime_seconds - solve_seconds "
        "- compile_seconds - load_seconds ELSE 0 END"
    )
    with op.batch_alter_table("run_metrics") as batch:
        batch.drop_column("runtime_seconds")
    op.drop_index("ix_runs_config_runtime_seconds", table_name="runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("metric_runtime_seconds")
    with op.batch_alter_table("config_totals") as batch:
        for name in ("runtime_p50", "runtime_p95"):
            batch.drop_column(f"{name}_run")
            batch.drop_column(name)
        batch.add_column(sa.Column("solve_p95", sa.Float(), nullable=True))
        batch.add_column(sa.Column("solve_p95_run", sa.Integer(), nullable=True))
        for name in ("sum_compile_seconds", "sum_overhead_seconds"):
            batch.add_column(sa.Column(name, sa.Float(), nullable=False, server_default="0"))
    bind = op.get_bind()
    bind.execute(
        sa.text(
            "UPDATE scenario_indicators SET "
            "stable = CASE WHEN NOT stable AND max_angle_spread_deg < 180 THEN stable "
            "ELSE max_angle_spread_deg < 360 END, "
            "severity = CASE WHEN NOT stable AND max_angle_spread_deg < 180 THEN 1.0 "
            "ELSE max_angle_spread_deg / 360.0 END, "
            "criterion = :criterion WHERE max_angle_spread_deg IS NOT NULL"
        ),
        {"criterion": "TSI > 0: largest rotor-angle separation < 360 deg over the horizon"},
    )
    bind.execute(
        sa.text(
            "UPDATE config_totals SET (sum_compile_seconds, sum_overhead_seconds) = "
            "(SELECT coalesce(sum(m.compile_seconds + m.load_seconds), 0), "
            "coalesce(sum(m.overhead_seconds), 0) FROM runs AS r "
            "JOIN run_metrics AS m ON m.run_id = r.id "
            "WHERE r.campaign_id = config_totals.campaign_id "
            "AND r.method = config_totals.method "
            "AND r.config_label = config_totals.config_label "
            "AND r.is_reference = config_totals.is_reference)"
        )
    )
    totals = bind.execute(
        sa.text(
            "SELECT campaign_id, method, config_label, is_reference, measured "
            "FROM config_totals WHERE measured > 0"
        )
    ).all()
    for campaign_id, method, config_label, is_reference, n in totals:
        key = {"c": campaign_id, "m": method, "l": config_label, "r": is_reference}
        value, run_id = bind.execute(
            sa.text(
                "SELECT metric_solve_seconds, id FROM runs WHERE campaign_id = :c "
                "AND method = :m AND config_label = :l AND is_reference = :r "
                "AND metric_solve_seconds IS NOT NULL "
                "ORDER BY metric_solve_seconds, id LIMIT 1 OFFSET :k"
            ),
            {**key, "k": math.floor(0.95 * (n - 1))},
        ).one()
        bind.execute(
            sa.text(
                "UPDATE config_totals SET solve_p95 = :v, solve_p95_run = :i "
                "WHERE campaign_id = :c AND method = :m AND config_label = :l "
                "AND is_reference = :r"
            ),
            {**key, "v": value, "i": run_id},
        )


def downgrade() -> None:
    """Restores the columns; the old wall-time runtime is approximated by solve + compile +
    load + overhead, and the runtime pivots are rebuilt from it."""
    with op.batch_alter_table("run_metrics") as batch:
        batch.add_column(
            sa.Column("runtime_seconds", sa.Float(), nullable=False, server_default="0")
        )
    op.execute(
        "UPDATE run_metrics SET runtime_seconds = solve_seconds + compile_seconds "
        "+ load_seconds + overhead_seconds"
    )
    with op.batch_alter_table("run_metrics") as batch:
        batch.drop_column("overhead_seconds")
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("metric_runtime_seconds", sa.Float(), nullable=True))
    op.execute(
        "UPDATE runs SET metric_runtime_seconds = (SELECT m.runtime_seconds FROM run_metrics "
        "AS m WHERE m.run_id = runs.id) WHERE metric_solve_seconds IS NOT NULL"
    )
    op.create_index(
        "ix_runs_config_runtime_seconds",
        "runs",
        ["campaign_id", "method", "config_label", "is_reference", "metric_runtime_seconds", "id"],
        postgresql_where=sa.text("metric_runtime_seconds IS NOT NULL"),
        sqlite_where=sa.text("metric_runtime_seconds IS NOT NULL"),
    )
    with op.batch_alter_table("config_totals") as batch:
        for name in ("sum_overhead_seconds", "sum_compile_seconds", "solve_p95_run", "solve_p95"):
            batch.drop_column(name)
        for name in ("runtime_p50", "runtime_p95"):
            batch.add_column(sa.Column(name, sa.Float(), nullable=True))
            batch.add_column(sa.Column(f"{name}_run", sa.Integer(), nullable=True))
    bind = op.get_bind()
    totals = bind.execute(
        sa.text(
            "SELECT campaign_id, method, config_label, is_reference, measured "
            "FROM config_totals WHERE measured > 0"
        )
    ).all()
    for campaign_id, method, config_label, is_reference, n in totals:
        key = {"c": campaign_id, "m": method, "l": config_label, "r": is_reference}
        for name, q in (("runtime_p50", 0.5), ("runtime_p95", 0.95)):
            value, run_id = bind.execute(
                sa.text(
                    "SELECT metric_runtime_seconds, id FROM runs WHERE campaign_id = :c "
                    "AND method = :m AND config_label = :l AND is_reference = :r "
                    "AND metric_runtime_seconds IS NOT NULL "
                    "ORDER BY metric_runtime_seconds, id LIMIT 1 OFFSET :k"
                ),
                {**key, "k": math.floor(q * (n - 1))},
            ).one()
            bind.execute(
                sa.text(
                    f"UPDATE config_totals SET {name} = :v, {name}_run = :i "
                    "WHERE campaign_id = :c AND method = :m AND config_label = :l "
                    "AND is_reference = :r"
                ),
                {**key, "v": value, "i": run_id},
            )
