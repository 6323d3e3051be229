"""drop the index on waits (pane_id, start_t): ix_waits_pane_end serves its queries

Every wait a report opens or closes wrote a page of this index: keyed by pane, its
inserts land in a random place, a page of their own once the index outgrows a batch.
`bench/wal.py` (the writer on 10 collectors x 100 panes, every report a new state):
1.01 WAL pages a report with it, 0.73 without; those pages are what each commit writes
and each checkpoint copies. The writer's reads go through ix_waits_pane_end (pane_id,
end_t) already; what used this index (marking an answered block, rebuilding a pane's
waits after late rows) is rare and now seeks the pane on ix_waits_pane_end instead.

Revision ID: ledger_0005
Revises: panes_0005
Create Date: 2026-12-05 21:00:00
"""

from __future__ import annotations

from alembic import op

revision = "ledger_0005"
down_revision = "panes_0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_waits_pane", table_name="waits")


def downgrade() -> None:
    op.create_index("ix_waits_pane", "waits", ["pane_id", "start_t"], unique=False)
