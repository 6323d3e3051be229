"""The collector's TOML configuration.

```toml
poll_interval = 1.0            # seconds between pane/process polls
screen_reread = 0.4            # seconds: how often the screen of an agent that keeps
                               # animating is re-read (0: only once its output pauses)
transports = ["ssh", "mosh"]   # replaces the default list of "transport" programs
rules_dir = "~/.config/paneboard/rules"

[[hosts]]                      # one entry per tmux server to watch
local = true                   # this machine, no SSH
tmux_socket = "work"           # tmux -L work (or tmux_socket_path = "/tmp/x" for -S)

ssh_config = "~/.ssh/config"   # OpenSSH client config to honour (the default when it
                               # exists); "none" reads none; a host may set its own

[[hosts]]
host = "build1.example.com"    # or a Host alias from the ssh config
port = 22                      # default: the ssh config's Port, else 22
user = "ci"
identity = "~/.ssh/id_ed25519"         # or a list
known_hosts = "~/.ssh/known_hosts"     # verified strictly; default ~/.ssh/known_hosts
include = ["agent-*"]                  # session name globs (default: all)
exclude = ["scratch"]
screens = true                         # pages may see this host's screens (default true)
allow_input = false                    # answers may be typed into its panes (default false)
```

Every error names the file, the key and the fix (`agent.toml: hosts[2].port: expected an
integer from 1 to 65535, got 0; e.g. port = 22`), so a typo costs one reading, not a
debugging session. Checked by msgspec (`paneboard_protocol.settings`), as the server's is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from msgspec import Meta, Struct
from paneboard_protocol.settings import ConfigError, Invalid, convert, read_toml

from paneboard_agent.tmux import DEFAULT_TRANSPORTS
from paneboard_agent.watch import REREAD


@dataclass(frozen=True)
class HostConfig:
    host: str | None  # None: local
    port: int | None = None  # None: what the ssh config says, else 22
    user: str | None = None
    identity: tuple[str, ...] = ()
    known_hosts: str | None = None
    tmux_socket: str | None = None
    tmux_socket_path: str | None = None
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    connect_timeout: float = 10.0
    ssh_config: str | None = None  # None: the top-level/CLI choice; "none": read none
    screens: bool = True  # a page may see this host's screens (docs/answers.md)
    allow_input: bool = False  # answers may be typed into this host's panes

    @property
    def local(self) -> bool:
        return self.host is None


@dataclass(frozen=True)
class Config:
    hosts: tuple[HostConfig, ...] = ()
    transports: tuple[str, ...] = DEFAULT_TRANSPORTS
    rules_dir: str | None = None
    poll_interval: float = 1.0
    ssh_config: str | None = None  # None: ~/.ssh/config when it exists; "none": read none
    screen_reread: float = REREAD  # seconds between screen reads of a pane that animates; 0: off


# A value that ends up on a command line or in a path: one line, no NUL.
Text = Annotated[
    str, Meta(min_length=1, pattern="^[^\n\x00]+$", description="a non-empty string on one line")
]
Texts = Text | list[Text]  # one, or a list of them


def _tuple(v: Texts | None) -> tuple[str, ...]:
    return () if v is None else (v,) if isinstance(v, str) else tuple(v)


class _Host(Struct, forbid_unknown_fields=True, frozen=True):
    """One `[[hosts]]` table as written; `host()` is what the collector uses."""

    local: bool = False
    host: Text | None = None
    port: Annotated[int, Meta(ge=1, le=65535, examples=[22])] | None = None
    user: Text | None = None
    identity: Texts | None = None
    known_hosts: Text | None = None
    tmux_socket: Text | None = None
    tmux_socket_path: Text | None = None
    include: Texts | None = None
    exclude: Texts | None = None
    connect_timeout: Annotated[float, Meta(ge=0.5, le=600)] = 10.0
    ssh_config: Text | None = None
    screens: bool = True
    allow_input: bool = False

    def __post_init__(self) -> None:
        if self.local and self.host is not None:
            raise Invalid("host", "a local entry has no host", "remove host, or local = true")
        if not self.local and self.host is None:
            raise Invalid("host", "missing", 'give host = "NAME" (or an ssh config alias), or local = true')
        if self.host is not None and (self.host.startswith("-") or any(c.isspace() for c in self.host)):
            raise Invalid(
                "host",
                f"not a host name: {json.dumps(self.host[:80])}",
                "give a host name or ssh config alias, without spaces or a leading -",
            )
        if self.local:
            for k in ("port", "user", "identity", "known_hosts", "ssh_config"):
                if getattr(self, k) is not None:
                    raise Invalid(
                        k, "only meaningful for an SSH host", f"remove {k}, or give host instead of local"
                    )
        if self.tmux_socket is not None and self.tmux_socket_path is not None:
            raise Invalid(
                "tmux_socket_path", "give tmux_socket or tmux_socket_path, not both", "remove one of them"
            )
        if self.tmux_socket is not None and "/" in self.tmux_socket:
            raise Invalid(
                "tmux_socket",
                "a name (tmux -L), not a path",
                f"use tmux_socket_path = {json.dumps(self.tmux_socket[:80])} for a path",
            )

    def host_config(self) -> HostConfig:
        return HostConfig(
            host=self.host,
            port=self.port,
            user=self.user,
            identity=_tuple(self.identity),
            known_hosts=self.known_hosts,
            tmux_socket=self.tmux_socket,
            tmux_socket_path=self.tmux_socket_path,
            include=_tuple(self.include),
            exclude=_tuple(self.exclude),
            connect_timeout=self.connect_timeout,
            ssh_config=self.ssh_config,
            screens=self.screens,
            allow_input=self.allow_input,
        )


class _File(Struct, forbid_unknown_fields=True, frozen=True):
    """The file's top level as written."""

    hosts: list[_Host] = []
    transports: Texts | None = None
    rules_dir: Text | None = None
    poll_interval: Annotated[float, Meta(ge=0.1, le=60)] = 1.0
    ssh_config: Text | None = None
    screen_reread: Annotated[float, Meta(ge=0, le=10)] = REREAD


