"""The ingest uplink's messages (`WS /api/ingest`), defined once for both ends.

The collector builds every message it sends with these helpers, and reads the server's
with `parse_server`; the server's pydantic validation (`paneboard_server.ingest.wire`) and
`docs/wire.md` are held to these definitions by tests. A new message, in either
direction, is a TypedDict here plus its entry in `COLLECTOR_MESSAGES` or
`SERVER_MESSAGES` (server→collector commands go in the latter).

Pure: only the standard library.
"""

from __future__ import annotations

import json
from typing import Any, Literal, NotRequired, TypedDict

from paneboard_protocol.pane import NAME_MAX, PANE_ID_MAX

PROTOCOL = 1
# The uplink's own limits (a pane's are in `pane.py`); the server validates against these
# names, and the columns they are stored in are at least as wide (`collectors.stream`,
# `collectors.version`).
STREAM_MAX = 64  # a collector's stream id
VERSION_MAX = 64
HOSTS_MAX = 1000  # hosts named in a hello or a snapshot
RTT_MAX = 600  # seconds: a host's round trip; a link slower than this is down
PANE_ID_LEN = PANE_ID_MAX
HOST_NAME_LEN = NAME_MAX


class Key(TypedDict):
    host: str
    tmux: str
    pane: str


class HostState(TypedDict):
    reachable: bool
    error: str | None
    # the link's health as the collector measured it (optional: older collectors omit it)
    rtt: NotRequired[float | None]  # seconds, a read command's round trip to the host's tmux
    reconnects: NotRequired[int]  # links lost and made again since the collector started
    contact: NotRequired[float | None]  # when the host last answered (epoch seconds)


# --- collector → server ----------------------------------------------------------------
class Hello(TypedDict):
    type: Literal["hello"]
    protocol: int
    version: str
    stream: str
    hosts: list[str]
    input: list[str]  # hosts whose panes take answers from the board (--allow-input)


class PaneOp(TypedDict):
    op: Literal["pane"]
    update: dict[str, Any]  # `PaneUpdate.wire_json()`: the update fields of pane.FIELDS


class GoneOp(TypedDict):
    op: Literal["gone"]
    key: Key
    t: float


class HostOp(TypedDict):
    op: Literal["host"]
    host: str
    reachable: bool
    error: str | None
    rtt: NotRequired[float | None]
    reconnects: NotRequired[int]
    contact: NotRequired[float | None]
    t: float


class Snapshot(TypedDict):
    type: Literal["snapshot"]
    seq: int
    t: float
    hosts: dict[str, HostState]
    panes: list[dict[str, Any]]


class Delta(TypedDict):
    type: Literal["delta"]
    seq: int
    ops: list[PaneOp | GoneOp | HostOp]


# --- server → collector ----------------------------------------------------------------
class Welcome(TypedDict):
    type: Literal["welcome"]
    protocol: int
    server: str
    acked: int | None
    snapshot: bool


class Ack(TypedDict):
    type: Literal["ack"]
    seq: int


class Resync(TypedDict):
    type: Literal["resync"]
    reason: str


class Seen(TypedDict):
    type: Literal["seen"]
    key: Key
    t: float


class Refused(TypedDict):
    """Sent just before a 1007/1009/4403 close: exactly what was refused, so the
    collector drops that and resends the rest instead of looping on it."""

    type: Literal["refused"]
    seq: int | None
    at: str | None
    host: str | None
    reason: str


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
OUTCOMES: tuple[str, ...] = (
    "typed",
    "changed",
    "not-blocked",
    "disabled",
    "expired",
    "offline",
    "used",
    "refused",
)


class AnswerChoice(TypedDict):
    id: str
    label: str


class Screen(TypedDict):
    """What a watched pane shows (lines with SGR colour escapes), and what it can take."""

    type: Literal["screen"]
    key: Key
    t: float
    lines: list[str]
    width: int
    height: int
    cursor: list[int]  # [x, y], 0-based within the visible rows
    fingerprint: str
    state: str | None
    prompt: str | None  # the blocked prompt's text, read by its rule
    answers: list[AnswerChoice]
    text: bool  # free text may be typed (a question with no declared answers)
    input: bool  # this host's collector types answers (--allow-input)
    error: str | None  # why there is no screen ("screens are switched off for this host")


class Answered(TypedDict):
    type: Literal["answered"]
    id: str
    outcome: str
    prompt: str | None


class Watch(TypedDict):
    """A viewer looks at this pane: capture it now and on every settle until unwatched."""

    type: Literal["watch"]
    key: Key
    scrollback: int  # lines of history above the visible rows (bounded by SCREEN_LINES_MAX)


