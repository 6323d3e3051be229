"""The ledger's one write from outside the writer: a block answered from paneboard.

The writer keeps `waits` true to history itself (`panes/waits.py`, in the batch's
transaction); who answered a block is not in history, so the answer feature marks it
here, and a rebuild of the pane's intervals keeps the mark.
"""

from __future__ import annotations

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from ..store import schema as s

W = s.waits


async def mark_answered(conn: AsyncConnection, pane_id: int, who: str, at: float | None = None) -> int:
    """The answer feature's hook: the pane's block was answered from paneboard by `who`.

    Without `at`, the open block is marked. With `at` (when the answer was asked for),
    the latest block that was open then, even if the change the keys caused has already
    closed it: the collector's outcome and the pane's next state race each other. A
    rebuild keeps the mark. Returns how many blocks it marked (0 or 1)."""
    cond = [W.c.pane_id == pane_id, W.c.state == "blocked"]
    if at is None:
        cond.append(W.c.end_t.is_(None))
    else:
        cond += [W.c.start_t <= at, or_(W.c.end_t.is_(None), W.c.end_t >= at)]
    latest = (
        await conn.execute(select(W.c.id).where(*cond).order_by(W.c.start_t.desc()).limit(1))
    ).scalar_one_or_none()
    if latest is None:
        return 0
    res = await conn.execute(update(W).where(W.c.id == latest).values(answered_by=who[:128]))
    return int(res.rowcount or 0)
