"""Sparse symbolic analyses and executable loading as their own stats columns.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03

- ``run_metrics.symbolic_analyses``: the sparse solver's pattern analyses of a run (RAPTOR's
  KLU analysis, done once per network structure and process and reused by every numeric
  factorization); 0 for the rows written before.
- ``run_metrics.load_seconds``: seconds spent loading executables that an earlier process
  compiled (``models.executables``), apart from ``compile_seconds`` and ``solve_seconds``.
- ``run_metrics.warnings``: what a finished run could not guarantee (e.g. RAPTOR asked for a
  tolerance below what it attains), NULL when nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("run_metrics") as batch:
        batch.add_column(
            sa.Column("symbolic_analyses", sa.Integer(), nullable=False, server_default="0")
        )
        batch.add_column(sa.Column("load_seconds", sa.Float(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("warnings", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("run_metrics") as batch:
        batch.drop_column("warnings")
        batch.drop_column("load_seconds")
        batch.drop_column("symbolic_analyses")
