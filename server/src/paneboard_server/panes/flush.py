"""The SQL a committed batch writes: pane rows with their new revs, records, hosts,
tmux sessions, history and collectors' stream positions, in as few statements as the
batch allows, sent in two goes (`store.Pipeline`): everything the batch changed with
the ledger's read of the waits it may open or close, then the ledger's writes and the
stream positions. On SQLite every trip to the driver's thread waits for a turn of a busy
event loop; two trips a batch, not one per statement.

SQLite and PostgreSQL differ in three places: revs come from a sequence on PostgreSQL
(several processes share it) and from the process's counter on SQLite; inserts that may
race another process use each dialect's ON CONFLICT DO NOTHING; and PostgreSQL tells
the other processes which panes changed (NOTIFY, read by `fanout.py`).
"""

from __future__ import annotations

from typing import Any

from paneboard_protocol.pane import KIND_MAX, NAME_MAX, ROW_FIELDS, STATE_MAX
from sqlalchemy import bindparam, delete, insert, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from ..store import Bulk, Pipeline
from ..store import schema as s
from . import wait_cap, waits
from .state import PaneState
from .tx import HISTORY_ORDER, Tx

NOTIFY_CHANNEL = "paneboard_change"

# The statements every batch runs, built once: building one and deriving its cache key
# is SQLAlchemy's slow path, paid per batch (several a second per collector) if inline.
_UPDATE_PANES = Bulk(
    update(s.panes).where(s.panes.c.id == bindparam("pid")).values({c: bindparam(c) for c in ROW_FIELDS})
)
_UPDATE_PANES_ORDER = (*ROW_FIELDS, "pid")
_INSERT_HISTORY = Bulk(insert(s.history), HISTORY_ORDER)
_RECORD_COLS = ["pane_id", "record_id", "state", "kind", "app", "msg", "title", "data"]
_INSERT_RECORDS = Bulk(insert(s.pane_records), _RECORD_COLS)
_DELETE_RECORDS = Bulk(delete(s.pane_records).where(s.pane_records.c.pane_id == bindparam("pid")))
# Another process on the same database may have added a session already: ignore that.
_SESSION_COLS = ["host_id", "tmux", "name", "last_seen"]
_INSERT_SESSIONS = {
    "sqlite": Bulk(sqlite_insert(s.tmux_sessions).on_conflict_do_nothing(), _SESSION_COLS),
    "postgresql": Bulk(pg_insert(s.tmux_sessions).on_conflict_do_nothing(), _SESSION_COLS),
}
_UPDATE_HOSTS = Bulk(
    update(s.hosts)
    .where(s.hosts.c.id == bindparam("hid"))
    .values(
        reachable=bindparam("reachable"),
        error=bindparam("error"),
        last_seen=bindparam("last_seen"),
        unreachable_since=bindparam("unreachable_since"),
    )
)

# A collector's stream position, by the set of columns written (a few shapes, built once each)
_UPDATE_COLLECTORS: dict[tuple[str, ...], Bulk] = {}

# A record's columns are filled from free-form JSON the wire does not bound field by field:
# cut to the widths the schema gives those columns.
_RECORD_ID, _RECORD_STATE, _RECORD_KIND = NAME_MAX, STATE_MAX, KIND_MAX


