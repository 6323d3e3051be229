"""A collector's report of one pane (`PaneUpdate`), as tests build them: every field the
wire requires given a plain value, the ones a test is about given by name."""

from __future__ import annotations

from typing import Any

from paneboard_protocol.pane import PaneKey, PaneUpdate


def pane_report(
    pane: str = "%1", state: str | None = "idle", *, host: str = "h", t: float = 1.0, **fields: Any
) -> PaneUpdate:
    """`pane` on `host`'s default tmux server in `state` at `t`; `fields` over the plain
    values (session "s", window "w", no agent, kind, msg or source, observable)."""
    plain: dict[str, Any] = {
        "session": "s",
        "window": "w",
        "agent": None,
        "kind": None,
        "msg": None,
        "source": None,
        "observable": True,
    }
    return PaneUpdate(key=PaneKey(host, "default", pane), state=state, t=t, **{**plain, **fields})
