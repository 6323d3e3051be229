"""The screen and answer API (docs/answers.md, docs/server.md).

    GET  /api/panes/{id}/screen[?after=FINGERPRINT&wait=S]   the pane's screen, long-polled
    POST /api/panes/{id}/answer   {"fingerprint", "answer" | "text" | "press"[, "process"]}  -> {"outcome"}
    GET  /api/panes/{id}/answers  the audit of answer attempts, newest first
    GET  /api/offers?pane=ID&pane=ID  what blocked cards offer to answer on the board

Who: a screen needs a login or a viewer token created with `--screens`; an answer needs
a login with the operator role, with the CSRF token and a same-origin request
(`writer_refusal`); viewer tokens never answer. Every refused attempt is audited too.
Without screen rights the audit shows no prompt, label or text (screen contents).
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query, Request, Response
from paneboard_protocol import wire as pwire
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..answers import audit, card_offer, screen_json
from ..auth import Principal
from ..panes import Pane
from ..services import Services, Svc
from .access import require_viewer, writer_refusal
from .errors import ID_MAX, READ, WRITE, responses
from .typed import answer as encoded
from .typed import ok
from .views import AnswerAudit, AnswerOutcome, Offers, ScreenView

Viewer = Annotated[Principal, Depends(require_viewer)]
SCROLLBACK_MAX = 300  # lines of history a page may ask for (the wire carries 500 in all)
FIRST_WAIT = 3.0  # a page's first request waits this long for the collector's first capture
OFFERS_MAX = 64  # blocked cards one request asks about


# What `text` may hold: no control characters (C0, DEL, C1) but newlines, which only a
# follow-up takes (one submission, pasted); ESC above all is never typed from text.
_TYPED = r"^[^\x00-\x09\x0b-\x1f\x7f-\x9f]+$"


class AnswerIn(BaseModel):
    """Exactly one of `answer` (an offered answer's id), `text` (typed as is: a blocked
    question's answer, or an idle agent's follow-up) or `press` (one key of the
    allow-list; Escape and C-c name the `process` the screen showed in front)."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {
                    "required": ["answer"],
                    "properties": {"answer": {"type": "string"}, "text": {"type": "null"}},
                },
                {
                    "required": ["text"],
                    "properties": {"text": {"type": "string"}, "answer": {"type": "null"}},
                },
                {
                    "required": ["press"],
                    "properties": {"press": {"type": "string"}, "answer": {"type": "null"}},
                },
            ]
        }
    )
    fingerprint: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    answer: Annotated[str | None, Field(max_length=pwire.ANSWER_ID_MAX, pattern=r"^[a-z0-9_-]+$")] = None
    # The pattern is stated in the schema; `one_of` checks it, with a sentence for a person.
    text: Annotated[
        str | None,
        Field(min_length=1, max_length=pwire.ANSWER_TEXT_MAX, json_schema_extra={"pattern": _TYPED}),
    ] = None
    press: pwire.Press | None = None
    process: Annotated[str | None, Field(max_length=20, pattern=r"^[0-9]+$")] = None

    @model_validator(mode="after")
    def one_of(self) -> AnswerIn:
        if sum(x is not None for x in (self.answer, self.text, self.press)) != 1:
            raise ValueError("give exactly one of answer, text or press")
        if self.text is not None and any(
            (ord(c) < 32 and c != "\n") or 127 <= ord(c) < 160 for c in self.text
        ):
            raise ValueError("text: control characters (but a follow-up's newlines) are not typed")
        if self.press in pwire.INTERRUPTS and self.process is None:
            raise ValueError(f"press {self.press}: give the process the screen showed in front")
        return self


def _live_pane(svc: Services, pane_id: int) -> Pane:
    p = svc.core.panes.get(pane_id)
    if p is None or p.gone_at is not None:
        raise HTTPException(404, "no such pane")
    return p


