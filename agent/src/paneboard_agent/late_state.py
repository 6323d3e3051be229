"""The collector's attach-time step: read the state panes stored for late collectors.

After it (re)connects to a tmux server, the watcher's first sync is `first_sync`: the
panes and their foreground processes are listed once (their changes held back
meanwhile, `HeldPump`), then `restore` runs: one `list-panes -a` for every pane's
`@paneboard-7501` and `@paneboard-thinkterm` options (see `pane_state`), one `ps` for
the foreground process groups of the panes that have any, and each such pane's
tracker is fed what `pane_state.restore_events` decides, through the same decoder
events and classifier as live output (so the same staleness rules apply to a stored
contract's `ts`). It only reads: nothing is written to a pane or to tmux.

Option values are untrusted: tmux prints them raw, so a value could carry a tab or a
newline to pose as another pane's line. Every line of the reply starts with a random
token this query made up and ends with a fixed field, and anything else is ignored;
tmux itself cuts each value one byte past its limit, which `pane_state` then refuses.
The query is a one-shot command rather than a control-client command because a
forged `%end` line inside a control-mode reply would end the block early.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from paneboard_agent import queries
from paneboard_agent.health import Health
from paneboard_agent.pane_state import (
    MAX_7501_VALUE,
    MAX_AGENT_VALUE,
    OPTION_7501,
    OPTION_AGENT,
    parse_7501,
    parse_agent,
    restore_events,
)
from paneboard_agent.pump import Pump
from paneboard_agent.sink import PaneKey, PaneUpdate
from paneboard_agent.tracker import PaneTracker
from paneboard_agent.transport import Transport, TransportError

log = logging.getLogger("paneboard.agent")

#: bytes of the whole reply accepted (every pane at its limits: ~20 KiB each)
MAX_REPLY = 16 << 20
#: seconds the first sync waits for the screens its listing asked for (`first_screens`)
FIRST_SCREENS = 5.0


class HeldPump:
    """Stands in for the watcher's `Pump` during the first sync of a connection, so a
    pane whose state is stored goes out once, as restored, and is never first sent as
    unclassified (a server would take that for a change, and the restore for a new
    `blocked`). `release()` hands what was held, the latest per pane, to the real pump."""

    def __init__(self, pump: Pump) -> None:
        self.pump = pump
        self.items: dict[PaneKey, tuple[str, Any]] = {}

    def changed(self, update: PaneUpdate) -> None:
        self.items[update.key] = ("changed", update)

    def gone(self, key: PaneKey, t: float) -> None:
        self.items[key] = ("gone", (key, t))

    def host(self, host: str, reachable: bool, t: float, error: str | None) -> None:
        self.pump.host(host, reachable, t, error)

    def health(self, host: str, health: Health) -> None:
        self.pump.health(host, health)  # the link's health is no pane's: never held

    def release(self) -> Pump:
        items, self.items = self.items, {}
        for kind, payload in items.values():
            if kind == "changed":
                self.pump.changed(payload)
            else:
                self.pump.gone(*payload)
        return self.pump


@dataclass(frozen=True, slots=True)
class StoredLine:
    pane_id: str
    pane_pid: int
    v7501: str
    vagent: str


def state_format(token: str) -> str:
    return (
        f"{token}\t#{{pane_id}}\t#{{pane_pid}}\t#{{={MAX_7501_VALUE + 1}:{OPTION_7501}}}"
        f"\t#{{={MAX_AGENT_VALUE + 1}:{OPTION_AGENT}}}\tE"
    )


def parse_lines(lines: Iterable[bytes], token: str) -> list[StoredLine]:
    """The panes that have stored state; forged or cut lines are skipped."""
    out: dict[str, StoredLine] = {}
    for raw in lines:
        parts = raw.decode("utf-8", "replace").split("\t")
        if len(parts) != 6 or parts[0] != token or parts[5] != "E":
            continue
        _, pane_id, pid, v7501, vagent, _ = parts
        if not pane_id.startswith("%") or not pane_id[1:].isdigit() or not pid.isdigit():
            continue
        if (v7501 or vagent) and pane_id not in out:
            out[pane_id] = StoredLine(pane_id, int(pid), v7501, vagent)
    return list(out.values())


async def read_stored(t: Transport, base: Sequence[str]) -> list[StoredLine]:
    token = secrets.token_hex(8)
    res = await t.run([*base, "list-panes", "-a", "-F", state_format(token)], limit=MAX_REPLY)
    if res.returncode != 0:
        return []
    return parse_lines(res.stdout.splitlines(), token)


class _HasTracker(Protocol):
    tracker: PaneTracker


P = TypeVar("P", bound=_HasTracker)


async def restore(t: Transport, base: Sequence[str], panes: Mapping[str, P], since: float) -> list[P]:
    """Feed every listed pane's stored state to its tracker; return the panes fed
    (the watcher then carries out what their trackers ask for)."""

    def tracker(pane_id: str) -> PaneTracker | None:
        pane = panes.get(pane_id)
        return pane.tracker if pane is not None and pane.tracker.info is not None else None

    try:
        stored = await read_stored(t, base)
        known = [s for s in stored if tracker(s.pane_id) is not None]
        procs = await queries.processes(t, {s.pane_pid for s in known}) if known else {}
    except TransportError as exc:
        log.debug("%s: reading stored pane state failed: %s", t.host, exc)
        return []
    fed: list[P] = []
    now = time.time()
    for s in known:
        pane, tr = panes.get(s.pane_id), tracker(s.pane_id)
        if pane is None or tr is None:
            continue
        proc = (procs or {}).get(s.pane_pid)
        foreground = proc.tpgid if proc is not None and proc.tpgid > 0 else None
        events = restore_events(
            parse_7501(s.v7501 or None),
            parse_agent(s.vagent or None),
            foreground,
            tr.classifier.evidence(),
            since,
        )
        if events:
            tr.restored(now, events)
            fed.append(pane)
    return fed


async def first_screens(panes: Iterable[Any], bound: float = FIRST_SCREENS) -> None:
    """Wait (at most `bound` seconds) for the screens the first listing asked for.

    A pane whose state is on its screen (a permission prompt a rule reads) is, until
    then, its program with no state: sent as that, a server would see the wait end
    and a new one begin a moment later. Held until the screen is read, it goes out
    once, as it is."""
    tasks = [p.capture_task for p in panes if p.capture_task is not None and not p.capture_task.done()]
    if tasks:
        await asyncio.wait(tasks, timeout=bound)


async def first_sync(watcher: Any, since: float) -> None:
    """The first sync of a connection (`watcher.TmuxWatcher`): list panes and processes
    with the changes held, read the stored state into the panes, wait for the screens
    the listing asked for (`first_screens`), then let it all go.

    Kept here, with the watcher's few names it uses, so the watcher itself gains only a
    call: its `_sync` (one poll), `_after` (carry out a tracker's wishes), `panes`, `pump`."""
    real = watcher.pump
    held = watcher.pump = HeldPump(real)
    try:
        await watcher._sync()
        for pane in await restore(watcher.t, watcher.base, watcher.panes, since):
            watcher._after(pane)
        await first_screens(watcher.panes.values())
    finally:
        watcher.pump = real
        held.release()
