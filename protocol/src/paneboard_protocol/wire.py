"""The ingest uplink's messages (`WS /api/ingest`), defined once for both ends.

Every message, in both directions, is a typed class here (a msgspec Struct tagged by its
`type`), with its limits as `msgspec.Meta` in its annotations. The sender builds and
encodes these very objects; the receiver decodes a frame straight into them, every type
and bound checked while the JSON is parsed: the server in `paneboard_server.ingest.wire`,
the collector in `server_messages.read_server`. `docs/wire.md` is held to these
definitions by a test.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

import msgspec
from msgspec import Meta, Struct

from paneboard_protocol.pane import (
    INT_MAX,
    NAME_MAX,
    PANE_ID_MAX,
    KeyName,
    PaneKey,
    PaneUpdate,
    State,
    Text,
    Time,
)

PROTOCOL = 1
# The uplink's own limits (a pane's are in `pane.py`); the columns they are stored in are
# at least as wide (`collectors.stream`, `collectors.version`).
STREAM_MAX = 64  # a collector's stream id
VERSION_MAX = 64
HOSTS_MAX = 1000  # hosts named in a hello or a snapshot
RTT_MAX = 600  # seconds: a host's round trip; a link slower than this is down
PANE_ID_LEN = PANE_ID_MAX
HOST_NAME_LEN = NAME_MAX

Seq = Annotated[int, Meta(ge=0, le=INT_MAX)]
Count = Annotated[int, Meta(ge=0, le=INT_MAX)]
#: a round trip the collector measured to a host, seconds (a link slower than this is down)
Rtt = Annotated[float, Meta(ge=0, le=RTT_MAX)]


class _Msg(Struct, frozen=True, tag_field="type"):
    """A message, either way: its class is its `type` (the tag); fields the receiver does
    not know are ignored (a newer peer may send more)."""


class _Op(Struct, frozen=True, tag_field="op"):
    """One change inside a delta, tagged by `op`."""


class HostState(Struct, frozen=True):
    reachable: bool
    error: Text | None = None
    # the link's health as the collector measured it (older collectors omit it)
    rtt: Rtt | None = None  # seconds, a read command's round trip to the host's tmux
    reconnects: Count = 0  # links lost and made again since the collector started
    contact: Time | None = None  # when the host last answered (epoch seconds)


# --- collector → server ----------------------------------------------------------------
class Hello(_Msg, frozen=True, tag="hello"):
    stream: Annotated[str, Meta(min_length=1, max_length=STREAM_MAX)]
    protocol: Annotated[int, Meta(ge=0, le=INT_MAX)] = PROTOCOL
    version: Annotated[str, Meta(max_length=VERSION_MAX)] = ""
    hosts: Annotated[list[KeyName], Meta(max_length=HOSTS_MAX)] = []
    input: Annotated[list[KeyName], Meta(max_length=HOSTS_MAX)] = []  # hosts taking answers


class PaneOp(_Op, frozen=True, tag="pane"):
    update: PaneUpdate


class GoneOp(_Op, frozen=True, tag="gone"):
    key: PaneKey
    t: Time


class HostOp(_Op, frozen=True, tag="host"):
    host: KeyName
    reachable: bool
    t: Time
    error: Text | None = None
    rtt: Rtt | None = None
    reconnects: Count = 0
    contact: Time | None = None


Op = PaneOp | GoneOp | HostOp


class Snapshot(_Msg, frozen=True, tag="snapshot"):
    seq: Seq
    t: Time
    hosts: Annotated[dict[KeyName, HostState], Meta(max_length=HOSTS_MAX)] = {}
    panes: list[PaneUpdate] = []


class Delta(_Msg, frozen=True, tag="delta"):
    seq: Seq
    ops: Annotated[list[Op], Meta(min_length=1)]


# --- screens and answers (issue 12; docs/answers.md) -------------------------------------
# Outside the seq/ack stream: a screen is a view of now, worth nothing once stale, and
# an answer's outcome is awaited by one request; neither is buffered while offline.
SCREEN_LINES_MAX = 500  # lines of a screen message (visible rows plus bounded scroll-back)
SCREEN_LINE_MAX = 4096  # characters per line, colour escapes included
ANSWERS_MAX = 16  # declared answers offered per prompt
ANSWER_ID_MAX = 32
ANSWER_LABEL_MAX = 128
ANSWER_TEXT_MAX = 1024  # free text typed into a pane
FINGERPRINT_LEN = 64  # sha256 hex of the screen's plain text
REQUEST_ID_MAX = 64
#: what an answer attempt came to; only "typed" typed anything
Outcome = Literal[
    "typed", "changed", "not-blocked", "disabled", "expired", "offline", "used", "refused", "not-in-front"
]
OUTCOMES: tuple[str, ...] = get_args(Outcome)
Coordinate = Annotated[int, Meta(ge=0, le=10000)]
ScreenLine = Annotated[str, Meta(max_length=SCREEN_LINE_MAX)]  # SGR colour escapes kept
AnswerId = Annotated[str, Meta(min_length=1, max_length=ANSWER_ID_MAX, pattern=r"^[a-z0-9_-]+$")]
RequestId = Annotated[str, Meta(min_length=1, max_length=REQUEST_ID_MAX, pattern=r"^[A-Za-z0-9_-]+$")]
#: the keys an operator may press one at a time (tmux key names), beside declared
#: answers and text: the two that stop a turn, and those that can select or approve
Press = Literal[
    "Escape",
    "C-c",
    "Enter",
    "Tab",
    "y",
    "n",
    "1",
    "2",
    "3",
    "4",
    "5",
    "6",
    "7",
    "8",
    "9",
    "Up",
    "Down",
    "Left",
    "Right",
]
PRESSES: tuple[str, ...] = get_args(Press)
#: keys that stop what runs: allowed in any state, while the process the operator saw is
#: in front (`process`); every other key only under the screen's fingerprint
INTERRUPTS = frozenset({"Escape", "C-c"})
#: the program in front, as the collector names it for a screen and checks it for a key
ProcessId = Annotated[str, Meta(min_length=1, max_length=20, pattern=r"^[0-9]+$")]


class AnswerChoice(Struct, frozen=True):
    id: AnswerId
    label: Annotated[str, Meta(min_length=1, max_length=ANSWER_LABEL_MAX)]
    # the numbered choice the answer's keys select, whose line the label is (a push
    # shows "2. Skip it"); None: not a numbered choice, or a collector from before it
    option: Annotated[int, Meta(ge=1, le=99)] | None = None


class Screen(_Msg, frozen=True, tag="screen"):
    """What a watched pane shows (lines with SGR colour escapes), and what it can take."""

    key: PaneKey
    t: Time
    lines: Annotated[list[ScreenLine], Meta(max_length=SCREEN_LINES_MAX)]
    width: Coordinate
    height: Coordinate
    cursor: Annotated[list[Coordinate], Meta(min_length=2, max_length=2)]  # [x, y], visible rows
    fingerprint: Annotated[str, Meta(pattern=r"^([0-9a-f]{64})?$")]
    state: State | None = None
    prompt: Text | None = None  # the blocked prompt's text, read by its rule
    answers: Annotated[list[AnswerChoice], Meta(max_length=ANSWERS_MAX)] = []
    text: bool = False  # free text may be typed (a question with no declared answers)
    input: bool = False  # this host's collector types answers (--allow-input)
    # an idle or done agent a manifest identifies, at its input prompt: takes a follow-up
    # (text, typed only under this screen's fingerprint of that prompt)
    follow_up: bool = False
    # the pid of the manifest-identified program in front (None: a shell, or a program
    # known only from its own report); Escape and C-c are pressed only while it is
    process: ProcessId | None = None
    error: Text | None = None  # why there is no screen ("screens are switched off for this host")


class Answered(_Msg, frozen=True, tag="answered"):
    id: RequestId
    outcome: Outcome
    prompt: Text | None = None


#: every message a collector sends, decoded by its `type`
CollectorMessage = Hello | Snapshot | Delta | Screen | Answered


# --- server → collector ----------------------------------------------------------------
# The server builds and encodes these; the collector decodes a frame into them
# (`server_messages.read_server`), every field checked, before acting on any of it.
class Welcome(_Msg, frozen=True, tag="welcome"):
    server: Annotated[str, Meta(max_length=VERSION_MAX)]
    snapshot: bool  # True: the server wants a snapshot, not a resend
    acked: Seq | None = None  # the last seq the server committed for this stream, if any
    protocol: Annotated[int, Meta(ge=0, le=INT_MAX)] = PROTOCOL


class Ack(_Msg, frozen=True, tag="ack"):
    seq: Seq


class Resync(_Msg, frozen=True, tag="resync"):
    reason: str  # words for a log line, cut where shown


class Seen(_Msg, frozen=True, tag="seen"):
    key: PaneKey
    t: Time


class Refused(_Msg, frozen=True, tag="refused"):
    """Sent just before a 1007/1009/4403 close, or alone for one pane: exactly what was
    refused, so the collector drops that and resends the rest instead of looping on it."""

    reason: str  # words for a log line, cut where shown
    seq: Seq | None = None
    at: str | None = None  # `panes.3.msg`, `ops.0.update.msg`: which item
    host: KeyName | None = None  # a host name refused as a whole


class Watch(_Msg, frozen=True, tag="watch"):
    """A viewer looks at this pane: capture it now and on every settle until unwatched."""

    key: PaneKey
    scrollback: Annotated[int, Meta(ge=0, le=SCREEN_LINES_MAX)] = 0  # lines above the visible rows


class Unwatch(_Msg, frozen=True, tag="unwatch"):
    key: PaneKey


class Answer(_Msg, frozen=True, tag="answer"):
    """Type this answer if, and only if, the pane still shows the prompt `fingerprint`
    names: a declared answer's id, free text (a blocked question's answer, or an idle
    agent's follow-up), or one key of `PRESSES` (exactly one of the three). Escape and
    C-c name `process` instead: pressed while that program is still in front."""

    id: RequestId
    key: PaneKey
    fingerprint: Annotated[str, Meta(max_length=FINGERPRINT_LEN)]
    expires: Time  # wall time after which it must not be typed
    answer: Annotated[str, Meta(max_length=ANSWER_ID_MAX)] | None = None
    text: Annotated[str, Meta(max_length=ANSWER_TEXT_MAX)] | None = None  # typed literally, then Enter
    press: Press | None = None
    process: ProcessId | None = None

    def __post_init__(self) -> None:
        if sum(x is not None for x in (self.answer, self.text, self.press)) != 1:
            raise ValueError("exactly one of `answer`, `text` and `press`")


#: what the server sends a collector, decoded by its `type`
ServerMessage = Welcome | Ack | Resync | Refused | Seen | Watch | Unwatch | Answer
#: the server's commands about one pane (screens and answers)
PaneCommand = Watch | Unwatch | Answer


COLLECTOR_MESSAGES: dict[str, type] = {
    "hello": Hello,
    "snapshot": Snapshot,
    "delta": Delta,
    "screen": Screen,
    "answered": Answered,
}
SERVER_MESSAGES: dict[str, type] = {
    "welcome": Welcome,
    "ack": Ack,
    "resync": Resync,
    "seen": Seen,
    "refused": Refused,
    "watch": Watch,
    "unwatch": Unwatch,
    "answer": Answer,
}
OPS: dict[str, type] = {"pane": PaneOp, "gone": GoneOp, "host": HostOp}


def hello(stream: str, version: str, hosts: list[str], input: list[str] | None = None) -> Hello:
    return Hello(stream=stream, version=version, hosts=hosts, input=input or [])


def snapshot(seq: int, t: float, hosts: dict[str, HostState], panes: list[PaneUpdate]) -> Snapshot:
    return Snapshot(seq=seq, t=t, hosts=hosts, panes=panes)


def delta(seq: int, ops: list[Op]) -> Delta:
    return Delta(seq=seq, ops=ops)


def pane_op(update: PaneUpdate) -> PaneOp:
    return PaneOp(update)


def gone_op(key: PaneKey, t: float) -> GoneOp:
    return GoneOp(key, t)


def host_op(
    host: str, reachable: bool, error: str | None, t: float, health: dict[str, Any] | None = None
) -> HostOp:
    """`health`: `rtt`, `reconnects`, `contact` (see HostState), when measured."""
    return HostOp(host=host, reachable=reachable, t=t, error=error, **_health(health))


def host_state(reachable: bool, error: str | None, health: dict[str, Any] | None = None) -> HostState:
    return HostState(reachable=reachable, error=error, **_health(health))


def _health(health: dict[str, Any] | None) -> dict[str, Any]:
    return {k: health[k] for k in ("rtt", "reconnects", "contact") if k in health} if health else {}


def welcome(server: str, acked: int | None, snapshot: bool) -> Welcome:
    return Welcome(server=server, snapshot=snapshot, acked=acked)


def ack(seq: int) -> Ack:
    return Ack(seq)


def resync(reason: str) -> Resync:
    return Resync(reason)


def seen(key: PaneKey, t: float) -> Seen:
    return Seen(key, t)


def refused(seq: int | None, at: str | None, host: str | None, reason: str) -> Refused:
    return Refused(reason=reason, seq=seq, at=at, host=host)


def screen(
    key: PaneKey,
    t: float,
    lines: list[str],
    size: tuple[int, int],
    cursor: tuple[int, int],
    fingerprint: str,
    *,
    state: State | None = None,
    prompt: str | None = None,
    answers: list[AnswerChoice] | None = None,
    text: bool = False,
    input: bool = False,
    error: str | None = None,
    follow_up: bool = False,
    process: str | None = None,
) -> Screen:
    return Screen(
        key=key,
        t=t,
        lines=lines,
        width=size[0],
        height=size[1],
        cursor=[cursor[0], cursor[1]],
        fingerprint=fingerprint,
        state=state,
        prompt=prompt,
        answers=answers or [],
        text=text,
        input=input,
        error=error,
        follow_up=follow_up,
        process=process,
    )


def answered(request: str, outcome: Outcome, prompt: str | None = None) -> Answered:
    return Answered(id=request, outcome=outcome, prompt=prompt)


def watch(key: PaneKey, scrollback: int = 0) -> Watch:
    return Watch(key, scrollback)


def unwatch(key: PaneKey) -> Unwatch:
    return Unwatch(key)


def answer(
    request: str,
    key: PaneKey,
    fingerprint: str,
    expires: float,
    *,
    answer: str | None = None,
    text: str | None = None,
    press: Press | None = None,
    process: str | None = None,
) -> Answer:
    return Answer(
        id=request,
        key=key,
        fingerprint=fingerprint,
        expires=expires,
        answer=answer,
        text=text,
        press=press,
        process=process,
    )


_encoder = msgspec.json.Encoder()


def encode(msg: Any) -> str:
    """A message as the text frame that carries it (a typed message or a command's dict)."""
    return _encoder.encode(msg).decode()
