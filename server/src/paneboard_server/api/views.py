"""The answers of the server's own read routes, as typed classes (the pane's own view,
shared with the stream, is the protocol's: `paneboard_protocol.views`).

Routes build these and answer them encoded as they are (`typed.answer`); their JSON
Schema is the OpenAPI document's (`typed.ok`), so `/openapi.json` says each field.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta
from paneboard_protocol.pane import KindName, Name, Source, State, Text
from paneboard_protocol.views import PaneView


class HostView(msgspec.Struct):
    """A host a collector watches: whether it is reachable, and the link's health as the
    collector measured it (kept in memory: null or 0 until the collector reports it)."""

    name: Name
    collector: Annotated[Name | None, Meta(description="the name of the collector token watching it")]
    reachable: bool
    error: Annotated[Text | None, Meta(description="why it is unreachable")]
    last_seen: Annotated[float | None, Meta(description="when its collector last heard of it")]
    unreachable_since: float | None
    rtt: Annotated[float | None, Meta(description="the link's round trip, in seconds")]
    reconnects: Annotated[int, Meta(description="how often the collector has reconnected to it")]
    contact: Annotated[float | None, Meta(description="when the collector last heard from the host")]


class HistoryEvent(msgspec.Struct):
    """One change of a pane's (agent, state, kind), as its history row keeps it."""

    id: int
    t: Annotated[float, Meta(description="when (seconds since the epoch)")]
    agent: Name | None
    state: State | None
    kind: KindName | None
    msg: Text | None
    source: Source | None
    prev_state: State | None
    reason: Annotated[str, Meta(description="what changed it: report, stale, seen, gone, ...")]


class PaneEvents(msgspec.Struct):
    """A page of a pane's state history, newest first (`before`: the last `id` of a page)."""

    pane_id: int
    events: list[HistoryEvent]


class SeenAnswer(msgspec.Struct):
    """The pane after the user looked, and whether that changed it (`done` to `idle`)."""

    pane: PaneView
    changed: bool


class Block(msgspec.Struct):
    """One interval of the ledger: a pane waiting on you (`blocked`) or done and not yet
    looked at, from `start_t` to `end_t` (null: still open; `waited` counts to now)."""

    id: int
    pane_id: Annotated[int | None, Meta(description="null once the pane's row is gone")]
    host: str
    tmux: str
    pane: str
    session: str | None
    agent: str | None
    state: str
    kind: str | None
    msg: str | None
    start_t: float
    end_t: float | None
    waited: Annotated[float, Meta(description="seconds, up to `end_t` or now")]
    ended: Annotated[str | None, Meta(description="how it ended")]
    end_state: str | None
    answered_by: Annotated[str | None, Meta(description="who answered it from paneboard")]


class Blocks(msgspec.Struct, kw_only=True):
    """The intervals that overlap the range (`from`, `to`), newest first, as of `now`."""

    start: float = msgspec.field(name="from")
    end: float = msgspec.field(name="to")
    now: float
    blocks: list[Block]


class Me(msgspec.Struct):
    """Who these credentials are, and what they may do."""

    name: str
    kind: Annotated[str, Meta(description="`viewer` (a login) or `viewer-token`")]
    readonly: Annotated[bool, Meta(description="may not change anything (a viewer token)")]
    csrf: Annotated[str | None, Meta(description="the header `X-CSRF-Token` a login's changes carry")]
    host: Annotated[
        str, Meta(description="this server's host name (a plain `tmux attach` for its own panes)")
    ]
    screens: Annotated[bool, Meta(description="may see panes' screens")]
    operator: Annotated[bool, Meta(description="may answer a pane's prompt")]


# --- the screen and answer routes (api/screens.py) ---------------------------------------
# These routes answer the dicts their services build (answers/screens.py, answers/offer.py,
# answers/desk.py), encoded as they are; the classes below are those dicts' shapes, so the
# document says each field (tests/server/test_api_views.py holds the dicts to them).


class ScreenChoice(msgspec.Struct):
    """One answer the prompt on screen takes: its id (`answer` of the answer route) and label."""

    id: str
    label: str


class ScreenView(msgspec.Struct, kw_only=True):
    """What a pane shows and the answers it takes. Without a screen yet (`pending`, or the
    collector offline: `error`) the screen's own fields, `state` to `rev` and
    `reply_end`, are absent."""

    pane_id: int
    lines: Annotated[list[str], Meta(description="the rows, SGR colour escapes kept; history above")]
    fingerprint: Annotated[str | None, Meta(description="the prompt an answer is typed under")]
    answers: list[ScreenChoice]
    text: Annotated[bool, Meta(description="free text may be typed")]
    input: Annotated[bool, Meta(description="this host's collector types answers")]
    follow_up: Annotated[bool, Meta(description="an idle agent at its input prompt takes a follow-up")]
    process: Annotated[str | None, Meta(description="the pid of the agent in front (Escape and C-c)")]
    state: State | None = None
    prompt: Text | None = None
    width: int = 0
    height: int = 0
    cursor: Annotated[list[int], Meta(description="[x, y] in the visible rows")] = []
    t: Annotated[float, Meta(description="when the collector captured it")] = 0.0
    received: Annotated[float, Meta(description="when the server received it")] = 0.0
    rev: Annotated[int, Meta(description="+1 per screen the server received (`since`)")] = 0
    online: Annotated[bool, Meta(description="the pane's collector is connected")]
    pending: Annotated[bool, Meta(description="a first screen is still awaited")]
    error: Annotated[str | None, Meta(description="why there is no screen")]
    reply_end: Annotated[int | None, Meta(description="the row where the agent's last reply ends")] = None
    operator: Annotated[bool, Meta(description="this viewer may answer")]


