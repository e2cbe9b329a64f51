"""Authentication, campaign ownership, idempotent submission and uploaded case files.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02

- ``api_tokens``: one row per issued token; only the sha256 of the secret is stored, found by
  its public ``prefix``.
- ``campaigns.owner``: the token owner that submitted it (NULL for embedded runs, no HTTP).
- ``campaigns.idempotency_key`` / ``request_hash``: a retried POST with the same key returns the
  first campaign; unique per owner.
- ``cases``: validated case files (MATPOWER ``.m`` or pandapower JSON), stored as text.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("owner", sa.String(100), nullable=False),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("is_admin", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("revoked_at", UTC_DATETIME, nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
        sa.UniqueConstraint("prefix", name=op.f("uq_api_tokens_prefix")),
    )
    op.create_index(op.f("ix_api_tokens_owner"), "api_tokens", ["owner"])
    with op.batch_alter_table("campaigns") as batch:
        batch.add_column(sa.Column("owner", sa.String(100), nullable=True))
        batch.add_column(sa.Column("idempotency_key", sa.String(200), nullable=True))
        batch.add_column(sa.Column("request_hash", sa.String(64), nullable=True))
        batch.create_index(batch.f("ix_campaigns_owner"), ["owner"])
        batch.create_unique_constraint(
            batch.f("uq_campaigns_owner_idempotency_key"), ["owner", "idempotency_key"]
        )
    op.create_table(
        "cases",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("format", sa.String(16), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("size_bytes", sa.Integer(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("summary", sa.JSON(), nullable=False),
        sa.Column("owner", sa.String(100), nullable=True),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cases")),
    )


def downgrade() -> None:
    op.drop_table("cases")
    with op.batch_alter_table("campaigns") as batch:
        batch.drop_constraint(batch.f("uq_campaigns_owner_idempotency_key"), type_="unique")
        batch.drop_index(batch.f("ix_campaigns_owner"))
        batch.drop_column("request_hash")
        batch.drop_column("idempotency_key")
        batch.drop_column("owner")
    op.drop_index(op.f("ix_api_tokens_owner"), table_name="api_tokens")
    op.drop_table("api_tokens")
