"""drop the index on panes (rev): no query reads it, and every pane update paid for it

A pane's rev changes at every update, so the index took a delete and an insert each
time: 9.1 against 6.6 us of SQLite CPU a pane update (a batch of 1,000, SQLite). The
server keeps every pane in memory and looks revs up there (SSE resume, snapshots); what
reads the table by rev (PostgreSQL's fan-out, when it reconnects) reads every row.

Revision ID: panes_0005
Revises: ledger_0004
Create Date: 2026-12-05 13:20:00
"""

from __future__ import annotations

from alembic import op

revision = "panes_0005"
down_revision = "ledger_0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_panes_rev", table_name="panes")


def downgrade() -> None:
    op.create_index("ix_panes_rev", "panes", ["rev"])
