"""What a Web Push for a blocked pane offers to answer from the notification itself.

A pane no page watches has no screen on the server (`ScreenHub` keeps screens of
watched panes only), so the server asks for one: when a pane becomes blocked on a host
whose collector types answers and some operator has a push device, `prepare` watches
the pane as a page would (the collector captures at once; the watch runs out after
`WATCH_FOR` seconds like any other). By the time the push goes out (after the
notifier's group window) the screen is there, and `offer` reads from it the prompt's
fingerprint and the answers for the notification's buttons. No fresh blocked screen
with answers within `OFFER_WAIT` seconds: no offer, the push carries "Open" only.

Buttons on a lock screen are tapped without the prompt in view, so the answers that
change the program's standing permissions ("always", "never": "Yes, and don't ask
again") are never offered there; the first two others are (Yes / No for every bundled
prompt). For the same reason a push says what it answers as the prompt draws it: its
body is the question the screen asks, and a button that selects a numbered choice
reads as that choice's number and text ("1. Drop the production database"), both read
by the collector from the choice's own line (`paneboard_protocol.choices`). The offer
is only what the push shows: the answer itself goes through
`POST /api/panes/{id}/answer` and every check of `desk.py`, on a fresh capture.

A blocked card on the board offers the same answers by the same rule (`card`,
`GET /api/offers`): its second tap is a confirmation, not the prompt in view, so what
the lock screen never offers the card does not either. Where a card offers nothing,
`card` says why in a word the page turns into a sentence (`disabled`: no
`--allow-input` on that host; `not-recognised`: no manifest rule reads an answer off
this prompt and it takes no text; `offline`, `pending`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from paneboard_protocol.wire import AnswerChoice

from .screens import ScreenHub

#: seconds `offer` waits for the pane's blocked screen to arrive
OFFER_WAIT = 2.0
#: answer ids a notification never offers: they change what the program asks later
STANDING = frozenset({"always", "never"})
#: answers a notification carries (Chromium shows two action buttons; "Open" is third)
OFFERED_MAX = 2
#: characters of the prompt a notification's body carries (`web/sw.js` shows 500)
PROMPT_MAX = 500


@dataclass(frozen=True, slots=True)
class Offer:
    fingerprint: str
    answers: tuple[tuple[str, str], ...]  # (id, label as the screen draws it)
    prompt: str | None = None  # the question the screen asks, read by the collector

    def to_json(self) -> dict[str, Any]:
        return {
            "fingerprint": self.fingerprint,
            "answers": [{"id": i, "label": label[:60]} for i, label in self.answers],
        }


def pick(answers: Sequence[AnswerChoice]) -> tuple[tuple[str, str], ...]:
    """The answers a notification offers: the first two that are not standing ones,
    each `(id, label)`, the label with its choice's number where its keys select a
    numbered choice (a collector from before `option` sends the label alone)."""
    kept = [a for a in answers if a.id not in STANDING][:OFFERED_MAX]
    return tuple((a.id, a.label if a.option is None else f"{a.option}. {a.label}") for a in kept)


class Offers:
    """Fetches and reads the screens that blocked panes' pushes offer answers from."""

    def __init__(self, core: Any, hub: ScreenHub, wait: float = OFFER_WAIT) -> None:
        self.core = core
        self.hub = hub
        self.wait = wait

    def _takes_answers(self, pane_id: int) -> bool:
        p = self.core.panes.get(pane_id)
        h = self.core.hosts.get(p.host_id) if p is not None else None
        return h is not None and h.name in self.core.input_hosts.get(h.collector_id, ())

    def prepare(self, pane_id: str) -> None:
        """A pane just became blocked: have its collector capture it now (a watch), so
        its screen is at hand when the push is sent. Never blocks."""
        pid = _int(pane_id)
        if pid is not None and self._takes_answers(pid):
            self.hub.look(pid)

    async def offer(self, pane_id: str, after: float = 0.0) -> Offer | None:
        """The blocked prompt's fingerprint and the answers to offer, from a screen of
        the pane that says blocked and arrived at or after `after` (server time: when
        the pane was last committed not blocked, so never the screen of an earlier
        block); None if none arrives within `wait` seconds."""
        pid = _int(pane_id)
        if pid is None or not self._takes_answers(pid):
            return None
        self.hub.look(pid)  # keeps (or starts) the watch
        deadline = time.monotonic() + self.wait
        since: int | None = None
        while True:
            shown = self.hub.latest.get(pid)
            if shown is not None:
                sc = shown.screen
                pane = self.core.panes.get(pid)
                fresh = shown.received >= after
                if fresh and sc.state == "blocked" and sc.input and sc.fingerprint and pane is not None:
                    if pane.state != "blocked":
                        return None
                    answers = pick(sc.answers)
                    prompt = sc.prompt[:PROMPT_MAX] if sc.prompt else None
                    return Offer(sc.fingerprint, answers, prompt) if answers else None
                since = shown.rev
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            await self.hub.wait(pid, None, left, since if since is not None else -1)


#: why a blocked card offers no answer (`card`)
WHY = ("disabled", "not-recognised", "offline", "pending", "not-blocked", "no-screen")


def card(core: Any, hub: ScreenHub, pane_id: int) -> dict[str, Any]:
    """What a blocked pane's card offers now: `{pane_id, fingerprint, answers, text,
    prompt, why}` from the pane's latest screen, by the push's rule (`pick`); `why`
    is None where it offers answers or text. Keeps (or starts) the pane's watch, as a
    page looking at it would, so the screen stays fresh while the board shows it."""
    out: dict[str, Any] = {
        "pane_id": pane_id,
        "fingerprint": None,
        "answers": [],
        "text": False,
        "prompt": None,
        "why": None,
    }
    pane = core.panes.get(pane_id)
    host = core.hosts.get(pane.host_id) if pane is not None else None
    if pane is None or pane.state != "blocked":
        out["why"] = "not-blocked"
    elif host is None or host.name not in core.input_hosts.get(host.collector_id, ()):
        out["why"] = "disabled"
    elif not hub.look(pane_id):
        out["why"] = "offline"
    elif (shown := hub.latest.get(pane_id)) is None:
        out["why"] = "pending"
    else:
        sc = shown.screen
        answers = pick(sc.answers)
        if sc.error:
            out["why"] = "no-screen"
        elif not sc.input:
            out["why"] = "disabled"
        elif sc.state != "blocked" or not sc.fingerprint:
            out["why"] = "pending"  # the screen is behind the pane's state: the next one says
        elif not answers and not sc.text:
            out["why"] = "not-recognised"
        else:
            out.update(
                fingerprint=sc.fingerprint,
                answers=[{"id": i, "label": label[:60]} for i, label in answers],
                text=sc.text,
                prompt=sc.prompt[:PROMPT_MAX] if sc.prompt else None,
            )
    return out


def _int(pane_id: str) -> int | None:
    try:
        return int(pane_id)
    except ValueError:
        return None
