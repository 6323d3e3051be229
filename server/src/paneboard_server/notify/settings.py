"""The routes the notifier tells, made from the `[notify]` table that `notify_config.py`
checked: a channel's `states` and `done` become the one set of states it wants."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from paneboard_protocol.pane import State

from ..notify_config import ChannelEntry, NotifySettings
from .events import NOTIFY_STATES
from .routing import Channel


def _tuple(v: str | Sequence[str] | None) -> tuple[str, ...]:
    return () if v is None else (v,) if isinstance(v, str) else tuple(v)


def _states(v: State | Sequence[State]) -> frozenset[State]:
    return frozenset((v,) if isinstance(v, str) else v)


def channel(entry: ChannelEntry) -> Channel:
    """The route one `[[notify.channels]]` table makes."""
    wanted = _states(entry.states) if entry.states is not None else NOTIFY_STATES
    return Channel(
        url=entry.url,
        states=wanted if entry.done else wanted - {"done"},
        hosts=_tuple(entry.hosts),
        agents=_tuple(entry.agents),
        name=entry.name,
        escalate_after=entry.escalate_after,
        escalate_to=entry.escalate_to,
    )


def settings_and_routes(
    notify: NotifySettings | Mapping[str, Any] | None,
) -> tuple[NotifySettings, list[Channel]]:
    """The settings and the Apprise routes: of the server config's checked table, or of a
    table alone (tests, a caller of its own), checked here the same way."""
    if not isinstance(notify, NotifySettings):
        notify = NotifySettings.from_table(notify or {})
    return notify, [channel(c) for c in notify.channels]


def parse_channels(notify: Mapping[str, Any]) -> list[Channel]:
    """The routes of a `[notify]` table (its `[[notify.channels]]` list)."""
    return settings_and_routes(notify)[1]


__all__ = ["channel", "parse_channels", "settings_and_routes"]
