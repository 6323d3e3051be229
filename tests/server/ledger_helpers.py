"""Driving a real in-process server (`create_app` with an injected clock) for the ledger
and stats tests: reports, panes gone, `seen`, and reading the `waits` table."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from paneboard_protocol.pane import PaneKey, PaneUpdate
from paneboard_server.panes.core import Ingest, Seen
from paneboard_server.store import schema as s
from sqlalchemy import select
from support.reports import pane_report

T0 = 1_900_000_000.0
_seq = itertools.count(1)


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


async def submit(core: Any, op: Any) -> None:
    done = asyncio.get_running_loop().create_future()
    op.on_commit = lambda: done.done() or done.set_result(None)
    op.on_fail = lambda e: done.done() or done.set_exception(e)
    core.submit(op)
    await asyncio.wait_for(done, 10)


def update(
    host: str,
    pane: str,
    state: str | None,
    *,
    agent: str | None = "claude",
    kind: str | None = None,
    msg: str | None = None,
    session: str = "main",
    t: float = T0,
) -> PaneUpdate:
    return pane_report(
        pane,
        state,
        host=host,
        t=t,
        session=session,
        window="0",
        agent=agent,
        kind=kind,
        msg=msg,
        source="protocol",
    )


async def report(core: Any, host: str, pane: str, state: str | None, **kw: Any) -> None:
    await submit(core, Ingest(1, "s", next(_seq), panes=[update(host, pane, state, **kw)]))


async def reports(core: Any, updates: list[PaneUpdate]) -> None:
    await submit(core, Ingest(1, "s", next(_seq), panes=updates))


async def gone(core: Any, host: str, pane: str) -> None:
    await submit(core, Ingest(1, "s", next(_seq), gone=[(PaneKey(host=host, tmux="default", pane=pane), T0)]))


def pane_id(core: Any, host: str, pane: str) -> int:
    return next(p.id for p in core.panes.values() if p.pane == pane and core.hosts[p.host_id].name == host)


async def seen(core: Any, host: str, pane: str) -> None:
    await submit(core, Seen(pane_id(core, host, pane)))


async def waits(core: Any) -> list[Any]:
    async with core.engine.connect() as conn:
        return list((await conn.execute(select(s.waits).order_by(s.waits.c.start_t, s.waits.c.id))).all())
