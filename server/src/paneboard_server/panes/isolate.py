"""Finding what the database refuses in a message that failed alone for its data.

The wire's limits are the columns' (`paneboard_protocol.pane`), so a value that passed
validation should never be refused; this is for what was not foreseen. The database says
*that* a statement failed, not which row or column did, so the writer asks it with
*probes*: the message's panes written in a transaction that is always rolled back.
Bisecting the panes finds the refused ones in about 2·log2(n) probes, and one probe per
field of a refused pane names the field; the rest of the message is then stored and only
those panes are refused (`writer.py`).
"""

from __future__ import annotations

import asyncio

import msgspec
from paneboard_protocol.pane import FIELDS, default

from .commands import Ingest
from .flush import flush
from .state import WriterState
from .tx import Tx

#: The fields a refused pane is probed with, one at a time set to its default: text first,
#: the likeliest to be refused for its data.
_PROBED = sorted((f for f in FIELDS if f.update and f.row), key=lambda f: (f.type != "str", f.name))


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc` and everything it wraps (SQLAlchemy's `orig`, causes, contexts), once each."""
    stack: list[BaseException | None] = [exc]
    seen: dict[int, BaseException] = {}
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen[id(e)] = e
        stack += [getattr(e, "orig", None), e.__cause__, e.__context__]
    return list(seen.values())


def is_data_error(exc: BaseException) -> bool:
    """True when `exc` (or what it wraps) is about the values sent, not the database:
    a Python-side conversion error or an SQLSTATE class 22 ("data exception")."""
    return any(
        isinstance(e, OverflowError | UnicodeError | ValueError | TypeError)
        or str(getattr(e, "sqlstate", "") or "").startswith("22")
        for e in _chain(exc)
    )


#: PostgreSQL's "try the transaction again": a serialization failure, a deadlock
TRANSIENT_SQLSTATES = frozenset({"40001", "40P01"})


def is_transient(exc: BaseException) -> bool:
    """True when the database gave up on the transaction for a conflict with another
    one (two processes' writers claiming new hosts in opposite orders): the same
    transaction run again succeeds."""
    return any(str(getattr(e, "sqlstate", "") or "") in TRANSIENT_SQLSTATES for e in _chain(exc))


async def probe(core: WriterState, op: Ingest) -> BaseException | None:
    """Write `op` in a transaction that is rolled back whatever happens: None when the
    database took it, else what it said. Nothing reaches the mirror, the stream or the
    collector (the probe's hooks are none, its after-commit work is never run)."""
    try:
        async with core.engine.connect() as conn:
            trans = await conn.begin()
            try:
                tx = Tx(core, conn, core.clock())
                await op.apply(tx)
                await flush(core, tx)
            finally:
                await trans.rollback()
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        core.stats["transactions_failed"] += 1
        return exc
    return None


async def refused_panes(core: WriterState, op: Ingest) -> list[int]:
    """The indices of `op.panes` the database refuses each on its own, by bisection. An
    error that is not about data (the database is gone) is raised: no pane is to blame."""

    async def find(idx: list[int]) -> list[int]:
        exc = await probe(core, op.probe(idx))
        if exc is None:
            return []
        if not is_data_error(exc):
            raise exc
        if len(idx) == 1:
            return idx
        mid = len(idx) // 2
        return await find(idx[:mid]) + await find(idx[mid:])

    return await find(list(range(len(op.panes))))


async def refused_field(core: WriterState, op: Ingest, i: int) -> str | None:
    """The field of pane `i` without which the database takes it, or None (it is not one
    field alone)."""
    u = op.panes[i]
    for f in _PROBED:
        if getattr(u, f.name) == default(f):
            continue
        plain = msgspec.structs.replace(u, **{f.name: default(f)})
        if await probe(core, op.probe([i], plain)) is None:
            return f.name
    return None
