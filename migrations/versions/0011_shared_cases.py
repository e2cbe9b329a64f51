"""Uploaded cases may be shared.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-06

- ``cases.shared``: an uploaded case belongs to its uploader; an admin may share it
  (``POST /cases/{id}/share``), after which every token may read it and run campaigns on it
  (``raptorgrid.api.access``). Existing cases stay private.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("cases") as batch:
        batch.add_column(
            sa.Column("shared", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("cases") as batch:
        batch.drop_column("shared")
