"""The single writer: it takes whatever operations have queued up, applies them in one
transaction (a burst of reports is one commit, not one per report), and only after the
commit updates the in-memory mirror, publishes to live-stream clients, runs each
operation's after-commit hook (a collector's ack, an HTTP reply) and tells the change
listeners (notifications). A batch that fails is bisected: each half is tried on its own,
so one bad operation among n costs about 2·log2(n) transactions, not n (one by one, a
batch of a few hundred held every collector's acks for seconds on PostgreSQL), and it
fails alone, never another collector's. A collector message that fails
alone for its data loses only the panes the database refuses (`isolate.py`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from operator import attrgetter

import msgspec
from paneboard_protocol.pane import State
from paneboard_protocol.views import PaneView

from . import reclassify
from .commands import Ingest, Op
from .flush import flush
from .isolate import is_data_error, is_transient, refused_field, refused_panes
from .state import WriterState
from .tx import Tx

log = logging.getLogger("paneboard.server")
# Operations per transaction. PANEBOARD_WRITER_BATCH=1 (one commit per operation) exists
# only so bench/ingest.py can show what batching buys; nobody should run with it.
BATCH_MAX = max(1, int(os.environ.get("PANEBOARD_WRITER_BATCH", "4000")))


class Unstorable(Exception):
    """An operation the database refused for its data (not for the database's health):
    retrying it cannot help, so its sender is told to drop it."""


class Change(msgspec.Struct):
    """One committed change of a pane, for listeners (notifications): one a changed pane
    of every batch, so a Struct (about half a dataclass's cost to make). `pane` is the
    view clients got (None: the pane went)."""

    pane_id: int
    pane: PaneView | None
    prev_state: State | None
    reason: str


# Under load, batches start at least this far apart (group commit). A SQLite commit writes
# every page the batch dirtied to the WAL, about the same time whether it carries 200
# reports or 1,000, and a batch has other fixed work besides; a writer that commits the
# moment anything is queued spends its core on many small batches, each report paying a
# large share of a commit. Spaced this far apart, the server's CPU a report roughly halved
# at 5,000 reports/s; a shorter spacing gave back most of the gain at 10,000/s
# (bench/ingest.py beside the writer without it; bench/README.md). Only
# work that queued while the last batch ran waits: a report that finds the writer idle
# goes at once, so a lone change (an agent turning blocked) is not held back.
BATCH_SPACING = 0.05


async def run(core: WriterState) -> None:
    """The writer task: take whatever has queued up (at most BATCH_MAX), commit it as one
    batch; when work queued up behind the last batch, no sooner than `BATCH_SPACING`
    after that batch began."""
    last = float("-inf")
    while True:
        behind = not core.queue.empty()  # it came while the last batch ran: under load
        batch = [await core.queue.get()]
        gather = last + BATCH_SPACING - time.monotonic()
        if behind and gather > 0 and core.queue.qsize() < BATCH_MAX - 1:
            await asyncio.sleep(gather)  # let the rest of the burst join it
        last = time.monotonic()
        while len(batch) < BATCH_MAX:
            try:
                batch.append(core.queue.get_nowait())
            except asyncio.QueueEmpty:
                break
        core.room.set()
        try:
            await write(core, batch)
        finally:
            for _ in batch:
                core.queue.task_done()


async def write(core: WriterState, batch: list[Op]) -> None:
    """Commit a batch; if it fails, bisect it, so one bad operation fails alone and never
    another collector's, and costs about 2·log2(n) transactions."""
    await _write(core, batch, whole=True)


async def _write(core: WriterState, ops: list[Op], whole: bool = False) -> None:
    ops = [op for op in ops if op.wanted()]  # a sender that failed earlier in this batch: not it
    if not ops:
        return
    try:
        try:
            await _apply(core, ops)
        except Exception as exc:
            if not is_transient(exc):
                raise
            core.collector_rows = None
            core.stats["transactions_failed"] += 1
            core.stats["batches_rerun"] += 1
            why = _one_line(exc)
            log.info("a batch of %d operations met another process's writer (%s); run again", len(ops), why)
            await _apply(core, ops)
        return
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        core.collector_rows = None  # re-read after a failed batch
        core.stats["transactions_failed"] += 1
        if len(ops) == 1:
            await _alone(core, ops[0], exc)
            return
        if whole:
            core.stats["batches_retried"] += 1
            log.warning("a batch of %d operations failed (%s); bisecting it", len(ops), exc)
    mid = len(ops) // 2
    await _write(core, ops[:mid])  # in order: a collector's later seq after its earlier one
    await _write(core, ops[mid:])


async def _alone(core: WriterState, op: Op, exc: BaseException) -> None:
    """One operation failed on its own. A collector message the database refuses for its
    data is stored without the panes it refuses (each named to its sender) when there
    are such panes; otherwise the operation fails whole."""
    if isinstance(op, Ingest) and op.panes and is_data_error(exc):
        try:
            bad = await refused_panes(core, op)
            if bad:
                why = f"cannot be stored: {_one_line(exc)}"
                rest = op.without({i: (await refused_field(core, op, i), why) for i in bad})
                await _apply(core, [rest])
                core.stats["refused_unstorable"] += len(bad)
                where = ", ".join(at for at, _ in rest.dropped)
                log.warning("stored seq %d without the pane(s) the database refused: %s", op.seq, where)
                return
        except asyncio.CancelledError:
            raise
        except Exception as again:  # the rest failed too, or the database went away
            core.stats["transactions_failed"] += 1
            exc = again
    _failed(core, op, exc)


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"


def _failed(core: WriterState, op: Op, exc: BaseException) -> None:
    """Tell the operation's sender; data the database refused is the sender's to drop."""
    if is_data_error(exc):
        core.stats["refused_unstorable"] += 1
        log.warning("refused an operation the database cannot store: %s: %s", type(exc).__name__, exc)
        op.failed(Unstorable(_one_line(exc)))
        return
    core.stats["commits_failed"] += 1
    core.writer_error = (core.clock(), _one_line(exc))
    log.error("could not commit: %s: %s", type(exc).__name__, exc)
    op.failed(exc)


async def _apply(core: WriterState, batch: list[Op]) -> None:
    """One transaction for the batch; the mirror, stream and listeners only after its commit."""
    now = core.clock()
    core.batch_started = time.monotonic()
    try:
        async with core.engine.begin() as conn:
            tx = Tx(core, conn, now)
            for op in batch:
                # The hook is the writer's to run, for every kind of operation, so one set on an
                # operation is never silently dropped; only a refused one (False) has none.
                if await op.apply(tx) and op.on_commit is not None:
                    tx.after.append(op.on_commit)
            await flush(core, tx)
    finally:
        core.batch_started = None
    core.writer_error = None
    _commit(core, tx)
    core.stats["batches"] += 1


_rev = attrgetter("rev")


def _commit(core: WriterState, tx: Tx) -> None:
    """Put the committed copies into memory, publish them, run the after-commit work."""
    for h in tx.hosts.values():
        core.put_host(h)
    changes: list[Change] = []
    live: list[PaneView] = []
    gone: list[int] = []
    top = core.rev
    now = core.clock()
    for p in sorted([tx.panes[i] for i in tx.changed | tx.refreshed], key=_rev):
        pid = p.id
        core.put_pane(p)
        top = max(top, p.rev)
        prev, reason = tx.reasons.get(pid, (None, "refresh"))
        if p.gone_at is not None:
            gone.append(pid)
            core.deadlines.forget(pid)
            changes.append(Change(pid, None, prev, reason))
        else:
            data = core.view(p)
            live.append(data)
            changes.append(Change(pid, data, prev, reason))
            core.deadlines.schedule(pid, reclassify.deadline(p.evidence, now))
    core.rev = top
    core.hub.publish(top, live, gone)
    for fn in tx.after:
        try:
            fn()
        except Exception as exc:  # an ack to a collector that just went away
            log.debug("after-commit callback failed: %s", exc)
    if changes:
        for listener in core.listeners:
            try:
                listener(changes)
            except Exception as exc:
                log.error("change listener failed: %s", exc)
