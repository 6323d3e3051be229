"""History retention: prune by age and by count per pane, a small batch at a time.

Small batches keep each delete transaction short so the writer (the one SQLite
writer) is never held up for long; expired browser sessions go too.
"""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy import ColumnElement, and_, delete, func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from ..store import schema as s
from .commands import Purge
from .core import Core

log = logging.getLogger("paneboard.retention")


async def _delete_history(engine: AsyncEngine, where: ColumnElement[bool], batch: int) -> int:
    """Delete the history rows matching `where`, `batch` at a time, each batch its own
    short transaction; returns how many went."""
    removed = 0
    while True:
        async with engine.begin() as conn:
            found = await conn.execute(select(s.history.c.id).where(where).limit(batch))
            ids = [r[0] for r in found.all()]
            if ids:
                await conn.execute(delete(s.history).where(s.history.c.id.in_(ids)))
        removed += len(ids)
        if len(ids) < batch:
            return removed
        await asyncio.sleep(0)


async def prune_once(core: Core) -> int:
    """One full pass; returns the number of history rows removed."""
    cfg = core.cfg.retention
    now = core.clock()
    cutoff = now - cfg.max_age_days * 86400
    engine = core.engine
    removed = await _delete_history(engine, s.history.c.t < cutoff, cfg.batch)
    await prune_waits(core, cutoff)  # not counted: `removed` is history rows
    async with engine.begin() as conn:  # the answer audit is kept as long as the history
        await conn.execute(delete(s.answers).where(s.answers.c.t < cutoff))
        # Pairing: its audit lives as long; a link is worthless once expired.
        await conn.execute(delete(s.pair_audit).where(s.pair_audit.c.t < cutoff))
        await conn.execute(delete(s.pair_links).where(s.pair_links.c.expires_at < cutoff))
    async with engine.connect() as conn:
        heavy = (
            await conn.execute(
                select(s.history.c.pane_id)
                .group_by(s.history.c.pane_id)
                .having(func.count() > cfg.max_per_pane)
            )
        ).all()
    for (pane_id,) in heavy:
        async with engine.connect() as conn:
            cut = (
                await conn.execute(
                    select(s.history.c.id)
                    .where(s.history.c.pane_id == pane_id)
                    .order_by(s.history.c.id.desc())
                    .offset(cfg.max_per_pane)
                    .limit(1)
                )
            ).scalar()
        if cut is None:
            continue
        where = and_(s.history.c.pane_id == pane_id, s.history.c.id <= cut)
        removed += await _delete_history(engine, where, cfg.batch)
    async with engine.begin() as conn:
        await conn.execute(delete(s.web_sessions).where(s.web_sessions.c.expires_at < now))
    # Panes gone long ago: deleted by the writer, which owns the in-memory mirror.
    done = asyncio.get_running_loop().create_future()
    op = Purge(
        now - cfg.gone_pane_days * 86400, on_fail=lambda e: None if done.done() else done.set_exception(e)
    )
    op.on_commit = lambda: None if done.done() else done.set_result(None)
    core.submit(op)
    await asyncio.wait_for(done, 60)
    return removed


async def prune_waits(core: Core, cutoff: float) -> int:
    """The ledger's intervals that ended before `cutoff` (the history's age limit);
    an open one stays, however old, until its pane leaves the state."""
    removed = 0
    while True:
        async with core.engine.begin() as conn:
            ids = [
                r[0]
                for r in (
                    await conn.execute(
                        select(s.waits.c.id).where(s.waits.c.end_t < cutoff).limit(core.cfg.retention.batch)
                    )
                ).all()
            ]
            if ids:
                await conn.execute(delete(s.waits).where(s.waits.c.id.in_(ids)))
        removed += len(ids)
        if len(ids) < core.cfg.retention.batch:
            return removed
        await asyncio.sleep(0)


async def retention_loop(core: Core) -> None:
    while True:
        await asyncio.sleep(core.cfg.retention.interval)
        try:
            n = await prune_once(core)
            if n:
                log.info("pruned %d history rows", n)
        except Exception as exc:
            log.error("retention pass failed: %s: %s", type(exc).__name__, exc)
