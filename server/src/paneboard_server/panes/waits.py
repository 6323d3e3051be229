"""The writer keeps the ledger's `waits` table true to history, inside its transaction.

The history rows a batch writes and the intervals they open or close commit together,
so a restart in the middle of a block finds the block still open (`end_t` NULL) and
the next history row closes it; nothing is lost or counted twice. Rows arriving in
order (the usual case) are one `ledger.step` each against the pane's open interval.
A row older than what the ledger already holds for its pane (a late row, another
replica's clock) rebuilds that pane's intervals from its retained history with
`ledger.derive`, keeping any `answered_by` already recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import Any, NamedTuple

from paneboard_protocol.pane import State
from sqlalchemy import and_, bindparam, delete, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from ..ledger import WAITING, Event, Interval, Waiting, derive, order, step
from ..store import Bulk, Pipeline, Query
from ..store import schema as s
from . import wait_cap
from .tx import H_AGENT, H_KIND, H_MSG, H_PANE, H_PREV, H_REASON, H_STATE, H_T, HistoryRow, Tx

W = s.waits
_CLOSE = Bulk(
    update(W)
    .where(W.c.id == bindparam("wid"))
    .values(end_t=bindparam("end_t"), ended=bindparam("ended"), end_state=bindparam("end_state"))
)
# a new interval: every column but its id and who answered it (set later, by an answer)
_OPEN_ORDER = tuple(c.name for c in W.c if c.name not in ("id", "answered_by"))
_OPEN = Bulk(insert(W), _OPEN_ORDER)
_CLOSE_ORDER = ("end_t", "ended", "end_state", "wid")
# `record` builds the two statements' rows as tuples in these orders (checked against the
# compiled statements by `Pipeline.add_values`): a dict a row, merged from two or three,
# then read back by name, was a third of its time. Where the pane is (`_ident`), then
# the interval's own columns.
_IDENT = ("pane_id", "host", "tmux", "pane", "session")
if _OPEN_ORDER[: len(_IDENT)] != _IDENT:
    raise RuntimeError(f"waits: a row is built where-the-pane-is first, the table has {_OPEN_ORDER}")


class _Wait(NamedTuple):
    """The columns of a stored wait that `record` reads, in its query's order."""

    id: int
    pane_id: int
    state: Waiting
    start_t: float
    agent: str | None
    kind: str | None
    msg: str | None
    end_t: float | None
    ended: str | None
    end_state: State | None

    def interval(self) -> Interval:
        return Interval(
            self.state, self.start_t, self.agent, self.kind, self.msg, self.end_t, self.ended, self.end_state
        )


_WAIT_COLUMNS = [W.c[name] for name in _Wait._fields]
# the open waits of some panes, and any closed after a time (`read`)
_READ = Query(
    select(*_WAIT_COLUMNS).where(
        W.c.pane_id.in_(bindparam("pids", expanding=True)),
        or_(W.c.end_t.is_(None), W.c.end_t > bindparam("lowest")),
    )
)
_RETEXT = Bulk(
    update(W).where(W.c.pane_id == bindparam("pid"), W.c.end_t.is_(None)).values(msg=bindparam("text"))
)


def _matters(rows: list[HistoryRow], open_: bool) -> bool:
    """Whether a pane's new rows can open or close a wait: any of them is one, or the
    ledger has the pane waiting (which a late row may have made it, whatever the pane
    is now: `prev_state` alone is not enough)."""
    return open_ or any(r[H_STATE] in WAITING or r[H_PREV] in WAITING for r in rows)


def _event(r: HistoryRow) -> Event:
    """A history row the batch wrote, as the ledger reads it (it has no id yet)."""
    return Event(r[H_T], r[H_AGENT], r[H_STATE], r[H_KIND], r[H_MSG], r[H_REASON] or "report")


async def _open_waits(tx: Tx) -> set[int]:
    core = tx.core
    if core.open_waits is None:
        found = await tx.conn.execute(
            select(W.c.pane_id).where(W.c.end_t.is_(None), W.c.pane_id.is_not(None))
        )
        core.open_waits = {r[0] for r in found.all()}
    return core.open_waits


@dataclass
class Reading:
    """What `record` needs, read alongside the batch's other statements (`read`)."""

    known: set[int]  # panes with an open wait, as of the last commit
    wanted: dict[int, list[HistoryRow]]  # the history rows of panes that may open or close one
    existing: list[_Wait]  # their open waits, and any closed after the earliest of the rows


async def read(tx: Tx, pipe: Pipeline) -> Reading | None:
    """Queue on `pipe` the read of the stored waits `tx.history` may open or close (None:
    it can open or close none). Only the waits table is read, which the batch's other
    statements do not write, so it rides with them."""
    by_pane: dict[int, list[HistoryRow]] = {}
    for h in tx.history:
        by_pane.setdefault(h[H_PANE], []).append(h)
    known = await _open_waits(tx)
    wanted = {pid: rows for pid, rows in by_pane.items() if _matters(rows, pid in known)}
    if not wanted:
        return None
    lowest = min(r[H_T] for rows in wanted.values() for r in rows)
    return Reading(known, wanted, pipe.fetch(_READ, _Wait._make, {"pids": sorted(wanted), "lowest": lowest}))


