"""What `paneboard run` keeps of its program's reports, for a collector that attaches later.

The relay sees every byte the program writes; the OSC 7501 reports and THINKTERM_AGENT
values its scanner finds are decoded here (the protocol's own `Decoder`, so only what
a collector would accept is kept), applied to a `pane_state.LiveState`, and written
to the pane's user options by a non-blocking `pane_store.OptionWriter`. When the
program exits, its live records end (P7501-8: `done` and `error` stay) and its
contract goes (TA-4), as a collector watching live would have it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from paneboard_protocol.decoder import Decoder
from paneboard_protocol.pane_state import OPTION_7501, OPTION_AGENT, LiveState

from paneboard_agent.tools.pane_store import RELAY_ENV, OptionWriter, pane_target


class RelayState:
    def __init__(self, base: list[str], pane: str, pg: int) -> None:
        self.pane = pane
        self.live = LiveState(pg)
        self.writer = OptionWriter(base, pane)
        self.touched = False  # anything written: only then is there something to end at exit

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RelayState | None:
        """The relay's store when it runs in a tmux pane, else None."""
        target = pane_target(environ)
        if target is None:
            return None
        return cls(target[0], target[1], os.getpgrp())

    def child_env(self) -> dict[str, str]:
        """Variables the program gets: `emit` behind the relay leaves the options to it."""
        return {RELAY_ENV: self.pane}

    def feed(self, seq: bytes) -> None:
        """One complete report sequence the program wrote (as the scanner found it)."""
        changed = self.live.apply(Decoder().feed(seq))
        if changed:
            self.touched = True
            self.writer.want({o: self.live.value(o) for o in sorted(changed)})

    def poll(self) -> float | None:
        """Let the writer go on; returns how long the relay may sleep before calling again."""
        self.writer.poll()
        return self.writer.due()

    def close(self) -> None:
        """The program exited: keep only its results, forget its contract."""
        if not self.touched:
            return
        self.live.end_live()
        self.live.agent = None
        self.writer.close({OPTION_7501: self.live.value_7501(), OPTION_AGENT: None})
