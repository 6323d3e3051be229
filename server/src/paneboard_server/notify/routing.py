"""Apprise channels from the server config, and which changes each one wants.

```toml
[[notify.channels]]
url = "ntfy://ntfy.sh/my-topic"     # any Apprise URL
states = ["blocked"]                # default: ["blocked", "done", "error"]
hosts = ["build-*"]                 # shell-style globs; default: every host
agents = ["claude", "codex"]        # default: every agent ("" matches no agent)
name = "team ntfy"                  # optional, for logs and the test button's answer
```
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
        unknown = set(entry) - {"url", "states", "hosts", "agents", "name"}
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
        out.append(
            Channel(
                url=url,
                states=frozenset(states) if states is not None else NOTIFY_STATES,
                hosts=_str_list(entry, "hosts", where) or (),
                agents=_str_list(entry, "agents", where) or (),
                name=name,
            )
        )
    return out