async def record(tx: Tx, reading: Reading, pipe: Pipeline) -> None:
    """Bring the ledger up to date with `tx.history` (inserted, same transaction): the
    waits it opens and closes are queued on `pipe`; a pane with late rows is rebuilt
    from its history at once."""
    now_open: dict[int, bool] = {}
    conn = tx.conn
    existing: dict[int, list[_Wait]] = {}
    for r in reading.existing:
        existing.setdefault(r.pane_id, []).append(r)
    inserts: list[tuple[Any, ...]] = []
    closes: list[tuple[Any, ...]] = []
    for pid, rows in reading.wanted.items():
        events = order([_event(r) for r in rows])
        first = events[0].t
        mine = existing.get(pid, [])
        opened = [r for r in mine if r.end_t is None]
        late = any(r.end_t is not None and r.end_t > first for r in mine) or any(
            r.start_t > first for r in opened
        )
        if late or len(opened) > 1:
            ivs = await rebuild(conn, pid, _ident(tx, pid))
            now_open[pid] = bool(ivs) and ivs[-1].end_t is None
            continue
        db_open = opened[0] if opened else None
        cur = db_open.interval() if db_open is not None else None
        cur_id = db_open.id if db_open is not None else None
        ident: tuple[Any, ...] | None = None
        for ev in events:
            closed, nxt = step(cur, ev)
            if closed is not None:
                if cur_id is not None:
                    closes.append((*_end_values(closed), cur_id))
                else:
                    ident = ident or _ident_values(tx, pid)
                    inserts.append((*ident, *_interval_values(closed)))
            if nxt is not cur:
                cur, cur_id = nxt, None
        if cur is not None and cur_id is None:
            inserts.append((*(ident or _ident_values(tx, pid)), *_interval_values(cur)))
        now_open[pid] = cur is not None
    pipe.add_values(_CLOSE, _CLOSE_ORDER, closes)
    pipe.add_values(_OPEN, _OPEN_ORDER, inserts)
    if inserts:
        wait_cap.note(tx, [row[0] for row in inserts])
    known = reading.known

    def remember() -> None:  # after the commit: a failed batch must not change it
        for pid, is_open in now_open.items():
            (known.add if is_open else known.discard)(pid)

    tx.after.append(remember)


def retext(tx: Tx, pipe: Pipeline) -> None:
    """The question text of panes still waiting changed without a history row: their
    open waits take it, so a ledger row keeps the text the card showed (a THINKTERM
    contract's `blocked` has no text; the question is read off the screen a moment later).
    Queued after `record`'s writes: a wait opened in this batch takes it too."""
    pipe.add(_RETEXT, [{"pid": pid, "text": text} for pid, text in sorted(tx.retexts.items())])


async def rebuild(conn: AsyncConnection, pane_id: int, ident: dict[str, Any]) -> list[Interval]:
    """Re-derive one pane's intervals from its retained history; returns them."""
    h = s.history
    rows = (
        await conn.execute(
            select(h.c.id, h.c.t, h.c.agent, h.c.state, h.c.kind, h.c.msg, h.c.reason)
            .where(h.c.pane_id == pane_id)
            .order_by(h.c.t, h.c.id)
        )
    ).all()
    if not rows:
        return []
    since = rows[0]._mapping["t"]
    # What history does not hold is kept from the rows re-derived: who answered, and the
    # question text read after the row that opened the wait (`retext`).
    keep = {
        (r.state, r.start_t): (r.answered_by, r.msg)
        for r in (
            await conn.execute(
                select(W.c.state, W.c.start_t, W.c.answered_by, W.c.msg).where(
                    W.c.pane_id == pane_id, W.c.start_t >= since
                )
            )
        ).all()
    }
    # What began before the oldest retained row cannot be re-derived: it stays as it is.
    await conn.execute(delete(W).where(and_(W.c.pane_id == pane_id, W.c.start_t >= since)))
    ivs = derive([Event.from_row(r) for r in rows])
    if ivs:
        await conn.execute(
            insert(W),
            [
                {
                    **ident,
                    **_cols(iv),
                    "msg": iv.msg or keep.get((iv.state, iv.start_t), (None, None))[1],
                    "answered_by": keep.get((iv.state, iv.start_t), (None, None))[0],
                }
                for iv in ivs
            ],
        )
    return ivs


def _ident(tx: Tx, pane_id: int) -> dict[str, Any]:
    """Where the pane is, copied onto its intervals so they outlive it."""
    return dict(zip(_IDENT, _ident_values(tx, pane_id), strict=True))


def _ident_values(tx: Tx, pane_id: int) -> tuple[Any, ...]:
    """`_ident`'s values, in `_IDENT` order (as a wait's row begins)."""
    p = tx.pane_by_id(pane_id)
    if p is None:
        return (pane_id, "?", "?", "?", None)
    host = tx.host_by_id(p.host_id)
    return (pane_id, host.name if host is not None else "?", p.tmux, p.pane, p.session or None)


_interval_values = attrgetter(*(c for c in _OPEN_ORDER if c not in _IDENT))
_end_values = attrgetter(*_CLOSE_ORDER[:-1])  # how it ended


def _cols(iv: Interval) -> dict[str, Any]:
    return {
        "agent": iv.agent,
        "state": iv.state,
        "kind": iv.kind,
        "msg": iv.msg,
        "start_t": iv.start_t,
        **_ends(iv),
    }


def _ends(iv: Interval) -> dict[str, Any]:
    return {"end_t": iv.end_t, "ended": iv.ended, "end_state": iv.end_state}