async def flush(core: PaneState, tx: Tx) -> None:
    """Write what the batch changed, inside its transaction."""
    conn = tx.conn
    changed = sorted(tx.changed)
    if changed:
        if core.is_pg:
            revs = [
                r[0]
                for r in (
                    await conn.execute(
                        text("SELECT nextval('pane_rev_seq') FROM generate_series(1, :n)"),
                        {"n": len(changed)},
                    )
                ).all()
            ]
        else:
            revs = list(range(core.rev + 1, core.rev + 1 + len(changed)))
        for pid, rev in zip(changed, revs, strict=True):
            tx.panes[pid].rev = rev
    pipe = Pipeline(conn)
    ledger = await waits.read(tx, pipe) if tx.history else None
    rows = [(*tx.panes[pid].row_values(), pid) for pid in changed]
    pipe.add_values(_UPDATE_PANES, _UPDATE_PANES_ORDER, rows)
    if tx.records_dirty:
        ids = sorted(tx.records_dirty)
        pipe.add(_DELETE_RECORDS, [{"pid": pid} for pid in ids])
        pipe.add(_INSERT_RECORDS, _record_rows(tx, ids))
    pipe.add(
        _UPDATE_HOSTS,
        [
            {
                "hid": h.id,
                "reachable": h.reachable,
                "error": h.error,
                "last_seen": h.last_seen,
                "unreachable_since": h.unreachable_since,
            }
            for h in (tx.hosts[i] for i in sorted(tx.host_dirty))
        ],
    )
    new_sessions = {
        (p.host_id, p.tmux, p.session)
        for p in (tx.panes[i] for i in changed)
        if p.session and (p.host_id, p.tmux, p.session) not in core.sessions
    }
    if new_sessions:
        pipe.add(
            _INSERT_SESSIONS["postgresql" if core.is_pg else "sqlite"],
            [{"host_id": h, "tmux": tm, "name": n, "last_seen": tx.now} for h, tm, n in sorted(new_sessions)],
        )
        tx.after.append(lambda: core.sessions.update(new_sessions))
    pipe.add_values(_INSERT_HISTORY, HISTORY_ORDER, tx.history)
    await pipe.send()
    if ledger is not None:
        await waits.record(tx, ledger, pipe)  # the waits these rows open or close, in the same commit
    if tx.retexts:
        waits.retext(tx, pipe)  # after `record`: a wait opened in this batch takes it too
    if tx.collectors:
        await write_collectors(core, conn, tx, pipe)
    await pipe.send()
    if tx.waits_due:  # after the waits this batch opened are in
        await wait_cap.trim(tx)
    if core.is_pg and changed:
        for chunk in _chunks([str(pid) for pid in changed], 7000):
            await conn.execute(
                text("SELECT pg_notify(:c, :p)"),
                {"c": NOTIFY_CHANNEL, "p": core.instance + ":" + ",".join(chunk)},
            )


def _record_rows(tx: Tx, ids: list[int]) -> list[dict[str, Any]]:
    """The pane_records rows of the panes `ids`: one per record id, the first kept."""
    rows = []
    for pid in ids:
        seen: set[str] = set()
        for r in tx.panes[pid].records:
            rid = str(r.get("id") or "")[:_RECORD_ID]
            if rid in seen:
                continue
            seen.add(rid)
            rows.append(
                {
                    "pane_id": pid,
                    "record_id": rid,
                    "state": _s(r.get("state"), _RECORD_STATE),
                    "kind": _s(r.get("kind"), _RECORD_KIND),
                    "app": _s(r.get("app"), 128),
                    "msg": _s(r.get("msg"), 4096),
                    "title": _s(r.get("title"), 4096),
                    "data": r,
                }
            )
    return rows


async def write_collectors(core: PaneState, conn: AsyncConnection, tx: Tx, pipe: Pipeline) -> None:
    """Stream positions of every collector in the batch: one statement per shape,
    not one (or two) per collector. A collector new to this process is upserted at once
    (rare); the others' positions are queued on `pipe`."""
    if core.collector_rows is None:
        core.collector_rows = {r[0] for r in (await conn.execute(select(s.collectors.c.token_id))).all()}
    known = core.collector_rows
    new = [{"token_id": cid, **v} for cid, v in tx.collectors.items() if cid not in known]
    for shape in {tuple(sorted(r)) for r in new}:
        # An upsert: "new" means new to this process's memory, and a collector that last
        # connected to another process on the same PostgreSQL has its row already (a plain
        # INSERT failed its first batch here with 1011).
        ins = (pg_insert if core.is_pg else sqlite_insert)(s.collectors)
        upsert = ins.on_conflict_do_update(
            index_elements=[s.collectors.c.token_id],
            set_={k: ins.excluded[k] for k in shape if k != "token_id"},
        )
        await conn.execute(upsert, [r for r in new if tuple(sorted(r)) == shape])
    old = [(cid, v) for cid, v in tx.collectors.items() if cid in known]
    for shape in {tuple(sorted(v)) for _, v in old}:
        stmt = _UPDATE_COLLECTORS.get(shape)
        if stmt is None:
            stmt = _UPDATE_COLLECTORS[shape] = Bulk(
                update(s.collectors)
                .where(s.collectors.c.token_id == bindparam("cid"))
                .values({k: bindparam(k) for k in shape})
            )
        pipe.add(stmt, [{"cid": cid, **v} for cid, v in old if tuple(sorted(v)) == shape])
    if new:
        added = {r["token_id"] for r in new}
        tx.after.insert(0, lambda: known.update(added))


def _s(v: Any, n: int) -> str | None:
    return None if v is None else str(v)[:n]


def _chunks(items: list[str], limit: int) -> list[list[str]]:
    out: list[list[str]] = [[]]
    size = 0
    for it in items:
        if size + len(it) + 1 > limit and out[-1]:
            out.append([])
            size = 0
        out[-1].append(it)
        size += len(it) + 1
    return out
