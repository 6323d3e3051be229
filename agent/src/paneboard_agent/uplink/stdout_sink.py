"""`paneboard agent --stdout`: one JSON line per change of a pane's classification.

The collector hands every change of evidence to its sink (the server needs a fresh
`ts` even when the state stays the same); a person piping stdout wants only what
they can see change, so this sink prints a line only when the keys docs/collector.md
lists (all but `t`) differ from the last line printed for that pane. A vanished pane gets one
last line with `"gone": true`. Host reachability is not printed: the collector
already logs a lost or refused host as one line on stderr.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from paneboard_protocol.events import Rejected
from paneboard_protocol.evidence import EvidenceError
from paneboard_protocol.why import explain

from paneboard_agent.uplink.health import Health
from paneboard_agent.uplink.sink import PaneKey, PaneUpdate


def _decided(update: PaneUpdate) -> str | None:
    """What decided the pane's state, in words (`paneboard_protocol.why`, as the board says it)."""
    if not update.evidence:
        return None
    try:
        return explain(update.evidence, update.t).text
    except EvidenceError:
        return None


class StdoutSink:
    def __init__(self, out: TextIO | None = None, explain: bool = False) -> None:
        self._out = out or sys.stdout
        self._explain = explain
        self._last: dict[PaneKey, dict[str, Any]] = {}
        self._where: dict[PaneKey, tuple[str, str]] = {}

    def _print(self, obj: dict[str, Any]) -> None:
        self._out.write(json.dumps(obj, ensure_ascii=False, separators=(", ", ": ")) + "\n")
        self._out.flush()

    async def pane_changed(self, update: PaneUpdate) -> None:
        obj = update.stdout_json()
        if self._explain:
            # which process was taken for the program, and why when not the group's leader
            obj["process"] = update.process
            obj["why"] = (update.evidence or {}).get("process", {}).get("why")
            obj["decided"] = _decided(update)
        shown = {k: v for k, v in obj.items() if k != "t"}
        if self._last.get(update.key) == shown:
            return
        self._last[update.key] = shown
        self._where[update.key] = (update.session, update.window)
        self._print(obj)

    def discarded(self, key: PaneKey, t: float, rejected: Rejected) -> None:
        """`--explain`: a report the pane wrote that the spec discards, and why, as
        `paneboard replay --explain` says it (it changes nothing on the pane)."""
        self._print(
            {
                "host": key.host,
                "pane": key.pane,
                "t": round(t, 6),
                "discarded": rejected.proto,
                "reason": rejected.reason,
            }
        )

    async def pane_gone(self, key: PaneKey, t: float) -> None:
        last = self._last.pop(key, None)
        session, window = self._where.pop(key, (None, None))
        if last is None:
            return
        self._print(
            {
                "host": key.host,
                "session": session,
                "window": window,
                "pane": key.pane,
                "agent": None,
                "state": None,
                "kind": None,
                "msg": None,
                "source": None,
                "observable": last.get("observable", True),
                "t": t,
                "gone": True,
            }
        )

    async def host_status(self, host: str, reachable: bool, t: float, error: str | None) -> None:
        return None

    async def host_health(self, host: str, health: Health) -> None:
        return None
