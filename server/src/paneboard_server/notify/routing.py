"""Apprise channels and which changes each one wants; the `[[notify.channels]]` tables
they are made from are checked in `settings.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from paneboard_protocol.pane import State

from .events import NOTIFY_STATES, StateChange


@dataclass(frozen=True, slots=True)
class Channel:
    url: str
    states: frozenset[State] = NOTIFY_STATES
    hosts: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    name: str = ""
    escalate_after: float | None = None  # seconds; with `escalate_to`
    escalate_to: str | None = None  # the `name` of the channel told once a block waits that long

    @property
    def label(self) -> str:
        """A name safe to show: the URL's scheme only, since URLs carry secrets."""
        return self.name or self.url.split("://", 1)[0] + "://…"

    def wants(self, change: StateChange) -> bool:
        if change.state not in self.states:
            return False
        if self.hosts and not any(fnmatchcase(change.host, g) for g in self.hosts):
            return False
        return not (self.agents and not any(fnmatchcase(change.agent or "", g) for g in self.agents))
