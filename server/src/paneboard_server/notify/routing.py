"""Apprise channels from the server config, and which changes each one wants.

```toml
[[notify.channels]]
url = "ntfy://ntfy.sh/my-topic"     # any Apprise URL
states = ["blocked"]                # default: ["blocked", "done", "error"]
hosts = ["build-*"]                 # shell-style globs; default: every host
agents = ["claude", "codex"]        # default: every agent ("" matches no agent)
name = "team ntfy"                  # optional, for logs and the test button's answer
done = false                        # no "done" messages on this route (default true)
escalate_after = 600                # seconds a block may wait before...
escalate_to = "team"                # ...the channel of this name is told, once per block
```

A channel that should hear only escalations says `states = []`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from .. import config
from .events import NOTIFY_STATES, StateChange


class ConfigError(config.ConfigError, ValueError):
    """The channel list is malformed; the message names the entry and the field."""


@dataclass(frozen=True, slots=True)
class Channel:
    url: str
    states: frozenset[str] = NOTIFY_STATES
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


def _str_list(entry: Mapping[str, Any], key: str, where: str) -> tuple[str, ...] | None:
    if key not in entry:
        return None
    v = entry[key]
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ConfigError(f"{where}: {key} must be a list of strings")
    return tuple(v)


def parse_channels(notify: Mapping[str, Any]) -> list[Channel]:
    """Channels from the config's `[notify]` table (its `[[notify.channels]]` list)."""
    if not isinstance(notify, Mapping):
        raise ConfigError("notify must be a table")
    raw = notify.get("channels", [])
    if not isinstance(raw, list):
        raise ConfigError("notify.channels must be a list of tables")
    out: list[Channel] = []
    for i, entry in enumerate(raw):
        where = f"notify.channels[{i}]"
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{where}: must be a table")
        unknown = set(entry) - {
            "url",
            "states",
            "hosts",
            "agents",
            "name",
            "done",
            "escalate_after",
            "escalate_to",
        }
        if unknown:
            raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]!r}")
        url = entry.get("url")
        if not isinstance(url, str) or "://" not in url:
            raise ConfigError(f"{where}: url must be an Apprise URL like ntfy://host/topic")
        from .apprise_send import valid_url

        if not valid_url(url):
            scheme = url.split("://", 1)[0][:32]
            raise ConfigError(
                f"{where}: url scheme {scheme!r} is not one Apprise knows, or the URL is malformed"
            )
        states = _str_list(entry, "states", where)
        if states is not None:
            bad = [s for s in states if s not in {"blocked", "done", "error", "working", "idle"}]
            if bad:
                raise ConfigError(f"{where}: unknown state {bad[0]!r}")
        name = entry.get("name", "")
        if not isinstance(name, str):
            raise ConfigError(f"{where}: name must be a string")
        wanted = frozenset(states) if states is not None else NOTIFY_STATES
        done = entry.get("done", True)
        if not isinstance(done, bool):
            raise ConfigError(f"{where}: done must be true or false")
        if not done:
            wanted = wanted - {"done"}
        after, to = entry.get("escalate_after"), entry.get("escalate_to")
        if (after is None) != (to is None):
            raise ConfigError(f"{where}: escalate_after and escalate_to go together")
        if after is not None and (
            isinstance(after, bool) or not isinstance(after, (int, float)) or after <= 0
        ):
            raise ConfigError(f"{where}: escalate_after must be a number of seconds greater than 0")
        if to is not None and not isinstance(to, str):
            raise ConfigError(f"{where}: escalate_to must be the name of another channel")
        out.append(
            Channel(
                url=url,
                states=wanted,
                hosts=_str_list(entry, "hosts", where) or (),
                agents=_str_list(entry, "agents", where) or (),
                name=name,
                escalate_after=float(after) if after is not None else None,
                escalate_to=to,
            )
        )
    names = {c.name for c in out if c.name}
    for i, c in enumerate(out):
        if c.escalate_to is not None and (c.escalate_to not in names or c.escalate_to == c.name):
            raise ConfigError(f"notify.channels[{i}]: escalate_to {c.escalate_to!r} names no other channel")
    return out