class CardOffer(msgspec.Struct):
    """What a blocked pane's card offers to answer, or why it offers nothing (`why`)."""

    pane_id: int
    fingerprint: str | None
    answers: list[ScreenChoice]
    text: bool
    prompt: str | None
    why: Annotated[
        Literal["not-blocked", "disabled", "offline", "pending", "no-screen", "not-recognised"] | None,
        Meta(description="null where it offers answers or text"),
    ]


class Offers(msgspec.Struct):
    """The cards' offers, one per known pane asked about."""

    offers: list[CardOffer]
    operator: Annotated[bool, Meta(description="this viewer may answer")]


class AnswerOutcome(msgspec.Struct):
    """What became of an answer (`id`: its row in the audit, null where none was written)."""

    outcome: str
    id: int | None


class AnswerAttempt(msgspec.Struct):
    """One answer attempt, as the audit keeps it; `prompt`, `label` and `text` are null
    for a viewer without screen rights (they are screen contents)."""

    id: int
    t: float
    who: str
    fingerprint: str
    prompt: str | None
    answer: str | None
    label: str | None
    text: str | None
    outcome: str
    count: Annotated[int, Meta(description="refusals this row stands for (a burst is one row)")]
    done_at: float | None
    source: Annotated[str | None, Meta(description="the client address the server saw")]


class AnswerAudit(msgspec.Struct):
    """A page of a pane's answer attempts, newest first."""

    pane_id: int
    answers: list[AnswerAttempt]


# --- the stats page (api/stats.py; its figures are ledger/stats.py's `body`) -------------


class StatsFilters(msgspec.Struct):
    host: str | None
    agent: str | None
    kind: str | None


class StatsTotals(msgspec.Struct):
    count: int
    waited: Annotated[float, Meta(description="seconds")]
    open: Annotated[int, Meta(description="still waiting")]
    answered: int
    ended: Annotated[dict[str, int], Meta(description="how the waits ended, by how many")]


class StatsSeries(msgspec.Struct):
    name: str
    values: Annotated[list[float], Meta(description="seconds waited, one per day")]


class StatsPerDay(msgspec.Struct):
    days: Annotated[list[str], Meta(description="YYYY-MM-DD, local to `tz`")]
    series: list[StatsSeries]


class AnswerTimes(msgspec.Struct):
    """How long answers took (seconds) in one group."""

    name: str
    count: int
    p50: float
    p90: float
    max: float


class TimeToAnswer(msgspec.Struct):
    agent: list[AnswerTimes]
    host: list[AnswerTimes]
    kind: list[AnswerTimes]


class StatsPane(msgspec.Struct):
    host: str
    tmux: str
    pane: str
    session: str | None
    agent: str | None
    count: int
    waited: float


class StatsPrompt(msgspec.Struct):
    kind: str | None
    text: Annotated[str, Meta(description="the prompt, numbers and paths normalised")]
    example: str
    count: int
    waited: float


class StatsOptions(msgspec.Struct):
    """The hosts and agents that waited in the range, for the page's filters."""

    hosts: list[str]
    agents: list[str]


class Stats(msgspec.Struct, kw_only=True):
    """Every figure of the stats page for the range (`from`, `to`), as of `now`."""

    start: float = msgspec.field(name="from")
    end: float = msgspec.field(name="to")
    now: float
    state: Literal["blocked", "done"]
    by: Literal["agent", "host"]
    tz: Annotated[int, Meta(description="minutes east of UTC")]
    filters: StatsFilters
    totals: StatsTotals
    per_day: StatsPerDay
    time_to_answer: TimeToAnswer
    panes: list[StatsPane]
    prompts: list[StatsPrompt]
    options: StatsOptions


# --- notifications (api/notify.py) -------------------------------------------------------


class VapidKey(msgspec.Struct):
    key: Annotated[str, Meta(description="the server's VAPID public key, base64url")]


class PushDevice(msgspec.Struct):
    """One push device of this account: its push service's host, never its endpoint."""

    id: int
    service: str
    device: str | None
    created_at: float
    last_ok: float | None
    last_fail: float | None
    last_error: str | None


class PushDevices(msgspec.Struct):
    devices: list[PushDevice]


class LogEntry(msgspec.Struct):
    """One notification sent: where (`channel`), about what, and why (`reason`)."""

    id: int
    pane_id: int | None
    channel: str
    state: str | None
    t: float
    ok: bool
    detail: str | None
    reason: str | None
    wait_id: int | None


class NotifyLog(msgspec.Struct):
    entries: list[LogEntry]


class Until(msgspec.Struct):
    until: Annotated[float | None, Meta(description="null: until switched off")]


class QuietMute(msgspec.Struct):
    id: int
    scope: str
    value: str
    until: float | None
    audience: Literal["everyone", "me"]


class QuietHoursView(msgspec.Struct):
    start: Annotated[str, Meta(description="HH:MM")]
    end: Annotated[str, Meta(description="HH:MM")]
    tz: str | None


class Quiet(msgspec.Struct):
    """What silences notifications now: do-not-disturb (this viewer's, everyone's, or
    either: `dnd`), mutes, quiet hours; and the channels there are."""

    dnd: Until | None
    dnd_everyone: Until | None
    dnd_mine: Until | None
    operator: bool
    mutes: list[QuietMute]
    quiet_hours: QuietHoursView | None
    channels: list[str]
    push_done: bool


class MuteAdded(msgspec.Struct):
    id: int


class DeviceTested(msgspec.Struct):
    id: int
    outcome: str
    ok: bool


class NotifyTested(msgspec.Struct):
    """The test notification: channels it reached or not, pushes sent, and per device."""

    sent: int
    failed: int
    push: int
    devices: list[DeviceTested]


class LoggedOut(msgspec.Struct):
    ok: bool
