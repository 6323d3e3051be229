"""The single writer: it takes whatever operations have queued up, applies them in one
transaction (a burst of reports is one commit, not one per report), and only after the
commit updates the in-memory mirror, publishes to live-stream clients, runs each
operation's after-commit hook (a collector's ack, an HTTP reply) and tells the change
listeners (notifications). A batch that fails is retried operation by operation, so one
bad operation fails alone and never another collector's.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass
from typing import Any

from . import reclassify
from .commands import Op
from .flush import flush
from .state import WriterState
from .tx import Tx

log = logging.getLogger("paneboard.server")
# Operations per transaction. PANEBOARD_WRITER_BATCH=1 (one commit per operation) exists
# only so bench/ingest.py can show what batching buys; nobody should run with it.
BATCH_MAX = max(1, int(os.environ.get("PANEBOARD_WRITER_BATCH", "4000")))


class Unstorable(Exception):
    """An operation the database refused for its data (not for the database's health):
    retrying it cannot help, so its sender is told to drop it."""


def is_data_error(exc: BaseException) -> bool:
    """True when `exc` (or what it wraps) is about the values sent, not the database:
    a Python-side conversion error or an SQLSTATE class 22 ("data exception")."""
    stack: list[BaseException | None] = [exc]
    seen: set[int] = set()
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, OverflowError | UnicodeError | ValueError | TypeError):
            return True
        if str(getattr(e, "sqlstate", "") or "").startswith("22"):
            return True
        stack += [getattr(e, "orig", None), e.__cause__, e.__context__]
    return False


@dataclass
class Change:
    """One committed change of a pane, for listeners (notifications)."""

    pane: dict[str, Any]
    prev_state: str | None
    reason: str
    gone: bool = False


async def run(core: WriterState) -> None:
    """The writer task: take whatever has queued up (at most BATCH_MAX), commit it as one batch."""
    while True:
        batch = [await core.queue.get()]
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
    """Commit a batch; if it fails, commit its operations one by one, so one bad
    operation fails alone and never another collector's."""
    batch = [op for op in batch if op.wanted()]
    if not batch:
        return
    try:
        await _apply(core, batch)
        return
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        core.collector_rows = None  # re-read after a failed batch
        if len(batch) == 1:
            _failed(core, batch[0], exc)
            return
        core.stats["batches_retried"] += 1
        log.warning("a batch of %d operations failed (%s); retrying them one by one", len(batch), exc)
    for op in batch:
        if not op.wanted():  # its connection failed on an earlier operation of this batch
            continue
        try:
            await _apply(core, [op])
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            core.collector_rows = None
            _failed(core, op, exc)


def _failed(core: WriterState, op: Op, exc: BaseException) -> None:
    """Tell the operation's sender; data the database refused is the sender's to drop."""
    if is_data_error(exc):
        core.stats["refused_unstorable"] += 1
        log.warning("refused an operation the database cannot store: %s: %s", type(exc).__name__, exc)
        op.failed(Unstorable(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"))
        return
    core.stats["commits_failed"] += 1
    core.writer_error = (core.clock(), f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
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


def _commit(core: WriterState, tx: Tx) -> None:
    """Put the committed copies into memory, publish them, run the after-commit work."""
    for h in tx.hosts.values():
        core.put_host(h)
    changes: list[Change] = []
    live: list[dict[str, Any]] = []
    gone: list[int] = []
    top = core.rev
    for pid in sorted(tx.changed | tx.refreshed, key=lambda i: tx.panes[i].rev):
        p = tx.panes[pid]
        core.put_pane(p)
        top = max(top, p.rev)
        prev, reason = tx.reasons.get(pid, (None, "refresh"))
        if p.gone_at is not None:
            gone.append(pid)
            core.deadlines.forget(pid)
            changes.append(Change({"id": pid}, prev, reason, gone=True))
        else:
            data = core.api(p)
            live.append(data)
            changes.append(Change(data, prev, reason))
            core.deadlines.schedule(pid, reclassify.deadline(p.evidence, core.clock()))
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
