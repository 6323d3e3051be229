"""single-use sign-in links for phones (`paneboard pair`), their audit, plain sessions

Revision ID: pair_0006
Revises: answer_0003
Create Date: 2026-12-07 00:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "pair_0006"
down_revision = "answer_0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pair_links",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("token_hash", sa.String(length=64), nullable=False, unique=True),
        sa.Column("viewer_id", sa.Integer(), sa.ForeignKey("viewers.id", ondelete="CASCADE"), nullable=False),
        sa.Column("operator", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.Column("used_at", sa.Float(), nullable=True),
    )
    op.create_index("ix_pair_links_expires", "pair_links", ["expires_at"])
    op.create_table(
        "pair_audit",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("t", sa.Float(), nullable=False),
        sa.Column("link_id", sa.Integer(), sa.ForeignKey("pair_links.id", ondelete="SET NULL")),
        sa.Column("account", sa.String(length=128)),
        sa.Column("role", sa.String(length=16)),
        sa.Column("event", sa.String(length=16), nullable=False),
        sa.Column("who", sa.String(length=255), nullable=False),
        sa.Column("agent", sa.String(length=255)),
    )
    op.create_index("ix_pair_audit_t", "pair_audit", ["t"])
    with op.batch_alter_table("web_sessions") as b:
        b.add_column(sa.Column("plain", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("web_sessions") as b:
        b.drop_column("plain")
    op.drop_index("ix_pair_audit_t", table_name="pair_audit")
    op.drop_table("pair_audit")
    op.drop_index("ix_pair_links_expires", table_name="pair_links")
    op.drop_table("pair_links")
