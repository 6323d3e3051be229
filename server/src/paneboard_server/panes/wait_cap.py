"""A collector's ledger rows bounded per day, inside the writer's transaction.

Every wait a pane opens is one `waits` row, and rows outlive their panes (the stats
need them), so age alone bounded them: a collector announcing thousands of new blocked
panes a snapshot, each gone at the next, wrote a row per pane until `max_age_days`.
Here each collector may keep `retention.max_waits_per_day` closed waits begun in the
last day; beyond it the rows that least look like a person's wait go first:

1. those that ended with nobody answering (the pane went, its program exited, the
   wait was cancelled or went stale), then those a person did end (`answered`,
   `seen`, `resumed`) — the shortest first, since nobody answers within a moment;
2. never one answered from paneboard (`answered_by`): those are a person's, one per
   answer an operator sent;
3. never an open wait: it is a live pane's state, bounded by the live-pane cap.

The count is checked once a collector has opened a tenth of its cap since its last
check (counted in memory, so the ordinary batch pays nothing), so a day holds at most
the cap and a tenth of it, besides the open waits.
"""

from __future__ import annotations

from sqlalchemy import case, delete, func, select

from ..store import schema as s
from .tx import Tx

W = s.waits
DAY = 86400.0
#: How a wait ended when a person ended it; any other ending is nobody's answer.
PERSON_ENDS = ("answered", "seen", "resumed")
_DELETE_CHUNK = 1000


def note(tx: Tx, pane_ids: list[int]) -> None:
    """Count the waits this batch opens (one per id in `pane_ids`) against each pane's
    collector; the collectors due for a check are remembered on `tx`."""
    core = tx.core
    counts = core.waits_opened
    step = max(1, core.cfg.retention.max_waits_per_day // 10)
    for pid in pane_ids:  # read, not copied into the batch: these panes are written already
        p = tx.panes.get(pid) or core.panes.get(pid)
        h = (tx.hosts.get(p.host_id) or core.hosts.get(p.host_id)) if p is not None else None
        if h is None:
            continue
        cid = h.collector_id
        n = counts.get(cid, 0) + 1
        counts[cid] = n
        if n >= step:
            tx.waits_due.add(cid)


async def trim(tx: Tx) -> int:
    """Delete, for every collector due, its closed waits of the last day beyond the cap
    (in the order the module's docstring gives); returns how many went."""
    removed = 0
    for cid in sorted(tx.waits_due):
        removed += await _trim_one(tx, cid)
        tx.core.waits_opened[cid] = 0
    tx.waits_due.clear()
    if removed:
        tx.core.stats["waits_capped"] = tx.core.stats.get("waits_capped", 0) + removed
    return removed


async def _trim_one(tx: Tx, collector_id: int) -> int:
    cap = tx.core.cfg.retention.max_waits_per_day
    since = tx.now - DAY
    hosts = select(s.hosts.c.name).where(s.hosts.c.collector_id == collector_id)
    mine = (W.c.host.in_(hosts), W.c.start_t >= since, W.c.end_t.is_not(None))
    conn = tx.conn
    count = (await conn.execute(select(func.count()).select_from(W).where(*mine))).scalar_one()
    if count <= cap:
        return 0
    person = case((W.c.ended.in_(PERSON_ENDS), 1), else_=0)
    ids = [
        i
        for (i,) in (
            await conn.execute(
                select(W.c.id)
                .where(*mine, W.c.answered_by.is_(None))
                .order_by(person, W.c.end_t - W.c.start_t, W.c.start_t, W.c.id)
                .limit(count - cap)
            )
        ).all()
    ]
    for at in range(0, len(ids), _DELETE_CHUNK):
        await conn.execute(delete(W).where(W.c.id.in_(ids[at : at + _DELETE_CHUNK])))
    return len(ids)
