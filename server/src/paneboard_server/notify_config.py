"""The `[notify]` table of the server config and its `[[notify.channels]]`, as msgspec
Structs: the server's file is checked in one pass, this table with it, and every
mistake is one line naming the file, the key and the fix (`paneboard_protocol.settings`).
Beside `config.py`, not in the `notify` part: the configuration is read below every
part, and the part makes its routes from these (`notify/settings.py`).

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

import json
import logging
from collections.abc import Mapping
from typing import Annotated, Any

from msgspec import Meta, Struct
from paneboard_protocol.pane import State
from paneboard_protocol.settings import ConfigError, Invalid, convert

Positive = Annotated[float, Meta(gt=0)]
Count = Annotated[int, Meta(gt=0)]
Names = str | list[str]  # one, or a list


def valid_url(url: str) -> bool:
    """Does Apprise know this URL's scheme?"""
    import apprise  # heavy: imported only once a channel is configured

    # Apprise logs its own warning for an unknown URL; the caller's error says it in one line.
    lg = logging.getLogger("apprise")
    was = lg.disabled
    lg.disabled = True
    try:
        return bool(apprise.Apprise().add(url))
    finally:
        lg.disabled = was


class ChannelEntry(Struct, forbid_unknown_fields=True, frozen=True):
    """One `[[notify.channels]]` table as written (`notify.settings` makes its route)."""

    url: str = ""
    states: State | list[State] | None = None
    hosts: Names | None = None
    agents: Names | None = None
    name: str = ""
    done: bool = True
    escalate_after: Positive | None = None  # seconds; with `escalate_to`
    escalate_to: str | None = None

    def __post_init__(self) -> None:
        if "://" not in self.url:
            raise Invalid("url", "must be an Apprise URL", 'e.g. url = "ntfy://ntfy.sh/my-topic"')
        if not valid_url(self.url):
            scheme = self.url.split("://", 1)[0][:32]
            raise Invalid(
                "url",
                f"scheme {scheme!r} is not one Apprise knows, or the URL is malformed",
                "see Apprise's list of services for the URL of yours",
            )
        if (self.escalate_after is None) != (self.escalate_to is None):
            missing = "escalate_to" if self.escalate_to is None else "escalate_after"
            raise Invalid(
                missing, "escalate_after and escalate_to go together", f"add {missing}, or remove the other"
            )


class NotifySettings(Struct, forbid_unknown_fields=True, frozen=True):
    """The `[notify]` table of the server config."""

    subject: str = "mailto:paneboard@localhost"  # VAPID `sub`: who push services contact
    push_ttl: Count = 3600
    rate_per_minute: Positive = 20.0
    burst: Positive = 10.0
    dedupe_seconds: Positive = 300.0
    watch_ttl: Positive = 45.0
    # Plain http and loopback/private/link-local push endpoints (tests, a LAN push service).
    push_allow_local: bool = False
    # Consecutive failed sends after which a subscription is deleted.
    push_max_failures: Count = 5
    # Push subscriptions (devices) one account may have.
    push_max_per_user: Count = 10
    # Seconds after a change (told at once) in which others are folded into it (a burst
    # buzzes once).
    group_window: Positive = 2.0
    # Seconds between looks for blocks to escalate (channels' escalate_after).
    escalation_check: Positive = 15.0
    # Web Push for "done" (the page has its own switch, each Apprise channel `done`).
    push_done: bool = True
    channels: list[ChannelEntry] = []

    def __post_init__(self) -> None:
        if not self.subject.startswith(("mailto:", "https://")):
            raise Invalid(
                "subject", "must be a mailto: or https:// URL", 'e.g. subject = "mailto:you@example.com"'
            )
        names = {c.name for c in self.channels if c.name}
        for i, c in enumerate(self.channels):
            if c.escalate_to is not None and (c.escalate_to not in names or c.escalate_to == c.name):
                raise Invalid(
                    f"channels[{i}].escalate_to",
                    f"{json.dumps(c.escalate_to[:60])} names no other channel",
                    "give the name of another [[notify.channels]] entry",
                )

    @classmethod
    def from_table(cls, notify: Mapping[str, Any], source: str = "config") -> NotifySettings:
        """The `[notify]` table read on its own (the server's file reads it with the rest);
        ConfigError naming `source` and `notify.KEY`."""
        if not isinstance(notify, Mapping):
            raise ConfigError(f"{source}: notify: expected a table; write it as [notify]")
        return convert(dict(notify), cls, source, at="notify")


__all__ = ["ChannelEntry", "ConfigError", "NotifySettings", "valid_url"]