def parse_config(raw: dict[str, Any], name: str = "config") -> Config:
    """The configuration in a TOML table; ConfigError `NAME: KEY: problem; fix`."""
    f = convert(raw, _File, name)
    return Config(
        hosts=tuple(h.host_config() for h in f.hosts),
        transports=_tuple(f.transports) if f.transports is not None else DEFAULT_TRANSPORTS,
        rules_dir=f.rules_dir,
        poll_interval=f.poll_interval,
        ssh_config=f.ssh_config,
        screen_reread=f.screen_reread,
    )


def load_config(path: str | Path) -> Config:
    return parse_config(read_toml(path, str(path)), str(path))


def parse_ssh_spec(spec: str) -> tuple[str | None, str, int | None]:
    """`[USER@]HOST[:PORT]` (IPv6 as `[::1]:2222`) -> (user, host, port); HOST may be a
    Host alias of the ssh config, and a port not given is None (the config's, else 22)."""
    user = None
    if "@" in spec:
        user, _, spec = spec.rpartition("@")
        if not user:
            raise ConfigError(f"--ssh {spec!r}: empty user name")
    port: int | None = None
    if spec.startswith("["):
        host, sep, rest = spec[1:].partition("]")
        if not sep:
            raise ConfigError(f"--ssh {spec!r}: unclosed [")
        if rest:
            if not rest.startswith(":") or not rest[1:].isdigit():
                raise ConfigError(f"--ssh {spec!r}: bad port")
            port = int(rest[1:])
    elif spec.count(":") == 1:
        host, _, p = spec.partition(":")
        if not p.isdigit():
            raise ConfigError(f"--ssh {spec!r}: bad port {p!r}")
        port = int(p)
    else:
        host = spec
    if not host or host.startswith("-") or any(c.isspace() for c in host):
        raise ConfigError(f"--ssh {spec!r}: not a host name")
    if port is not None and not 1 <= port <= 65535:
        raise ConfigError(f"--ssh {spec!r}: port out of range")
    return user, host, port


__all__ = ["Config", "ConfigError", "HostConfig", "load_config", "parse_config", "parse_ssh_spec"]
