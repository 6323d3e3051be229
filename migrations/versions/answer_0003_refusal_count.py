"""answers.count: refusals of one credential coalesced into one audit row per burst

A read-only credential could add one `answers` row per refused request (5,126 rows of
its own text in 20 s), pushing real attempts off the pane's first audit page. A burst
of the same refusal by the same credential on the same pane is now one row, `count`
saying how many it stands for (1 for every other row, those before this included).

Revision ID: answer_0003
Revises: ledger_0005
Create Date: 2026-12-07 00:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "answer_0003"
down_revision = "ledger_0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("answers") as batch:
        batch.add_column(sa.Column("count", sa.Integer(), nullable=False, server_default="1"))


def downgrade() -> None:
    with op.batch_alter_table("answers") as batch:
        batch.drop_column("count")
