"""answers.source: from where an attempt came (the client's address)

Follow-ups and keys (issue 44) type more than declared answers, up to code run as the
pane's user: the audit says who, from where, what and the outcome. `source` is the
client address the server saw (the reverse proxy's X-Forwarded-For where it is
trusted, `[server] trusted_proxies`); None for rows written before it.

Revision ID: answer_0007
Revises: pair_0006
Create Date: 2026-12-07 04:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "answer_0007"
down_revision = "pair_0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("answers") as batch:
        batch.add_column(sa.Column("source", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("answers") as batch:
        batch.drop_column("source")
