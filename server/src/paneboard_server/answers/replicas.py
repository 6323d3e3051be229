"""Screens and answers across `paneboard serve` replicas on one PostgreSQL.

A pane's collector is connected to one replica (A); a page may be served by another (B).
Everything travels by LISTEN/NOTIFY on the fan-out's connection (`fanout.py`):

- watch: B, while its pages look at the pane, NOTIFYs `pane:scrollback` (at once the
  first time, then every `RENEW` s). A marks the pane watched as if a page of its own
  looked; when B stops renewing, A's watch runs out and A tells its collector `unwatch`
  (the usual `WATCH_FOR` sweep), so no unwatch message is needed.
- screen: A publishes every screen of a remotely watched pane (and its current one when
  a watch arrives). A screen may be tens of KB and a NOTIFY payload at most 8000 bytes,
  so it goes as numbered chunks sent in ONE transaction: PostgreSQL delivers a
  transaction's notifications together and in order, so B reassembles them without a
  table to write and clean up. A screen over `MAX_CHUNKS` chunks is replaced by one
  saying so (bounded). B validates it with the same model as a collector's.
- input: which hosts' collectors type (their hello's `input`, shown as "takes answers"
  on /api/panes) is announced by A when a collector attaches, and again by every
  replica when one starts and asks (`origin:?`).
- answer (a declared answer, text or a key): B checks who (operator role, CSRF, Origin:
  `api_screens`) and forwards the request; only A, the process holding the collector,
  runs `AnswerDesk.answer` — so the single-use claim is decided in one process for every
  replica, the checks against the latest screen are made where the screen is
  authoritative, the audit row is written once (by A; a screen some process's audit row
  says was typed is `used` too, for a collector that moved between replicas), and A
  re-reads the operator role from the database rather than trusting the message. A
  NOTIFYs the outcome and the row id back; B returns them. B asks only while some
  process holds the collector (`held_anywhere`: a lock of A's listening session, gone
  with it), so an answer to a collector connected nowhere is `offline` at once, audited;
  no reply in `ASK_WAIT` s (A died meanwhile) is `offline` too.

SQLite runs one process: none of this is started there.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections.abc import Callable
from typing import Any

import msgspec
from paneboard_protocol.wire import Screen
from sqlalchemy import select, text

from ..auth import Principal
from ..ingest import WireError, parse
from ..panes import held_anywhere
from ..store import schema as s
from .desk import REPLY_WAIT, AnswerDesk
from .screens import WATCH_FOR, ScreenHub, Shown

log = logging.getLogger("paneboard.replicas")

WATCH_CHANNEL = "paneboard_watch"  # "origin:pane_id:scrollback"
SCREEN_CHANNEL = "paneboard_screen"  # "origin:pane_id:seq:i:n:" + chunk of the screen's JSON
ASK_CHANNEL = "paneboard_ask"  # JSON: an answer request for whichever replica holds the pane
REPLY_CHANNEL = "paneboard_reply"  # JSON: its outcome, for the asking replica
INPUT_CHANNEL = "paneboard_input"  # "origin:cid:part:host,host" (or "origin:?": say yours)
RENEW = 10.0  # B renews a watch this often while its pages look (A keeps it WATCH_FOR s)
CHUNK = 7000  # characters of screen JSON per NOTIFY (ASCII: ensure_ascii), under 8000 bytes
MAX_CHUNKS = 64  # a screen over ~450 KB of JSON is not relayed (the wire allows more)
PARTIAL_MAX = 32  # screens being reassembled at once
ASK_WAIT = REPLY_WAIT + 3.0  # A waits REPLY_WAIT for its collector, then replies


class Replicas:
    """Relays watches, screens and answers between this process and its peers."""

    def __init__(
        self,
        core: Any,
        hub: ScreenHub,
        desk: AnswerDesk,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.core = core
        self.hub = hub
        self.desk = desk
        self.clock = clock
        self.me = core.instance
        self.renewed: dict[int, float] = {}  # pane id -> when B last sent its watch
        self.peers_watch: dict[int, float] = {}  # pane id -> watched by a peer until (A)
        self.remote_seen: dict[int, float] = {}  # pane id -> last screen from a peer (B)
        self.partial: dict[tuple[str, int, int], list[str | None]] = {}
        self.asks: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.seq = 0
        self.tasks: set[asyncio.Task[Any]] = set()
        self.pending: dict[int, Shown] = {}  # screens to publish (newest per pane)
        self.wake = asyncio.Event()
        self.stats = {"watches_sent": 0, "screens_sent": 0, "screens_got": 0, "asks": 0, "unheld": 0}
        hub.remote = self
        hub.on_store.append(self._stored)
        desk.remote = self
        desk.durable_claims = True

    def listeners(self) -> list[tuple[str, Callable[..., None]]]:
        return [
            (WATCH_CHANNEL, self._on_watch),
            (SCREEN_CHANNEL, self._on_screen),
            (ASK_CHANNEL, self._on_ask),
            (REPLY_CHANNEL, self._on_reply),
            (INPUT_CHANNEL, self._on_input),
        ]

    # --- which hosts type ---------------------------------------------------------------
    def on_attach(self, cid: int) -> None:
        """A collector attached here: tell the peers which of its hosts take answers."""
        self._spawn(self._notify(self._input_items(cid)))

    def _input_items(self, cid: int) -> list[tuple[str, str]]:
        hosts = sorted(self.core.input_hosts.get(cid, ()))
        parts: list[list[str]] = [[]]
        for h in hosts:
            if sum(len(x) + 1 for x in parts[-1]) + len(h) > CHUNK:
                parts.append([])
            parts[-1].append(h)
        return [(INPUT_CHANNEL, f"{self.me}:{cid}:{i}:{','.join(p)}") for i, p in enumerate(parts)]

    def _on_input(self, _c: Any, _pid: int, _ch: str, payload: str) -> None:
        origin, _, rest = payload.partition(":")
        if origin == self.me:
            return
        if rest == "?":  # a replica started: say which of our collectors type
            items = [i for cid in list(self.core.seen_routes) for i in self._input_items(cid)]
            if items:
                self._spawn(self._notify(items))
            return
        try:
            cid_s, part_s, hosts = rest.split(":", 2)
            cid, part = int(cid_s), int(part_s)
        except ValueError:
            return
        if cid in self.core.seen_routes:
            return  # attached here: our own hello is the truth
        names = frozenset(h for h in hosts.split(",") if h)
        old = self.core.input_hosts.get(cid, frozenset()) if part else frozenset()
        self.core.input_hosts[cid] = old | names

    def local(self, pane_id: int) -> bool:
        target = self.core.collector_of(pane_id)
        return target is not None and target[0] in self.core.seen_routes

    # --- sending ----------------------------------------------------------------------
    async def _notify(self, items: list[tuple[str, str]]) -> None:
        """NOTIFYs in one transaction: delivered together, in this order, or not at all."""
        try:
            async with self.core.engine.begin() as conn:
                for channel, payload in items:
                    await conn.execute(text("SELECT pg_notify(:c, :p)"), {"c": channel, "p": payload})
        except Exception as exc:  # the peer times out; the page sees online false
            log.warning("replica notify failed: %s", exc)

    def _spawn(self, coro: Any) -> None:
        t = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(t)
        t.add_done_callback(self.tasks.discard)

    # --- B: a page here looks at a pane held elsewhere --------------------------------
    def look(self, pane_id: int, scrollback: int, first: bool) -> None:
        now = self.clock()
        if first or now - self.renewed.get(pane_id, -RENEW) >= RENEW:
            self.renewed[pane_id] = now
            self.stats["watches_sent"] += 1
            self._spawn(self._notify([(WATCH_CHANNEL, f"{self.me}:{pane_id}:{scrollback}")]))
        for pid in [p for p in self.renewed if p not in self.hub.until]:
            self.renewed.pop(pid, None)
            self.remote_seen.pop(pid, None)

    def online(self, pane_id: int) -> bool:
        seen = self.remote_seen.get(pane_id)
        return seen is not None and self.clock() - seen < WATCH_FOR

    def _on_screen(self, _c: Any, _pid: int, _ch: str, payload: str) -> None:
        try:
            origin, pane_s, seq_s, i_s, n_s, chunk = payload.split(":", 5)
            pane_id, seq, i, n = int(pane_s), int(seq_s), int(i_s), int(n_s)
        except ValueError:
            return
        if origin == self.me or not (0 <= i < n <= MAX_CHUNKS):
            return
        key = (origin, pane_id, seq)
        parts = self.partial.get(key)
        if parts is None:
            if i != 0:
                return
            while len(self.partial) >= PARTIAL_MAX:
                self.partial.pop(next(iter(self.partial)))
            parts = self.partial[key] = [None] * n
        if len(parts) != n:
            return
        parts[i] = chunk
        if any(p is None for p in parts):
            return
        del self.partial[key]
        if pane_id not in self.hub.until or self.local(pane_id):
            return  # nobody here looks at it any more, or its collector came here
        try:
            screen = parse("".join(p or "" for p in parts), CHUNK * MAX_CHUNKS, 0)
        except WireError:
            screen = None
        if not isinstance(screen, Screen):
            log.warning("a peer's screen for pane %s did not validate", pane_id)
            return
        self.stats["screens_got"] += 1
        self.remote_seen[pane_id] = self.clock()
        self.hub.store(pane_id, screen)

    # --- A: a peer's page looks at a pane held here ------------------------------------
    def _on_watch(self, _c: Any, _pid: int, _ch: str, payload: str) -> None:
        try:
            origin, pane_s, sb_s = payload.split(":")
            pane_id, scrollback = int(pane_s), int(sb_s)
        except ValueError:
            return
        if origin == self.me or not self.local(pane_id) or not 0 <= scrollback <= 500:
            return
        self.peers_watch[pane_id] = self.clock() + WATCH_FOR
        self.hub.look(pane_id, scrollback)
        shown = self.hub.latest.get(pane_id)
        if shown is not None:  # the peer's page wants it now, not at the next change
            self._queue(pane_id, shown)

    def _stored(self, pane_id: int, shown: Shown) -> None:
        if self.peers_watch.get(pane_id, 0) > self.clock():
            self._queue(pane_id, shown)
        else:
            self.peers_watch.pop(pane_id, None)

    def _queue(self, pane_id: int, shown: Shown) -> None:
        self.pending[pane_id] = shown
        self.wake.set()

    async def run(self, ready: asyncio.Event) -> None:
        """Ask the peers which hosts type, then publish queued screens, the newest per
        pane, one pane per transaction."""
        await ready.wait()
        await self._notify([(INPUT_CHANNEL, f"{self.me}:?")])
        while True:
            await self.wake.wait()
            self.wake.clear()
            while self.pending:
                pane_id, shown = self.pending.popitem()
                await self._publish(pane_id, shown.screen)

    async def _publish(self, pane_id: int, screen: Screen) -> None:
        body = json.dumps(msgspec.to_builtins(screen), ensure_ascii=True, separators=(",", ":"))
        if len(body) > CHUNK * MAX_CHUNKS:
            cut = {"lines": [], "answers": [], "error": "screen too large to relay"}
            small = msgspec.structs.replace(screen, **cut)
            body = json.dumps(msgspec.to_builtins(small), ensure_ascii=True)
        chunks = [body[i : i + CHUNK] for i in range(0, len(body), CHUNK)] or [""]
        self.seq += 1
        n = len(chunks)
        head = f"{self.me}:{pane_id}:{self.seq}"
        self.stats["screens_sent"] += 1
        await self._notify([(SCREEN_CHANNEL, f"{head}:{i}:{n}:{c}") for i, c in enumerate(chunks)])

    # --- answers ---------------------------------------------------------------------
    async def ask(
        self,
        who: Principal,
        pane_id: int,
        fingerprint: str,
        answer: str | None,
        text_: str | None,
        press: str | None = None,
        process: str | None = None,
        source: str | None = None,
    ) -> tuple[str, dict[str, Any]] | None:
        """B: have the replica holding the pane answer; None if none holds it or none
        replied."""
        target = self.core.collector_of(pane_id)
        if target is None or not await held_anywhere(self.core.engine, target[0]):
            self.stats["unheld"] += 1
            return None
        request = secrets.token_urlsafe(12)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.asks[request] = fut
        self.stats["asks"] += 1
        msg = {
            "o": self.me,
            "r": request,
            "p": pane_id,
            "fp": fingerprint,
            "a": answer,
            "x": text_,
            "k": press,
            "pid": process,
            "src": source,
            "w": {"kind": who.kind, "name": who.name[:128], "id": who.id},
        }
        try:
            await self._notify([(ASK_CHANNEL, json.dumps(msg, ensure_ascii=True))])
            try:
                reply = await asyncio.wait_for(fut, ASK_WAIT)
            except TimeoutError:
                return None
            return str(reply["outcome"]), {"id": reply.get("id")}
        finally:
            self.asks.pop(request, None)

    def _on_ask(self, _c: Any, _pid: int, _ch: str, payload: str) -> None:
        try:
            msg = json.loads(payload)
            if msg["o"] == self.me or not self.local(int(msg["p"])):
                return
        except (ValueError, KeyError, TypeError):
            return
        self._spawn(self._answer_for_peer(msg))

    async def _answer_for_peer(self, msg: dict[str, Any]) -> None:
        try:
            w = msg["w"]
            who = await self._principal(str(w["kind"]), str(w["name"]), int(w["id"]))
            outcome, row = await self.desk.answer(
                who,
                int(msg["p"]),
                str(msg["fp"]),
                msg.get("a"),
                msg.get("x"),
                relayed=True,
                press=msg.get("k"),
                process=msg.get("pid"),
                source=msg.get("src"),
            )
        except Exception as exc:
            log.warning("answer relayed from a peer failed: %s", exc)
            return
        reply = {"o": msg["o"], "r": str(msg["r"]), "outcome": outcome, "id": row.get("id")}
        await self._notify([(REPLY_CHANNEL, json.dumps(reply, ensure_ascii=True))])

    async def _principal(self, kind: str, name: str, vid: int) -> Principal:
        """The asker as the database says now: the operator role is read here again."""
        operator = False
        if kind == "viewer":
            async with self.core.engine.connect() as conn:
                v = s.viewers.c
                row = (await conn.execute(select(v.operator, v.name).where(v.id == vid))).first()
            operator = row is not None and bool(row.operator) and row.name == name
        return Principal(kind=kind, name=name, id=vid, readonly=False, operator=operator)

    def _on_reply(self, _c: Any, _pid: int, _ch: str, payload: str) -> None:
        try:
            msg = json.loads(payload)
            fut = self.asks.get(str(msg["r"])) if msg["o"] == self.me else None
        except (ValueError, KeyError, TypeError):
            return
        if fut is not None and not fut.done():
            fut.set_result(msg)
