"""whose each notification is (notification_log.owner), and each device's last failure

Revision ID: push_0003
Revises: answer_0002
Create Date: 2026-12-03 18:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "push_0003"
down_revision = "answer_0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("notification_log") as b:
        b.add_column(sa.Column("owner", sa.String(length=64), nullable=True))
    with op.batch_alter_table("push_subscriptions") as b:
        b.add_column(sa.Column("last_fail", sa.Float(), nullable=True))
        b.add_column(sa.Column("last_error", sa.String(length=255), nullable=True))
        b.add_column(sa.Column("device", sa.String(length=128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("push_subscriptions") as b:
        b.drop_column("device")
        b.drop_column("last_error")
        b.drop_column("last_fail")
    with op.batch_alter_table("notification_log") as b:
        b.drop_column("owner")
