"""The frequency zenith beside the nadir in the scenario indicators.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03

- ``scenario_indicators.frequency_zenith_hz`` / ``frequency_zenith_t``: the maximum of the
  centre-of-inertia frequency and its time (a fault accelerates the machines, so its
  excursion is a zenith); NULL for rows scored before.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("scenario_indicators") as batch:
        batch.add_column(sa.Column("frequency_zenith_hz", sa.Float(), nullable=True))
        batch.add_column(sa.Column("frequency_zenith_t", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("scenario_indicators") as batch:
        batch.drop_column("frequency_zenith_t")
        batch.drop_column("frequency_zenith_hz")
