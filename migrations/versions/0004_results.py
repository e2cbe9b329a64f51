"""Campaign results: reference runs, scoring and per-scenario stability indicators.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03

- ``runs.is_reference``: the scenario's reference run (scored against by the others).
- ``run_metrics.qualified`` / ``scored_at``: the accuracy verdict, written once by scoring.
- ``scenario_indicators``: angle spread, frequency nadir, lowest voltage and its recovery, the
  stable/unstable verdict and the severity that ranks contingencies.
- an index on ``runs (campaign_id, method, config_label)`` for the stats aggregates.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(
            sa.Column("is_reference", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch.create_index(
            batch.f("ix_runs_campaign_id_method_config_label"),
            ["campaign_id", "method", "config_label"],
        )
    with op.batch_alter_table("run_metrics") as batch:
        batch.add_column(sa.Column("qualified", sa.Boolean(), nullable=True))
        batch.add_column(sa.Column("scored_at", UTC_DATETIME, nullable=True))
    op.create_table(
        "scenario_indicators",
        sa.Column("scenario_id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("from_reference", sa.Boolean(), nullable=False),
        sa.Column("max_angle_spread_deg", sa.Float(), nullable=True),
        sa.Column("frequency_nadir_hz", sa.Float(), nullable=True),
        sa.Column("frequency_nadir_t", sa.Float(), nullable=True),
        sa.Column("min_voltage_pu", sa.Float(), nullable=True),
        sa.Column("min_voltage_t", sa.Float(), nullable=True),
        sa.Column("voltage_recovery_t", sa.Float(), nullable=True),
        sa.Column("stable", sa.Boolean(), nullable=False),
        sa.Column("criterion", sa.String(200), nullable=False),
        sa.Column("severity", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["scenario_id"],
            ["scenarios.id"],
            name=op.f("fk_scenario_indicators_scenario_id_scenarios"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaigns.id"],
            name=op.f("fk_scenario_indicators_campaign_id_campaigns"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("scenario_id", name=op.f("pk_scenario_indicators")),
    )
    op.create_index(
        op.f("ix_scenario_indicators_campaign_id"), "scenario_indicators", ["campaign_id"]
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_scenario_indicators_campaign_id"), table_name="scenario_indicators")
    op.drop_table("scenario_indicators")
    with op.batch_alter_table("run_metrics") as batch:
        batch.drop_column("scored_at")
        batch.drop_column("qualified")
    with op.batch_alter_table("runs") as batch:
        batch.drop_index(batch.f("ix_runs_campaign_id_method_config_label"))
        batch.drop_column("is_reference")
