"""one collector per host name (uq_hosts_name): host ownership held by the database

Revision ID: hosts_0004
Revises: push_0003
Create Date: 2026-12-04 19:00:00

Before it, two processes on one PostgreSQL could each accept a different collector's
claim to one new host (each checked, neither saw the other's uncommitted row). Such a
pair is resolved as the servers already showed it: the host belongs to its first row
(the lowest id, what `Tx.owner` and `Core.put_host` chose); the later rows are deleted
with their panes, records, history and sessions (their collectors were refused for
them on every later message). Rows that merely point at those panes (notifications,
waits, answers) keep their text and lose the link, as when retention deletes a pane.
The deletes are spelt out rather than left to ON DELETE: a SQLite connection without
`PRAGMA foreign_keys=ON` would leave orphans.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "hosts_0004"
down_revision = "push_0003"
branch_labels = None
depends_on = None

_LATER = "SELECT h.id FROM hosts h WHERE EXISTS (SELECT 1 FROM hosts o WHERE o.name = h.name AND o.id < h.id)"
_PANES = f"SELECT id FROM panes WHERE host_id IN ({_LATER})"


def upgrade() -> None:
    conn = op.get_bind()
    if conn.execute(sa.text(_LATER + " LIMIT 1")).first() is not None:
        for table in ("notification_log", "waits", "answers"):
            conn.execute(sa.text(f"UPDATE {table} SET pane_id = NULL WHERE pane_id IN ({_PANES})"))
        for table in ("history", "pane_records"):
            conn.execute(sa.text(f"DELETE FROM {table} WHERE pane_id IN ({_PANES})"))
        conn.execute(sa.text(f"DELETE FROM panes WHERE host_id IN ({_LATER})"))
        conn.execute(sa.text(f"DELETE FROM tmux_sessions WHERE host_id IN ({_LATER})"))
        conn.execute(sa.text(f"DELETE FROM hosts WHERE id IN ({_LATER})"))
    op.create_index("uq_hosts_name", "hosts", ["name"], unique=True)


def downgrade() -> None:
    op.drop_index("uq_hosts_name", table_name="hosts")
