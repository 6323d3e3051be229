"""The collector's attach-time step: read the state panes stored for late collectors.

After it (re)connects to a tmux server, the watcher's first sync
(`TmuxWatcher._first_sync`) lists the panes and their foreground processes once, their
changes held back meanwhile (`HeldPump`), then `restore` runs: one `list-panes -a` for
every pane's `@paneboard-7501` and `@paneboard-thinkterm` options (see `pane_state`),
one `ps` for the foreground process groups of the panes that have any, and says, per
such pane, the `effects.Restored` input that `pane_state.restore_events` decides; the
watcher feeds it to the pane's tracker like any input, through the same decoder events
and classifier as live output (so the same staleness rules apply to a stored contract's
`ts`). Then `first_screens` waits for the screens the listing asked for, and the hold is
released. It only reads: nothing is written to a pane or to tmux.

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

from paneboard_protocol.pane_state import (
    MAX_7501_VALUE,
    MAX_AGENT_VALUE,
    OPTION_7501,
    OPTION_AGENT,
    parse_7501,
    parse_agent,
    restore_events,
)

from paneboard_agent.tmux import processes
from paneboard_agent.transport import Transport, TransportError
from paneboard_agent.uplink import PaneKey, PaneUpdate, Reports
from paneboard_agent.watch.effects import Restored
from paneboard_agent.watch.pane_tasks import WatchedPane
from paneboard_agent.watch.tracker import PaneTracker

log = logging.getLogger("paneboard.agent")

#: bytes of the whole reply accepted (every pane at its limits: ~20 KiB each)
MAX_REPLY = 16 << 20
#: seconds the first sync waits for the screens its listing asked for (`first_screens`)
FIRST_SCREENS = 5.0


class HeldPump:
    """Holds the watcher's pane changes during the first sync of a connection, so a
    pane whose state is stored goes out once, as restored, and is never first sent as
    unclassified (a server would take that for a change, and the restore for a new
    `blocked`). The host's status and the link's health are no pane's: never held.
    `release()` hands what was held, the latest per pane, to the real pump."""

    def __init__(self, pump: Reports) -> None:
        self.pump = pump
        self.items: dict[PaneKey, PaneUpdate | float] = {}  # an update, or when it went

    def changed(self, update: PaneUpdate) -> None:
        self.items[update.key] = update

    def gone(self, key: PaneKey, t: float) -> None:
        self.items[key] = t

    def release(self) -> None:
        items, self.items = self.items, {}
        for key, item in items.items():
            if isinstance(item, PaneUpdate):
                self.pump.changed(item)
            else:
                self.pump.gone(key, item)


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


async def restore(
    t: Transport, base: Sequence[str], panes: Mapping[str, WatchedPane], since: float
) -> list[tuple[WatchedPane, Restored]]:
    """What every listed pane's stored state says: the panes that have any, each with
    the input its tracker is to be fed (the watcher feeds it, as any input)."""

    def tracker(pane_id: str) -> PaneTracker | None:
        pane = panes.get(pane_id)
        return pane.tracker if pane is not None and pane.tracker.info is not None else None

    try:
        stored = await read_stored(t, base)
        known = [s for s in stored if tracker(s.pane_id) is not None]
        procs = await processes(t, {s.pane_pid for s in known}) if known else {}
    except TransportError as exc:
        log.debug("%s: reading stored pane state failed: %s", t.host, exc)
        return []
    fed: list[tuple[WatchedPane, Restored]] = []
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
            fed.append((pane, Restored(now, tuple(events))))
    return fed


async def first_screens(panes: Iterable[WatchedPane], bound: float = FIRST_SCREENS) -> None:
    """Wait (at most `bound` seconds) for the screens the first listing asked for.

    A pane whose state is on its screen (a permission prompt a rule reads) is, until
    then, its program with no state: sent as that, a server would see the wait end
    and a new one begin a moment later. Held until the screen is read, it goes out
    once, as it is."""
    tasks = [p.capture_task for p in panes if p.capture_task is not None and not p.capture_task.done()]
    if tasks:
        await asyncio.wait(tasks, timeout=bound)