class Unwatch(TypedDict):
    type: Literal["unwatch"]
    key: Key


class Answer(TypedDict):
    """Type this answer if, and only if, the pane is still blocked on this very screen."""

    type: Literal["answer"]
    id: str
    key: Key
    fingerprint: str
    answer: str | None  # a declared answer's id, or
    text: str | None  # free text, typed literally, then Enter
    expires: float  # wall time after which it must not be typed


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
    return {
        "type": "hello",
        "protocol": PROTOCOL,
        "version": version,
        "stream": stream,
        "hosts": hosts,
        "input": input or [],
    }


def snapshot(seq: int, t: float, hosts: dict[str, HostState], panes: list[dict[str, Any]]) -> Snapshot:
    return {"type": "snapshot", "seq": seq, "t": t, "hosts": hosts, "panes": panes}


def delta(seq: int, ops: list[PaneOp | GoneOp | HostOp]) -> Delta:
    return {"type": "delta", "seq": seq, "ops": ops}


def pane_op(update: dict[str, Any]) -> PaneOp:
    return {"op": "pane", "update": update}


def gone_op(key: Key, t: float) -> GoneOp:
    return {"op": "gone", "key": key, "t": t}


def host_op(
    host: str, reachable: bool, error: str | None, t: float, health: dict[str, Any] | None = None
) -> HostOp:
    """`health`: `rtt`, `reconnects`, `contact` (see HostState), when measured."""
    op: HostOp = {"op": "host", "host": host, "reachable": reachable, "error": error, "t": t}
    if health:
        op.update(_health(health))  # type: ignore[typeddict-item]  # the three optional keys
    return op


def host_state(reachable: bool, error: str | None, health: dict[str, Any] | None = None) -> HostState:
    state: HostState = {"reachable": reachable, "error": error}
    if health:
        state.update(_health(health))  # type: ignore[typeddict-item]  # the three optional keys
    return state


def _health(health: dict[str, Any]) -> dict[str, Any]:
    return {k: health[k] for k in ("rtt", "reconnects", "contact") if k in health}


def welcome(server: str, acked: int | None, snapshot: bool) -> Welcome:
    return {"type": "welcome", "protocol": PROTOCOL, "server": server, "acked": acked, "snapshot": snapshot}


def ack(seq: int) -> Ack:
    return {"type": "ack", "seq": seq}


def resync(reason: str) -> Resync:
    return {"type": "resync", "reason": reason}


def seen(key: Key, t: float) -> Seen:
    return {"type": "seen", "key": key, "t": t}


def refused(seq: int | None, at: str | None, host: str | None, reason: str) -> Refused:
    return {"type": "refused", "seq": seq, "at": at, "host": host, "reason": reason}


def screen(
    key: Key,
    t: float,
    lines: list[str],
    size: tuple[int, int],
    cursor: tuple[int, int],
    fingerprint: str,
    *,
    state: str | None = None,
    prompt: str | None = None,
    answers: list[AnswerChoice] | None = None,
    text: bool = False,
    input: bool = False,
    error: str | None = None,
) -> Screen:
    return {
        "type": "screen",
        "key": key,
        "t": t,
        "lines": lines,
        "width": size[0],
        "height": size[1],
        "cursor": [cursor[0], cursor[1]],
        "fingerprint": fingerprint,
        "state": state,
        "prompt": prompt,
        "answers": answers or [],
        "text": text,
        "input": input,
        "error": error,
    }


def answered(request: str, outcome: str, prompt: str | None = None) -> Answered:
    return {"type": "answered", "id": request, "outcome": outcome, "prompt": prompt}


def watch(key: Key, scrollback: int = 0) -> Watch:
    return {"type": "watch", "key": key, "scrollback": scrollback}


def unwatch(key: Key) -> Unwatch:
    return {"type": "unwatch", "key": key}


def answer(
    request: str,
    key: Key,
    fingerprint: str,
    expires: float,
    *,
    answer: str | None = None,
    text: str | None = None,
) -> Answer:
    return {
        "type": "answer",
        "id": request,
        "key": key,
        "fingerprint": fingerprint,
        "answer": answer,
        "text": text,
        "expires": expires,
    }


def encode(msg: Any) -> str:
    """A message as the text frame that carries it."""
    return json.dumps(msg)


def parse_server(raw: str | bytes) -> dict[str, Any] | None:
    """A server message as a dict with a known `type`, or None for anything else.

    The collector ignores what it does not understand (a newer server may send more),
    so this never raises; the fields' types are checked where they are used.
    """
    try:
        msg = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(msg, dict) or msg.get("type") not in SERVER_MESSAGES:
        return None
    return msg
