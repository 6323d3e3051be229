"""The one thing notifications react to: a pane's state changed."""

from __future__ import annotations

from typing import Any, Literal, get_args

import msgspec
from paneboard_protocol.pane import State

#: The states a change into notifies (and the page's own notifications say): an error
#: needs a person as much as a question does, so it notifies like blocked and done.
Notable = Literal["blocked", "done", "error"]
NOTIFY_STATES: frozenset[Notable] = frozenset(get_args(Notable))


def is_notable(state: State | None, prev_state: State | None) -> bool:
    """Only a change *into* blocked, error or done is worth interrupting someone for."""
    return state in NOTIFY_STATES and state != prev_state


class StateChange(msgspec.Struct, frozen=True):
    """A pane moved from `prev_state` to `state` (both may be None: no agent).

    A frozen msgspec Struct: the writer's listener makes one for each change into a
    waiting state, thousands a second under load, and a frozen dataclass's constructor
    (an `object.__setattr__` per field) costs several times as much."""

    pane_id: str
    host: str
    session: str
    window: str
    agent: str | None
    state: State | None
    prev_state: State | None
    kind: str | None = None  # a collector's word, bounded by the wire but not one of `KINDS`
    msg: str | None = None
    t: float = 0.0

    @property
    def notable(self) -> bool:
        return is_notable(self.state, self.prev_state)

    def title(self) -> str:
        who = self.agent or "shell"
        kind = f" ({self.kind})" if self.kind and self.state == "blocked" else ""
        return f"{who} {self.state or 'idle'}{kind}"

    def body(self, msg: str | None = None) -> str:
        """What the pane waits on (`msg`, else the change's own), then where it is."""
        where = f"{self.host} · {self.session}:{self.window}"
        said = msg or self.msg
        return f"{said}\n{where}" if said else where

    def payload(self) -> dict[str, Any]:
        """What a push carries: enough for the service worker to show and route it."""
        return {
            "pane": self.pane_id,
            "title": self.title(),
            "body": self.body(),
            "state": self.state,
            "kind": self.kind,
            "host": self.host,
            "agent": self.agent,
            "t": self.t,
        }
