"""Initial schema: campaigns, scenarios, runs and run_metrics.

Revision ID: 0001
Revises:
Create Date: 2026-12-02

Written by hand from ``raptorgrid.tables`` (the test suite checks that autogenerate finds no
difference). Self-contained: plain SQLAlchemy types only, so it never changes when the models do.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "campaigns",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("network", sa.String(64), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("t_end", sa.Float(), nullable=False),
        sa.Column("n_eval", sa.Integer(), nullable=False),
        sa.Column("n_scenarios", sa.Integer(), nullable=False),
        sa.Column("n_runs", sa.Integer(), nullable=False),
        sa.Column("n_succeeded", sa.Integer(), nullable=False),
        sa.Column("n_failed", sa.Integer(), nullable=False),
        sa.Column("n_cancelled", sa.Integer(), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("finished_at", UTC_DATETIME, nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_campaigns")),
    )
    op.create_table(
        "scenarios",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("index", sa.Integer(), nullable=False),
        sa.Column("disturbance", sa.JSON(), nullable=False),
        sa.Column("ic_seed", sa.Integer(), nullable=False),
        sa.Column("ic_spread", sa.Float(), nullable=False),
        sa.Column("label", sa.String(200), nullable=False),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaigns.id"],
            name=op.f("fk_scenarios_campaign_id_campaigns"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scenarios")),
        sa.UniqueConstraint("campaign_id", "index", name=op.f("uq_scenarios_campaign_id_index")),
    )
    op.create_index(op.f("ix_scenarios_campaign_id"), "scenarios", ["campaign_id"])
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("scenario_id", sa.Integer(), nullable=False),
        sa.Column("method", sa.String(64), nullable=False),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("config_label", sa.String(400), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", sa.String(32), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("traceback", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("lease_until", UTC_DATETIME, nullable=True),
        sa.Column("worker", sa.String(200), nullable=True),
        sa.Column("zarr_group", sa.String(500), nullable=True),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("enqueued_at", UTC_DATETIME, nullable=True),
        sa.Column("started_at", UTC_DATETIME, nullable=True),
        sa.Column("finished_at", UTC_DATETIME, nullable=True),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaigns.id"],
            name=op.f("fk_runs_campaign_id_campaigns"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["scenario_id"],
            ["scenarios.id"],
            name=op.f("fk_runs_scenario_id_scenarios"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
    )
    op.create_index(op.f("ix_runs_campaign_id_status"), "runs", ["campaign_id", "status"])
    op.create_index(op.f("ix_runs_scenario_id"), "runs", ["scenario_id"])
    op.create_index(op.f("ix_runs_status_lease_until"), "runs", ["status", "lease_until"])
    op.create_table(
        "run_metrics",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("accepted", sa.Integer(), nullable=False),
        sa.Column("rejected", sa.Integer(), nullable=False),
        sa.Column("newton_iterations", sa.Integer(), nullable=False),
        sa.Column("algebraic_iterations", sa.Integer(), nullable=False),
        sa.Column("jacobian_evaluations", sa.Integer(), nullable=False),
        sa.Column("lu_factorizations", sa.Integer(), nullable=False),
        sa.Column("rhs_evaluations", sa.Integer(), nullable=False),
        sa.Column("compile_seconds", sa.Float(), nullable=False),
        sa.Column("solve_seconds", sa.Float(), nullable=False),
        sa.Column("runtime_seconds", sa.Float(), nullable=False),
        sa.Column("n_points", sa.Integer(), nullable=False),
        sa.Column("n_accepted_points", sa.Integer(), nullable=False),
        sa.Column("final_time", sa.Float(), nullable=True),
        sa.Column("state_error", sa.Float(), nullable=True),
        sa.Column("voltage_mae", sa.Float(), nullable=True),
        sa.Column("kcl_max", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_run_metrics_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_run_metrics")),
    )


def downgrade() -> None:
    op.drop_table("run_metrics")
    op.drop_index(op.f("ix_runs_status_lease_until"), table_name="runs")
    op.drop_index(op.f("ix_runs_scenario_id"), table_name="runs")
    op.drop_index(op.f("ix_runs_campaign_id_status"), table_name="runs")
    op.drop_table("runs")
    op.drop_index(op.f("ix_scenarios_campaign_id"), table_name="scenarios")
    op.drop_table("scenarios")
    op.drop_table("campaigns")
