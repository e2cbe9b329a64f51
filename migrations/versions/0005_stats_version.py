"""Campaign statistics are cached, keyed by a version that every change to them bumps.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-04

- ``campaigns.stats_version``: incremented in the same transaction as every change that can
  alter a campaign's per-configuration statistics (a run reaching a final status, scoring);
  ``raptorgrid.repository.stats_cache`` keys its entries by it.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("campaigns") as batch:
        batch.add_column(
            sa.Column("stats_version", sa.Integer(), nullable=False, server_default="0")
        )


def downgrade() -> None:
    with op.batch_alter_table("campaigns") as batch:
        batch.drop_column("stats_version")