def make_router() -> APIRouter:
    r = APIRouter()

    @r.get(
        "/api/panes/{pane_id}/screen",
        summary="What the pane shows, and the answers it takes",
        responses={
            **ok(ScreenView, "The pane's screen"),
            **responses(*READ, 403, 404, e403="This viewer token does not show screens"),
        },
    )
    async def screen(
        svc: Svc,
        pane_id: int,
        who: Viewer,
        after: Annotated[str | None, Query(max_length=64)] = None,
        wait: Annotated[float, Query(ge=0, le=25)] = 0,
        scrollback: Annotated[int, Query(ge=0, le=SCROLLBACK_MAX)] = 0,
        since: Annotated[int | None, Query(ge=0, le=ID_MAX)] = None,
    ) -> Response:
        if not who.screens:
            raise HTTPException(403, "this viewer token does not show screens (create one with --screens)")
        _live_pane(svc, pane_id)
        hub = svc.screens
        online = hub.look(pane_id, scrollback)
        first = pane_id not in hub.latest
        shown = await hub.wait(pane_id, after, max(wait, FIRST_WAIT if first and online else 0), since)
        pane = svc.core.panes.get(pane_id)
        out = screen_json(shown, pane_id, hub.online(pane_id), scrollback, pane.agent if pane else None)
        out["operator"] = who.operator
        return encoded(out)

    @r.get(
        "/api/offers",
        summary="What blocked cards offer to answer on the board, or why not",
        responses={
            **ok(Offers, "Each pane's offer"),
            **responses(*READ, 403, e403="This viewer token does not show screens"),
        },
    )
    async def offers(
        svc: Svc,
        who: Viewer,
        pane: Annotated[list[Annotated[int, Field(ge=0, le=ID_MAX)]], Query(max_length=OFFERS_MAX)],
    ) -> Response:
        """Each pane's offer by the push's rule (`answers/offer.py`, `card`); a pane
        with no screen yet is watched and waited for (at most `FIRST_WAIT` s)."""
        if not who.screens:
            raise HTTPException(403, "this viewer token does not show screens (create one with --screens)")
        ids = [i for i in dict.fromkeys(pane) if i in svc.core.panes]
        hub = svc.screens
        got = {i: card_offer(svc.core, hub, i) for i in ids}
        first = [i for i, o in got.items() if o["why"] == "pending" and i not in hub.latest]
        if first:
            await asyncio.wait([asyncio.ensure_future(hub.wait(i, None, FIRST_WAIT)) for i in first])
            got.update({i: card_offer(svc.core, hub, i) for i in first})
        return encoded({"offers": list(got.values()), "operator": who.operator})

    @r.post(
        "/api/panes/{pane_id}/answer",
        summary="Answer the pane's prompt (operators only)",
        responses={
            **ok(AnswerOutcome, "What became of the answer"),
            **responses(
                *WRITE,
                404,
                e403="Read-only credentials, no or a wrong CSRF header, a cross-origin request, or no "
                "operator role (every refusal is audited)",
            ),
        },
    )
    async def answer(request: Request, svc: Svc, pane_id: int, body: AnswerIn, who: Viewer) -> Response:
        _live_pane(svc, pane_id)
        desk = svc.answers
        # Refused credentials (a viewer token, a cross-origin POST, no or a wrong CSRF
        # token) are attempts too: audited with who and why, then refused.
        refused = writer_refusal(request, who)
        source = request.client.host if request.client else None  # through trusted proxies
        fp, answer, text, press, process = body.fingerprint, body.answer, body.text, body.press, body.process
        if refused is not None:
            await desk.answer(who, pane_id, fp, answer, text, refuse=refused[0], press=press, source=source)
            raise HTTPException(403, refused[1])
        outcome, row = await desk.answer(
            who, pane_id, fp, answer, text, press=press, process=process, source=source
        )
        if outcome == "forbidden":
            raise HTTPException(403, "answering needs the operator role (paneboard user grant NAME operator)")
        return encoded(AnswerOutcome(outcome, row.get("id")))

    @r.get(
        "/api/panes/{pane_id}/answers",
        summary="Every answer attempt on this pane, newest first",
        responses={**ok(AnswerAudit, "The attempts, newest first"), **responses(*READ, 404)},
    )
    async def answers(
        svc: Svc,
        pane_id: int,
        who: Viewer,
        limit: Annotated[int, Query(ge=1, le=500)] = 100,
        before: Annotated[int | None, Query(ge=1, le=ID_MAX)] = None,
    ) -> Response:
        if pane_id not in svc.core.panes:
            raise HTTPException(404, "no such pane")
        rows = await audit(svc.core, pane_id, limit, before)
        if not who.screens:  # the prompt, the answers' labels, the text typed: screen contents
            for row in rows:
                row["prompt"] = row["label"] = row["text"] = None
        return encoded({"pane_id": pane_id, "answers": rows})

    return r
