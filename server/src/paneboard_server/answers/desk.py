"""Answering a pane from the board: the server's checks, the relay, the audit.

`POST /api/panes/{id}/answer` reaches `AnswerDesk.answer` only for an operator (a
logged-in account with the role, CSRF token and Origin checked: `api_screens`). An
attempt is one of three kinds (docs/answers.md): a declared answer or a blocked
question's text, a follow-up (text to an idle or done agent), or one key
(`wire.PRESSES`). Here: the screen the operator was shown must be the pane's latest
(`changed` otherwise; for Escape and C-c, the program in front must be the one the
operator saw, whatever the screen), its collector must say it types (`disabled`), the
pane must be in a state its kind takes (`not-blocked`: blocked for an answer, idle or
done for a follow-up), the screen must take it (`refused`: an answer it offers, text
where it takes text, a follow-up where it takes one, a key only into a program a
manifest identifies), and nobody may have answered that screen already (`used`: two
operators on one prompt, one is typed, the other is told; a replay likewise). Only
then is `answer` sent to the collector, with an expiry (`answer_ttl`, 60 s); the
collector checks it all again on a fresh capture before it types, and its outcome is
what the operator gets (`offline` if it is not connected or does not reply in time).

An answer for a pane no page is watching (tapped in a push notification) finds no
screen here: the pane is watched at once and the answer checked against the screen
its collector then sends (at most `FRESH_WAIT` s; none: `changed`).

Every attempt, typed or not, is in the `answers` table: who, when, which pane, the
fingerprint and prompt text, the answer, the outcome. A refusal of the credential
itself (read-only, cross-origin, no CSRF token, no operator role) repeated by the same
credential on the same pane within `BURST` seconds of the burst's first is counted in
that first row (`count`, `done_at` its last), so a read-only credential cannot push
other attempts off the pane's audit page; every other attempt is a row of its own.
Retention removes rows by age with the history.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from typing import Any, cast

from paneboard_protocol import wire as pwire
from paneboard_protocol.pane import PaneKey
from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError

from ..auth import Principal
from ..ledger import mark_answered
from ..panes import Core
from ..store import schema as s
from .screens import ScreenHub

log = logging.getLogger("paneboard.answers")

ANSWER_TTL = 60.0  # seconds an answer may wait to be typed
REPLY_WAIT = 15.0  # how long the server waits for the collector's outcome
FRESH_WAIT = 3.0  # an answer to an unwatched pane waits this long for its first screen
CLAIMS_MAX = 10000
#: Outcomes decided by the credential alone, before any check of the pane or screen:
#: anyone holding a read-only credential can repeat them at will.
REFUSALS = frozenset({"read-only", "cross-origin", "csrf", "forbidden"})
BURST = 60.0  # seconds a burst of one refusal lasts from its first
BURSTS_MAX = 10000  # bursts remembered at once


class _Burst:
    """One row standing for a burst of refusals: its id once inserted, when it began."""

    __slots__ = ("id", "inserted", "start")

    def __init__(self, start: float) -> None:
        self.start = start
        self.id: int | None = None
        self.inserted = asyncio.Event()


class AnswerDesk:
    def __init__(self, core: Core, hub: ScreenHub, ttl: float = ANSWER_TTL) -> None:
        self.core = core
        self.hub = hub
        self.ttl = ttl
        # (pane id, fingerprint) -> who answered it (in flight or typed): single use
        self.claims: dict[tuple[int, str], str] = {}
        self.remote: Any = None  # replicas.Replicas on PostgreSQL: panes held by a peer
        # PostgreSQL: a screen answered `typed` by any process (the collector may have
        # moved from one replica to another) is used, as the audit table says
        self.durable_claims = False
        # (credential kind, credential id, pane id, outcome) -> the burst's row
        self.bursts: dict[tuple[str, int, int, str], _Burst] = {}

    async def answer(
        self,
        who: Principal,
        pane_id: int,
        fingerprint: str,
        answer: str | None,
        text: str | None,
        relayed: bool = False,
        refuse: str | None = None,
        press: str | None = None,
        process: str | None = None,
        source: str | None = None,
    ) -> tuple[str, dict[str, Any]]:
        """The outcome, and the audit row written for it. A pane whose collector is
        connected to a peer replica is answered there (`replicas.py`: one process
        decides the claim); `relayed`: this is that peer's request. `refuse`: the
        request was refused before any check here (its credentials: `read-only`,
        `cross-origin`, `csrf`); only its audit row is written, that outcome in it.
        `source`: the client's address, for the audit."""
        if self.remote is not None and who.operator and not relayed and refuse is None:
            target = self.core.collector_of(pane_id)
            if target is not None and target[0] not in self.core.seen_routes:
                got = await self.remote.ask(who, pane_id, fingerprint, answer, text, press, process, source)
                if got is not None:
                    return cast(tuple[str, dict[str, Any]], got)
        asked_at = self.core.clock()
        shown = self.hub.latest.get(pane_id)
        if shown is None and refuse is None and who.operator and self._local(pane_id):
            # No page watches the pane (an answer tapped in a notification): ask its
            # collector for the screen now, and check the answer against that.
            self.hub.look(pane_id)
            shown = await self.hub.wait(pane_id, None, FRESH_WAIT)
        sc = shown.screen if shown is not None else None
        label = None
        if sc is not None and answer is not None:
            label = next((a.label for a in sc.answers if a.id == answer), None)
        pane = self.core.panes.get(pane_id)
        target = self.core.collector_of(pane_id)
        send = self.core.seen_routes.get(target[0]) if target is not None else None
        prompt = sc.prompt if sc is not None else None
        claim = (pane_id, fingerprint)
        if refuse is not None:
            outcome = refuse
        elif not who.operator:
            outcome = "forbidden"
        elif target is None or send is None:
            outcome = "offline"
        elif sc is None or not _same(sc, fingerprint, press, process):
            outcome = "changed"
        elif not sc.input:
            outcome = "disabled"
        elif pane is None or not _state_takes(pane.state, sc, answer, text, press):
            outcome = "not-blocked"
        elif not _takes(sc, label, answer, text, press, process):
            outcome = "refused"
        elif claim in self.claims or (self.durable_claims and await self._typed_before(claim)):
            outcome = "used"
        else:
            kind = {"press": press, "process": process} if press is not None else {}
            outcome, said = await self._relay(claim, who, send, target[1], fingerprint, answer, text, **kind)
            if outcome != "typed":
                self.claims.pop(claim, None)
            prompt = said or prompt
        key = target[1] if target is not None else None
        now = self.core.clock()
        row: dict[str, Any] = {
            "t": now,
            "pane_id": pane_id if pane is not None else None,
            "host": key.host if key is not None else "?",
            "tmux": key.tmux if key is not None else "?",
            "pane": key.pane if key is not None else "?",
            "viewer_id": who.id if who.kind == "viewer" else None,
            "who": who.name[:128],
            "fingerprint": fingerprint,
            "prompt": prompt,
            "answer": answer,
            "label": label if press is None else f"key {press}"[:128],
            "text": text,
            "outcome": outcome,
            "done_at": self.core.clock(),
            "source": source[:64] if source else None,
        }
        burst, first = None, False
        if outcome in REFUSALS:
            burst, first = self._burst((who.kind, who.id, pane_id, outcome), now)
            if not first and (counted := await self._count(burst, now)) is not None:
                row["id"] = counted
                log.debug("answer by %s to pane %s: %s (counted in its burst)", who.name, pane_id, outcome)
                return outcome, row
        try:  # a row of its own (the first of a burst, or one whose burst has no row)
            row["id"] = await self._audit(row, asked_at)
        finally:
            if burst is not None and first:
                burst.id = row.get("id")
                burst.inserted.set()
        log.info("answer by %s to pane %s: %s", who.name, pane_id, outcome)
        return outcome, row

    async def _audit(self, row: dict[str, Any], asked_at: float) -> int | None:
        try:
            return await self._insert(row, asked_at)
        except IntegrityError:  # the login or the pane row went meanwhile: keep the record
            return await self._insert({**row, "viewer_id": None, "pane_id": None})

    def _burst(self, key: tuple[str, int, int, str], now: float) -> tuple[_Burst, bool]:
        """The burst this refusal belongs to, and whether it is its first (taken before
        any await, so refusals arriving together share one row)."""
        burst = self.bursts.get(key)
        if burst is not None and 0 <= now - burst.start < BURST:
            return burst, False
        if len(self.bursts) >= BURSTS_MAX:
            self.bursts = {k: b for k, b in self.bursts.items() if 0 <= now - b.start < BURST}
            if len(self.bursts) >= BURSTS_MAX:
                self.bursts.clear()
        burst = self.bursts[key] = _Burst(now)
        return burst, True

    async def _count(self, burst: _Burst, now: float) -> int | None:
        """One more refusal in `burst`'s row (once the row is in)."""
        await burst.inserted.wait()
        if burst.id is None:  # its insert failed: this refusal gets a row of its own
            return None
        a = s.answers.c
        async with self.core.engine.begin() as conn:
            await conn.execute(
                update(s.answers).where(a.id == burst.id).values(count=a.count + 1, done_at=now)
            )
        return burst.id

    def _local(self, pane_id: int) -> bool:
        target = self.core.collector_of(pane_id)
        return target is not None and target[0] in self.core.seen_routes

    async def _typed_before(self, claim: tuple[int, str]) -> bool:
        a = s.answers.c
        q = select(a.id).where(a.pane_id == claim[0], a.fingerprint == claim[1], a.outcome == "typed")
        async with self.core.engine.connect() as conn:
            return (await conn.execute(q.limit(1))).first() is not None

    async def _insert(self, row: dict[str, Any], asked_at: float | None = None) -> int | None:
        async with self.core.engine.begin() as conn:
            res = await conn.execute(insert(s.answers).values(**{k: v for k, v in row.items() if k != "id"}))
            if row["outcome"] == "typed" and row["pane_id"] is not None and asked_at is not None:
                # the ledger's block says who answered it (its time-to-answer is ours)
                await mark_answered(conn, row["pane_id"], row["who"], at=asked_at)
        return res.inserted_primary_key[0] if res.inserted_primary_key else None

    async def _relay(
        self,
        claim: tuple[int, str],
        who: Principal,
        send: Any,
        key: PaneKey,
        fingerprint: str,
        answer: str | None,
        text: str | None,
        press: str | None = None,
        process: str | None = None,
    ) -> tuple[str, str | None]:
        """Send the answer, wait for the collector's outcome (and the prompt it read)."""
        if len(self.claims) >= CLAIMS_MAX:
            self.claims.clear()
        self.claims[claim] = who.name
        request = secrets.token_urlsafe(12)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.hub.replies[request] = fut
        try:
            expires = time.time() + self.ttl
            send(
                pwire.answer(
                    request,
                    key,
                    fingerprint,
                    expires,
                    answer=answer,
                    text=text,
                    press=cast(pwire.Press, press),
                    process=process,
                )
            )
            try:
                reply = await asyncio.wait_for(fut, min(REPLY_WAIT, self.ttl + 1))
            except TimeoutError:
                return "offline", None
            return str(reply.outcome), reply.prompt
        finally:
            self.hub.replies.pop(request, None)


