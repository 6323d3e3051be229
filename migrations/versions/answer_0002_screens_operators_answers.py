"""screens and answers: tokens.screens, viewers.operator, the answers audit table

Revision ID: answer_0002
Revises: 0001
Create Date: 2026-12-03 06:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "answer_0002"
down_revision = "ledger_0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tokens") as b:
        b.add_column(sa.Column("screens", sa.Boolean(), nullable=False, server_default=sa.false()))
    with op.batch_alter_table("viewers") as b:
        b.add_column(sa.Column("operator", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.create_table(
        "answers",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("t", sa.Float(), nullable=False),
        sa.Column("pane_id", sa.Integer(), nullable=True),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("tmux", sa.String(length=255), nullable=False),
        sa.Column("pane", sa.String(length=64), nullable=False),
        sa.Column("viewer_id", sa.Integer(), nullable=True),
        sa.Column("who", sa.String(length=128), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("prompt", sa.Text(), nullable=True),
        sa.Column("answer", sa.String(length=32), nullable=True),
        sa.Column("label", sa.String(length=128), nullable=True),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("done_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["pane_id"], ["panes.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["viewer_id"], ["viewers.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_answers_pane", "answers", ["pane_id", "id"])
    op.create_index("ix_answers_t", "answers", ["t"])


def downgrade() -> None:
    op.drop_index("ix_answers_t", table_name="answers")
    op.drop_index("ix_answers_pane", table_name="answers")
    op.drop_table("answers")
    with op.batch_alter_table("viewers") as b:
        b.drop_column("operator")
    with op.batch_alter_table("tokens") as b:
        b.drop_column("screens")
