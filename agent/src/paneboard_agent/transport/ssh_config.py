"""What the user's OpenSSH client configuration says about one host, through asyncssh's
parser (`asyncssh_config.py`).

asyncssh reads `~/.ssh/config` itself (`config=` on connect), but it silently skips the
options it does not implement, and it opens `ProxyJump` hops with its own defaults. So
the collector resolves the configuration first: to refuse, in one line naming the
option, what asyncssh would ignore although it changes where, as whom or trusting what
we connect; to refuse `UserKnownHostsFile none` (which would switch host key checking
off); and to learn the jump hops, which the transport opens itself with the same strict
options as the target.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from paneboard_agent.transport.asyncssh_config import ConfigParseError, parse
from paneboard_agent.transport.base import FatalTransportError

#: options asyncssh's parser does not know that change how the host is reached or
#: trusted; read here only so that their presence is an error instead of being silently
#: ignored (harmless ones such as ControlMaster or LocalForward stay ignored)
UNSUPPORTED = (
    "KnownHostsCommand",
    "ProxyUseFdpass",
    "SecurityKeyProvider",
)
MAX_JUMP_DEPTH = 8


@dataclass(frozen=True, slots=True)
class Hop:
    """One `ProxyJump` entry: `[user@]host[:port]`."""

    host: str
    user: str | None = None
    port: int | None = None


@dataclass(frozen=True, slots=True)
class Resolved:
    host: str  # HostName after the alias
    port: int
    user: str | None
    jumps: tuple[Hop, ...]
    known_hosts: tuple[str, ...] | None  # None: not set in the file (the default applies)


def default_ssh_config() -> str | None:
    """`~/.ssh/config` when it exists, as OpenSSH reads it by default."""
    path = Path("~/.ssh/config").expanduser()
    return str(path) if path.is_file() else None


def host_names(paths: Sequence[str]) -> list[str]:
    """The plain names (no `*`, `?` or `!` patterns) of the `Host` lines in these files,
    to tell a mistyped alias from a host the network does not know (Include not followed)."""
    names: list[str] = []
    for p in paths:
        try:
            text = Path(p).expanduser().read_text(errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            words = line.replace("=", " ", 1).split()
            if len(words) > 1 and words[0].lower() == "host":
                names += [w for w in words[1:] if not any(c in w for c in "*?!")]
    return names


def parse_jumps(where: str, value: str) -> tuple[Hop, ...]:
    """`ProxyJump a,u@b:2222` as OpenSSH writes it (`none`: no jump)."""
    if value.strip().lower() == "none":
        return ()
    hops = []
    for part in value.split(","):
        part = part.strip()
        if part.startswith("ssh://"):
            part = part[len("ssh://") :]
        user, _, rest = part.rpartition("@")
        port: int | None = None
        if rest.startswith("["):
            host, _, tail = rest[1:].partition("]")
            if tail.startswith(":") and tail[1:].isdigit():
                port = int(tail[1:])
            elif tail:
                raise FatalTransportError(f"{where}: ProxyJump: bad port in {part!r}")
        elif rest.count(":") == 1:
            host, _, p = rest.partition(":")
            if not p.isdigit():
                raise FatalTransportError(f"{where}: ProxyJump: bad port in {part!r}")
            port = int(p)
        else:
            host = rest
        if not host or host.startswith("-") or any(c.isspace() for c in host):
            raise FatalTransportError(f"{where}: ProxyJump: not a host: {part!r}")
        hops.append(Hop(host, user or None, port))
    return tuple(hops)


def resolve(
    where: str, paths: Sequence[str], host: str, user: str | None = None, port: int | None = None
) -> Resolved:
    """Read the files for `host` as asyncssh will; raise one line for what it cannot honour."""
    import getpass

    for p in paths:
        if not Path(p).expanduser().is_file():
            raise FatalTransportError(f"{where}: file not found: {p}")
    try:
        config, skipped = parse(paths, UNSUPPORTED, getpass.getuser(), host, user, port)
    except (ConfigParseError, OSError) as exc:
        raise FatalTransportError(f"{where}: ssh config: {exc}") from None
    files = ", ".join(paths)
    if skipped:
        raise FatalTransportError(
            f"{where}: {files}: {skipped[0]} is not supported by paneboard's SSH client (asyncssh); "
            f"remove it for this host or give it a Host block of its own"
        )
    known = config.get("UserKnownHostsFile")
    if known == []:
        raise FatalTransportError(
            f"{where}: {files}: UserKnownHostsFile none would switch host key checking off; refused"
        )
    jump = config.get("ProxyJump")
    return Resolved(
        host=str(config.get("Hostname", host)),
        port=int(config.get("Port", 22)),  # type: ignore[call-overload]  # asyncssh: values are object
        user=config.get("User"),  # type: ignore[arg-type]  # asyncssh: values are object
        jumps=parse_jumps(where, jump) if isinstance(jump, str) else (),
        known_hosts=tuple(str(Path(k).expanduser()) for k in known) if isinstance(known, list) else None,
    )


__all__ = ["UNSUPPORTED", "Hop", "Resolved", "default_ssh_config", "host_names", "parse_jumps", "resolve"]
