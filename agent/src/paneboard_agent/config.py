"""The collector's TOML configuration, checked key by key.

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

Every error names the file and the key (`hosts[2].port: ...`), so a typo costs one
reading, not a debugging session.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paneboard_agent.panes import DEFAULT_TRANSPORTS
from paneboard_agent.tracker import REREAD


class ConfigError(Exception):
    """One line that names the offending key."""


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


_HOST_KEYS = {
    "local",
    "host",
    "port",
    "user",
    "identity",
    "known_hosts",
    "tmux_socket",
    "tmux_socket_path",
    "include",
    "exclude",
    "connect_timeout",
    "ssh_config",
    "screens",
    "allow_input",
}
_TOP_KEYS = {"hosts", "transports", "rules_dir", "poll_interval", "ssh_config", "screen_reread"}


def _str(where: str, value: Any) -> str:
    if not isinstance(value, str) or not value or "\n" in value or "\0" in value:
        raise ConfigError(f"{where}: expected a non-empty string")
    return value


def _strs(where: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (_str(where, value),)
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected a string or a list of strings")
    return tuple(_str(f"{where}[{i}]", v) for i, v in enumerate(value))


def _num(where: str, value: Any, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
        raise ConfigError(f"{where}: expected a number from {lo:g} to {hi:g}")
    return float(value)


def parse_host(where: str, raw: Any) -> HostConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a table")
    for key in raw:
        if key not in _HOST_KEYS:
            raise ConfigError(f"{where}.{key}: unknown key (known: {', '.join(sorted(_HOST_KEYS))})")
    local = raw.get("local", False)
    if not isinstance(local, bool):
        raise ConfigError(f"{where}.local: expected true or false")
    host = raw.get("host")
    if local and host is not None:
        raise ConfigError(f"{where}.host: a local entry has no host")
    if not local and host is None:
        raise ConfigError(f"{where}.host: missing (or set local = true)")
    if host is not None:
        host = _str(f"{where}.host", host)
        if host.startswith("-") or any(c.isspace() for c in host):
            raise ConfigError(f"{where}.host: not a host name: {host!r}")
    port = raw.get("port")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535):
        raise ConfigError(f"{where}.port: expected an integer from 1 to 65535")
    if local:
        for k in ("port", "user", "identity", "known_hosts", "ssh_config"):
            if k in raw:
                raise ConfigError(f"{where}.{k}: only meaningful for an SSH host")
    sock = raw.get("tmux_socket")
    path = raw.get("tmux_socket_path")
    if sock is not None and path is not None:
        raise ConfigError(f"{where}.tmux_socket_path: give tmux_socket or tmux_socket_path, not both")
    if sock is not None and "/" in _str(f"{where}.tmux_socket", sock):
        raise ConfigError(f"{where}.tmux_socket: a name (tmux -L); use tmux_socket_path for a path")
    flags = {}
    for k in ("screens", "allow_input"):
        if k in raw:
            if not isinstance(raw[k], bool):
                raise ConfigError(f"{where}.{k}: expected true or false")
            flags[k] = raw[k]
    return HostConfig(
        **flags,
        host=host,
        port=port,
        user=_str(f"{where}.user", raw["user"]) if "user" in raw else None,
        identity=_strs(f"{where}.identity", raw.get("identity", [])),
        known_hosts=_str(f"{where}.known_hosts", raw["known_hosts"]) if "known_hosts" in raw else None,
        tmux_socket=sock,
        tmux_socket_path=_str(f"{where}.tmux_socket_path", path) if path is not None else None,
        include=_strs(f"{where}.include", raw.get("include", [])),
        exclude=_strs(f"{where}.exclude", raw.get("exclude", [])),
        connect_timeout=_num(f"{where}.connect_timeout", raw.get("connect_timeout", 10.0), 0.5, 600),
        ssh_config=_str(f"{where}.ssh_config", raw["ssh_config"]) if "ssh_config" in raw else None,
    )


def parse_config(raw: dict[str, Any], name: str = "config") -> Config:
    try:
        for key in raw:
            if key not in _TOP_KEYS:
                raise ConfigError(f"{key}: unknown key (known: {', '.join(sorted(_TOP_KEYS))})")
        hosts_raw = raw.get("hosts", [])
        if not isinstance(hosts_raw, list):
            raise ConfigError("hosts: expected an array of tables ([[hosts]])")
        hosts = tuple(parse_host(f"hosts[{i}]", h) for i, h in enumerate(hosts_raw))
        transports = _strs("transports", raw["transports"]) if "transports" in raw else DEFAULT_TRANSPORTS
        rules_dir = _str("rules_dir", raw["rules_dir"]) if "rules_dir" in raw else None
        poll = _num("poll_interval", raw.get("poll_interval", 1.0), 0.1, 60)
        ssh_cfg = _str("ssh_config", raw["ssh_config"]) if "ssh_config" in raw else None
        reread = _num("screen_reread", raw.get("screen_reread", REREAD), 0, 10)
    except ConfigError as exc:
        raise ConfigError(f"{name}: {exc}") from None
    return Config(
        hosts=hosts,
        transports=transports,
        rules_dir=rules_dir,
        poll_interval=poll,
        ssh_config=ssh_cfg,
        screen_reread=reread,
    )


def load_config(path: str | Path) -> Config:
    p = Path(path).expanduser()
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return parse_config(raw, str(path))


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