def _same(sc: pwire.Screen, fingerprint: str, press: str | None, process: str | None) -> bool:
    """Is the pane's latest screen the one the operator acted on? For Escape and C-c:
    the same identified program is in front (a working turn redraws its screen all the
    time, and stopping it is what they are for); for everything else, the fingerprint."""
    if press in pwire.INTERRUPTS:
        return process is not None and sc.process == process
    return sc.fingerprint == fingerprint


def _state_takes(
    state: str | None, sc: pwire.Screen, answer: str | None, text: str | None, press: str | None
) -> bool:
    """A key in any state; a declared answer while blocked; text while blocked (a
    question's answer) or while idle or done (a follow-up). Both the pane's committed
    state and the screen's must agree."""
    if press is not None:
        return True
    if answer is not None:
        return state == "blocked" and sc.state == "blocked"
    return state == sc.state and state in ("blocked", "idle", "done")


def _takes(
    sc: pwire.Screen,
    label: str | None,
    answer: str | None,
    text: str | None,
    press: str | None,
    process: str | None,
) -> bool:
    """Does this screen take the attempt: an answer it offers, text where it takes text
    (one line to a blocked question, any lines as a follow-up), a key of the allow-list
    into a program a manifest identifies?"""
    if answer is not None:
        return label is not None
    if press is not None:
        return press in pwire.PRESSES and sc.process is not None
    if text is None:
        return False
    if sc.state == "blocked":
        return sc.text and "\n" not in text
    return sc.follow_up


AUDIT_KEYS = (
    "id",
    "t",
    "who",
    "fingerprint",
    "prompt",
    "answer",
    "label",
    "text",
    "outcome",
    "count",
    "done_at",
    "source",
)


async def audit(
    core: Core, pane_id: int, limit: int = 100, before: int | None = None
) -> list[dict[str, Any]]:
    """`GET /api/panes/{id}/answers`: the pane's answer attempts, newest first."""
    q = s.pane_page(s.answers, pane_id, limit, before)
    async with core.engine.connect() as conn:
        rows = (await conn.execute(q)).all()
    return [{k: r._mapping[k] for k in AUDIT_KEYS} for r in rows]
