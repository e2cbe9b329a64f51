"""Per-configuration running totals, so the unfiltered statistics do not aggregate the runs.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-05

- ``runs.metric_runtime_seconds`` / ``metric_solve_seconds``: copies of the run's
  ``run_metrics`` values, written with them by ``finish_run``; backfilled here.
- ``ix_runs_config_runtime_seconds`` / ``ix_runs_config_solve_seconds``: partial indexes on
  ``(campaign_id, method, config_label, is_reference, <copy>, id) WHERE <copy> IS NOT NULL``,
  a configuration's measured runs in value order.
- ``config_totals``: per campaign and configuration the counts, sums, extremes and
  percentile pivots the statistics report, kept by the write path
  (``raptorgrid.repository.totals``); backfilled here from the rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COPIES = {"metric_runtime_seconds": "runtime_seconds", "metric_solve_seconds": "solve_seconds"}
PIVOTS = {
    "runtime_p50": ("metric_runtime_seconds", 0.5),
    "runtime_p95": ("metric_runtime_seconds", 0.95),
    "solve_p50": ("metric_solve_seconds", 0.5),
}
BACKFILL = """
INSERT INTO config_totals (
    campaign_id, method, config_label, is_reference, first_run, runs, succeeded, failed,
    measured, sum_accepted, min_accepted, max_accepted, sum_rejected, sum_newton_iterations,
    scored, qualified_runs, max_state_error, max_voltage_mae, max_kcl)
SELECT r.campaign_id, r.method, r.config_label, r.is_reference, min(r.id), count(r.id),
    sum(CASE WHEN r.status = 'succeeded' THEN 1 ELSE 0 END),
    sum(CASE WHEN r.status = 'failed' THEN 1 ELSE 0 END),
    count(m.run_id), coalesce(sum(m.accepted), 0), min(m.accepted), max(m.accepted),
    coalesce(sum(m.rejected), 0), coalesce(sum(m.newton_iterations), 0), count(m.scored_at),
    sum(CASE WHEN r.status = 'succeeded' AND m.qualified THEN 1 ELSE 0 END),
    max(m.state_error), max(m.voltage_mae), max(m.kcl_max)
FROM runs AS r LEFT JOIN run_metrics AS m ON m.run_id = r.id
GROUP BY r.campaign_id, r.method, r.config_label, r.is_reference
"""


def _index(copy: str) -> str:
    return f"ix_runs_config_{copy.removeprefix('metric_')}"


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        for copy in COPIES:
            batch.add_column(sa.Column(copy, sa.Float(), nullable=True))
    op.execute(
        f"UPDATE runs SET ({', '.join(COPIES)}) = (SELECT "
        f"{', '.join(f'm.{c}' for c in COPIES.values())} FROM run_metrics AS m "
        "WHERE m.run_id = runs.id) WHERE EXISTS (SELECT 1 FROM run_metrics AS m "
        "WHERE m.run_id = runs.id)"
    )
    for copy in COPIES:
        op.create_index(
            _index(copy),
            "runs",
            ["campaign_id", "method", "config_label", "is_reference", copy, "id"],
            postgresql_where=sa.text(f"{copy} IS NOT NULL"),
            sqlite_where=sa.text(f"{copy} IS NOT NULL"),
        )
    zero = {"nullable": False, "server_default": "0"}
    op.create_table(
        "config_totals",
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("method", sa.String(64), nullable=False),
        sa.Column("config_label", sa.String(400), nullable=False),
        sa.Column("is_reference", sa.Boolean(), nullable=False),
        sa.Column("first_run", sa.Integer(), nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.Column("succeeded", sa.Integer(), **zero),
        sa.Column("failed", sa.Integer(), **zero),
        sa.Column("measured", sa.Integer(), **zero),
        sa.Column("sum_accepted", sa.BigInteger(), **zero),
        sa.Column("min_accepted", sa.Integer(), nullable=True),
        sa.Column("max_accepted", sa.Integer(), nullable=True),
        sa.Column("sum_rejected", sa.BigInteger(), **zero),
        sa.Column("sum_newton_iterations", sa.BigInteger(), **zero),
        sa.Column("scored", sa.Integer(), **zero),
        sa.Column("qualified_runs", sa.Integer(), **zero),
        sa.Column("max_state_error", sa.Float(), nullable=True),
        sa.Column("max_voltage_mae", sa.Float(), nullable=True),
        sa.Column("max_kcl", sa.Float(), nullable=True),
        *(
            column
            for name in PIVOTS
            for column in (
                sa.Column(name, sa.Float(), nullable=True),
                sa.Column(f"{name}_run", sa.Integer(), nullable=True),
            )
        ),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaigns.id"],
            name=op.f("fk_config_totals_campaign_id_campaigns"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "campaign_id", "method", "config_label", "is_reference", name=op.f("pk_config_totals")
        ),
    )
    bind = op.get_bind()
    bind.execute(sa.text(BACKFILL))
    totals = bind.execute(
        sa.text(
            "SELECT campaign_id, method, config_label, is_reference, measured "
            "FROM config_totals WHERE measured > 0"
        )
    ).all()
    for campaign_id, method, config_label, is_reference, n in totals:
        key = {"c": campaign_id, "m": method, "l": config_label, "r": is_reference}
        values = {}
        for name, (copy, q) in PIVOTS.items():
            values[name], values[f"{name}_run"] = bind.execute(
                sa.text(
                    f"SELECT {copy}, id FROM runs WHERE campaign_id = :c AND method = :m "
                    f"AND config_label = :l AND is_reference = :r AND {copy} IS NOT NULL "
                    f"ORDER BY {copy}, id LIMIT 1 OFFSET :k"
                ),
                {**key, "k": math.floor(q * (n - 1))},
            ).one()
        bind.execute(
            sa.text(
                f"UPDATE config_totals SET {', '.join(f'{k} = :{k}' for k in values)} "
                "WHERE campaign_id = :c AND method = :m AND config_label = :l "
                "AND is_reference = :r"
            ),
            {**key, **values},
        )


def downgrade() -> None:
    op.drop_table("config_totals")
    for copy in reversed(COPIES):
        op.drop_index(_index(copy), table_name="runs")
    with op.batch_alter_table("runs") as batch:
        for copy in reversed(COPIES):
            batch.drop_column(copy)
