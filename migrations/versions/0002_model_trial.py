"""trial pane field (scratch)

Revision ID: 0002_model_trial
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_model_trial"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("panes", sa.Column("trial", sa.Text()))
    op.add_column("history", sa.Column("trial", sa.Text()))


def downgrade() -> None:
    op.drop_column("history", "trial")
    op.drop_column("panes", "trial")
