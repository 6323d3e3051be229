"""the ledger of waits (`waits`), and why each notification was sent

Revision ID: ledger_0002
Revises: 0001
Create Date: 2026-12-03 06:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "ledger_0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "waits",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("pane_id", sa.Integer(), nullable=True),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("tmux", sa.String(length=255), nullable=False),
        sa.Column("pane", sa.String(length=64), nullable=False),
        sa.Column("session", sa.Text(), nullable=True),
        sa.Column("agent", sa.String(length=255), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=True),
        sa.Column("msg", sa.Text(), nullable=True),
        sa.Column("start_t", sa.Float(), nullable=False),
        sa.Column("end_t", sa.Float(), nullable=True),
        sa.Column("ended", sa.String(length=16), nullable=True),
        sa.Column("end_state", sa.String(length=16), nullable=True),
        sa.Column("answered_by", sa.String(length=128), nullable=True),
        sa.ForeignKeyConstraint(["pane_id"], ["panes.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_waits_start", "waits", ["start_t"], unique=False)
    op.create_index("ix_waits_pane", "waits", ["pane_id", "start_t"], unique=False)
    op.create_index("ix_waits_open", "waits", ["end_t"], unique=False)
    with op.batch_alter_table("notification_log") as batch:
        batch.add_column(sa.Column("reason", sa.String(length=16), nullable=True))
        batch.add_column(sa.Column("wait_id", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("notification_log") as batch:
        batch.drop_column("wait_id")
        batch.drop_column("reason")
    op.drop_index("ix_waits_open", table_name="waits")
    op.drop_index("ix_waits_pane", table_name="waits")
    op.drop_index("ix_waits_start", table_name="waits")
    op.drop_table("waits")
