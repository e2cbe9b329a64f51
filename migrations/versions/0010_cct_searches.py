"""Critical-clearing-time searches.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03

- ``cct_searches``: one row per bus fault and method configuration of a CCT campaign, with its
  bracket, result and the probe in flight (``raptorgrid.repository.cct``).
- ``runs.search_id`` (indexed) and ``runs.clearing_time``: a probe run and its fault duration.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "cct_searches",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("scenario_id", sa.Integer(), nullable=False),
        sa.Column("method", sa.String(64), nullable=False),
        sa.Column("config_label", sa.String(400), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("lo", sa.Float(), nullable=False),
        sa.Column("hi", sa.Float(), nullable=True),
        sa.Column("cct", sa.Float(), nullable=True),
        sa.Column("probes", sa.Integer(), nullable=False),
        sa.Column("last_run_id", sa.Integer(), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaigns.id"],
            name=op.f("fk_cct_searches_campaign_id_campaigns"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["scenario_id"],
            ["scenarios.id"],
            name=op.f("fk_cct_searches_scenario_id_scenarios"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cct_searches")),
    )
    op.create_index(op.f("ix_cct_searches_campaign_id"), "cct_searches", ["campaign_id"])
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("search_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("clearing_time", sa.Float(), nullable=True))
        batch.create_foreign_key(
            batch.f("fk_runs_search_id_cct_searches"),
            "cct_searches",
            ["search_id"],
            ["id"],
            ondelete="CASCADE",
        )
        batch.create_index(batch.f("ix_runs_search_id"), ["search_id"])


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_index(batch.f("ix_runs_search_id"))
        batch.drop_constraint(batch.f("fk_runs_search_id_cct_searches"), type_="foreignkey")
        batch.drop_column("clearing_time")
        batch.drop_column("search_id")
    op.drop_index(op.f("ix_cct_searches_campaign_id"), table_name="cct_searches")
    op.drop_table("cct_searches")
