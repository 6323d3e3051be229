"""A watched host's link health: round trip, last contact, reconnects.

The board shows, per host, how far away it is (the round trip), when the collector last
heard from it, and how often the link was lost. The round trip is what a read command
through the control client took beside a full poll (locally the poll's pane listing;
over SSH a `display-message`, the listing riding in the poll's one-command look), answered
by tmux from memory, so it is the link's round trip plus tmux's own microseconds (an
SSH keepalive's reply would be purer, but asyncssh does not tell when one comes back).

Pure apart from the clock handed in: `HealthMeter` decides what to report and when,
at most every `EVERY` seconds while nothing else changes, so a fleet of hosts does not
turn every poll into a message to the server.
"""

from __future__ import annotations

from dataclasses import dataclass

#: seconds between health reports of a host whose link keeps working
EVERY = 5.0
#: a round trip this much larger or smaller than the one last reported is reported at once
JUMP = 2.0


@dataclass(frozen=True, slots=True)
class Health:
    """What the wire's host state carries besides reachability (docs/wire.md)."""

    rtt: float | None  # seconds; None: unknown or the link is down
    reconnects: int  # links lost and made again since the collector started
    contact: float | None  # when the host last answered (epoch seconds)

    def wire(self) -> dict[str, float | int | None]:
        return {"rtt": self.rtt, "reconnects": self.reconnects, "contact": self.contact}


class HealthMeter:
    """Collects round trips and contacts; says when a report is due."""

    def __init__(self) -> None:
        self.rtt: float | None = None
        self.contact: float | None = None
        self.reconnects = 0
        self._sent: Health | None = None
        self._sent_at = -1e18

    def answered(self, now: float, rtt: float | None = None) -> None:
        """The host answered at `now` (epoch seconds), after `rtt` seconds if measured."""
        self.contact = now
        if rtt is not None:
            self.rtt = rtt

    def lost(self) -> None:
        """The link broke: no round trip until it is back."""
        self.rtt = None

    def reconnected(self) -> None:
        self.reconnects += 1

    def current(self) -> Health:
        return Health(self.rtt, self.reconnects, self.contact)

    def due(self, now: float) -> Health | None:
        """The health to report now, or None: nothing changed enough since the last one."""
        h = self.current()
        last = self._sent
        changed = (
            last is None
            or last.reconnects != h.reconnects
            or (last.rtt is None) != (h.rtt is None)
            or (
                last.rtt is not None
                and h.rtt is not None
                and not last.rtt / JUMP <= h.rtt <= last.rtt * JUMP + 0.001
            )
        )
        if not changed and now - self._sent_at < EVERY:
            return None
        self._sent, self._sent_at = h, now
        return h
