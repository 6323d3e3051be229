"""The SSH transport: tmux on a remote host through asyncssh channels.

Safety defaults: the host key is checked strictly against `known_hosts` (a file given,
else the config's `UserKnownHostsFile`, else `~/.ssh/known_hosts`; an unknown key is a
failure, never a prompt or a silent accept), only the client keys named are offered
(else the config's `IdentityFile`s, asyncssh's default keys and a running ssh-agent),
agent forwarding is off whatever the config says. The OpenSSH config file (when one is
given) is honoured as asyncssh parses it; `ProxyJump` hops are opened here with the same
strict options, each hop's host key verified (see ssh_config.py).

One connection carries many channels (a control client per tmux session plus
one-shot commands). OpenSSH refuses more than `MaxSessions` (default 10) channels per
connection, so a connection is filled up to `max_channels` (8, leaving room for a
person's own `ssh` multiplexing nothing) and another one is opened when that is not
enough, or when the server refuses a channel earlier than expected.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh

from paneboard_agent.transport import ssh_config
from paneboard_agent.transport.base import (
    STDERR_LIMIT,
    Channel,
    FatalTransportError,
    RefusedTransportError,
    RunResult,
    Transport,
    TransportError,
)
from paneboard_agent.transport.shell import ShellRunner

#: long-lived command shells per host (each holds one channel)
RUNNERS = 2
PREFERRED_CIPHERS = (
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "chacha20-poly1305@openssh.com",
    "aes128-ctr",
    "aes256-ctr",
)


@dataclass(frozen=True, slots=True)
class SSHTarget:
    """Where and as whom to connect; None means what the ssh config (or asyncssh) says.

    `ssh_config` is the OpenSSH client config file to honour (None: none is read).
    """

    host: str
    port: int | None = None
    user: str | None = None
    identity: tuple[str, ...] = ()
    known_hosts: str | None = None
    ssh_config: str | None = None
    connect_timeout: float = 10.0
    keepalive_interval: float = 15.0
    keepalive_count_max: int = 3
    max_channels: int = 8

    @property
    def label(self) -> str:
        who = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port not in (None, 22) else ""
        return f"{who}{self.host}{port}"


@dataclass(eq=False)
class _Conn:
    conn: asyncssh.SSHClientConnection
    channels: int = 0
    refused_at: int | None = None  # the channel count at which the server refused one
    closed: bool = False
    jumps: list[asyncssh.SSHClientConnection] = field(default_factory=list, repr=False)
    waiter: asyncio.Task[None] | None = field(default=None, repr=False)

    def has_room(self, cap: int) -> bool:
        limit = cap if self.refused_at is None else min(cap, self.refused_at)
        return not self.closed and self.channels < limit


class SSHChannel(Channel):
    def __init__(self, proc: asyncssh.SSHClientProcess[bytes], release: _Release, drain: bool = True) -> None:
        self._proc = proc
        self._release = release
        self._stderr = bytearray()
        # a ShellRunner reads stderr itself (drain False)
        self._stderr_task = asyncio.create_task(self._drain_stderr() if drain else asyncio.sleep(0))

    async def _drain_stderr(self) -> None:
        with contextlib.suppress(asyncssh.Error, OSError, asyncio.IncompleteReadError):
            while chunk := await self._proc.stderr.read(4096):
                if len(self._stderr) < STDERR_LIMIT:
                    self._stderr += chunk[: STDERR_LIMIT - len(self._stderr)]

    async def read(self, n: int = 65536) -> bytes:
        try:
            return await self._proc.stdout.read(n)
        except (asyncssh.Error, OSError, asyncio.IncompleteReadError):
            return b""

    async def write(self, data: bytes) -> None:
        try:
            self._proc.stdin.write(data)
            await self._proc.stdin.drain()
        except (asyncssh.Error, OSError, BrokenPipeError) as exc:
            raise TransportError(f"ssh channel closed: {exc}") from exc

    async def close(self) -> None:
        with contextlib.suppress(asyncssh.Error, OSError):
            self._proc.stdin.write_eof()
        try:
            await asyncio.wait_for(self._proc.wait_closed(), 2.0)
        except (TimeoutError, asyncssh.Error, OSError):
            self._proc.close()
        self._stderr_task.cancel()
        self._release()

    async def wait(self) -> int | None:
        with contextlib.suppress(asyncssh.Error, OSError):
            await self._proc.wait_closed()
        self._release()
        return self._proc.exit_status

    async def stderr_text(self) -> str:
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(self._stderr_task), 0.2)
        return self._stderr.decode("utf-8", "replace").strip()


class _Release:
    """Gives a channel slot back exactly once, however many times it is called."""

    def __init__(self, conn: _Conn) -> None:
        self._conn: _Conn | None = conn

    def __call__(self) -> None:
        if self._conn is not None:
            self._conn.channels -= 1
            self._conn = None


def _trust_hint(target: SSHTarget, known: Sequence[str] | None, resolved: ssh_config.Resolved | None) -> str:
    """How to trust a host's key, for the refusal's line: `ssh-keyscan` of the address
    the config resolves to, into the file that was checked, or one `ssh` by hand."""
    host = resolved.host if resolved else target.host
    port = resolved.port if resolved else (target.port or 22)
    into = target.known_hosts or (known[0] if known else "~/.ssh/known_hosts")
    scan = f"ssh-keyscan {f'-p {port} ' if port != 22 else ''}{shlex.quote(host)} >> {shlex.quote(into)}"
    cfg = target.ssh_config
    by_hand = "ssh " + " ".join(
        [
            *(["-F", shlex.quote(cfg)] if cfg and cfg != ssh_config.default_ssh_config() else []),
            *(["-p", str(target.port)] if target.port not in (None, 22) else []),
            shlex.quote(f"{target.user}@{target.host}" if target.user else target.host),
        ]
    )
    # `ssh` by hand writes to the config's files, not to a --known-hosts FILE
    also = "" if target.known_hosts else f" or connect once with `{by_hand}` and answer yes"
    return (
        f"; if it is the machine you mean (compare the key's fingerprint), trust it with `{scan}`{also}; "
        "a key that changed unexpectedly needs a look first"
    )


def _unknown_name(target: SSHTarget, resolved: ssh_config.Resolved | None, exc: OSError) -> str:
    """A host name that does not resolve: whether it is a Host of the ssh config (then its
    HostName is what failed) or not (a typo, most often), with the closest alias."""
    import difflib

    name = resolved.host if resolved else target.host
    out = f"cannot resolve host name {name!r}: {exc.strerror or exc}"
    files = [target.ssh_config] if target.ssh_config else []
    aliases = ssh_config.host_names(files)
    if target.host in aliases:
        return out + (f", the HostName of Host {target.host} in {files[0]}" if name != target.host else "")
    out += f"; {target.host!r} is not a Host alias in {files[0] if files else '~/.ssh/config'} either"
    close = difflib.get_close_matches(target.host, aliases, n=1, cutoff=0.6)
    return out + (f"; did you mean {close[0]}?" if close else "")


def describe_ssh_error(
    target: SSHTarget,
    exc: BaseException,
    known: Sequence[str] | None = None,
    via: str = "",
    resolved: ssh_config.Resolved | None = None,
) -> TransportError:
    """Turn asyncssh's and the OS's exceptions into one line, fatal or retryable.

    `known` names the known_hosts files the config chose; `via` prefixes a jump host's label;
    `resolved`: what the ssh config made of the host, for the hints.
    """
    where = f"{via}{target.label}"
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        src = target.known_hosts or (", ".join(known) if known else "~/.ssh/known_hosts")
        return RefusedTransportError(
            f"{where}: host key verification failed against {src} ({exc.reason})"
            f"{_trust_hint(target, known, resolved)}"
        )
    if isinstance(exc, socket.gaierror):
        return TransportError(f"{where}: {_unknown_name(target, resolved, exc)}")
    if isinstance(exc, asyncssh.PermissionDenied):
        default = "default keys: the ssh config's IdentityFile, ~/.ssh/id_*, ssh-agent"
        keys = ", ".join(target.identity) or default
        return RefusedTransportError(f"{where}: authentication refused for the offered key(s) ({keys})")
    if isinstance(exc, asyncssh.KeyImportError | asyncssh.KeyEncryptionError):
        return FatalTransportError(f"{where}: cannot load the client key: {exc}")
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return FatalTransportError(f"{where}: file not found: {exc.filename}")
    if isinstance(exc, asyncssh.DisconnectError):
        return TransportError(f"{where}: disconnected: {exc.reason}")
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return TransportError(f"{where}: connect timed out after {target.connect_timeout:g}s")
    if isinstance(exc, OSError):
        return TransportError(f"{where}: {exc.strerror or exc}")
    return TransportError(f"{where}: {exc}")


class SSHTransport(Transport):
    round_trips = True  # every run goes over the link and back

    def __init__(self, target: SSHTarget) -> None:
        self.target = target
        self.host = target.host
        self._conns: list[_Conn] = []
        self._lock = asyncio.Lock()
        self._runners: list[ShellRunner] = []
        self._runner_lock = asyncio.Lock()

    def _options(self, t: SSHTarget) -> dict[str, object]:
        """The connect options every connection (target or jump hop) gets."""
        kwargs: dict[str, object] = {
            "port": t.port if t.port is not None else (),
            "known_hosts": str(Path(t.known_hosts).expanduser()) if t.known_hosts else (),
            "agent_forwarding": False,
            "x11_forwarding": False,
            "request_pty": False,  # a config's RequestTTY force would garble control mode
            "keepalive_interval": t.keepalive_interval,
            "keepalive_count_max": t.keepalive_count_max,
            "connect_timeout": t.connect_timeout,
            "login_timeout": t.connect_timeout * 3,
            "config": [str(Path(t.ssh_config).expanduser())] if t.ssh_config else None,
            "password_auth": False,
            "kbdint_auth": False,
            # AES-GCM first: asyncssh's chacha20-poly1305 builds three cipher contexts per
            # packet, and tmux output arrives as many small packets (a clear CPU cost, profiled)
            "encryption_algs": PREFERRED_CIPHERS,
        }
        if t.user:
            kwargs["username"] = t.user
        if t.identity:
            kwargs["client_keys"] = [str(Path(p).expanduser()) for p in t.identity]
            kwargs["agent_path"] = None  # only the keys named, not whatever an agent holds
        return kwargs

    def _resolve(self, t: SSHTarget, via: str) -> ssh_config.Resolved | None:
        if not t.ssh_config:
            return None
        return ssh_config.resolve(f"{via}{t.label}", [t.ssh_config], t.host, t.user, t.port)

    async def _jump(
        self, hops: Sequence[ssh_config.Hop], opened: list[asyncssh.SSHClientConnection], depth: int
    ) -> asyncssh.SSHClientConnection:
        """Open `ProxyJump` hops in order, each through the one before; the first hop's
        own ProxyJump (from the config) applies, as with OpenSSH; return the last."""
        if depth > ssh_config.MAX_JUMP_DEPTH:
            raise FatalTransportError(
                f"{self.target.label}: ProxyJump: more than {ssh_config.MAX_JUMP_DEPTH} levels (a loop?)"
            )
        conn: asyncssh.SSHClientConnection | None = None
        for i, hop in enumerate(hops):
            t = SSHTarget(
                host=hop.host,
                port=hop.port,
                user=hop.user,
                ssh_config=self.target.ssh_config,
                connect_timeout=self.target.connect_timeout,
                keepalive_interval=self.target.keepalive_interval,
                keepalive_count_max=self.target.keepalive_count_max,
            )
            via = f"{self.target.label} via jump host "
            resolved = self._resolve(t, via)
            tunnel = conn
            if i == 0 and resolved is not None and resolved.jumps:
                tunnel = await self._jump(resolved.jumps, opened, depth + 1)
            try:
                conn = await asyncssh.connect(t.host, tunnel=tunnel, **self._options(t))
            except Exception as exc:
                known = resolved.known_hosts if resolved else None
                raise describe_ssh_error(t, exc, known, via, resolved) from exc
            opened.append(conn)
        assert conn is not None
        return conn

    async def _new_conn(self) -> _Conn:
        t = self.target
        for path in (*t.identity, *([t.known_hosts] if t.known_hosts else [])):
            if not Path(path).expanduser().is_file():
                raise FatalTransportError(f"{t.label}: file not found: {path}")
        resolved = self._resolve(t, "")
        jumps: list[asyncssh.SSHClientConnection] = []
        try:
            # None, not (): asyncssh would otherwise open the config's ProxyJump itself,
            # with its own defaults (agent forwarding, passwords) instead of ours
            tunnel = await self._jump(resolved.jumps, jumps, 0) if resolved and resolved.jumps else None
            try:
                conn = await asyncssh.connect(t.host, tunnel=tunnel, **self._options(t))
            except Exception as exc:
                known = resolved.known_hosts if resolved else None
                raise describe_ssh_error(t, exc, known, resolved=resolved) from exc
        except BaseException:
            for j in reversed(jumps):
                j.close()
            raise
        entry = _Conn(conn, jumps=jumps)

        async def watch() -> None:
            with contextlib.suppress(Exception):
                await conn.wait_closed()
            entry.closed = True
            for j in reversed(entry.jumps):  # the hops live as long as the connection through them
                j.close()

        entry.waiter = asyncio.create_task(watch())
        self._conns.append(entry)
        return entry

    async def connect(self) -> None:
        async with self._lock:
            self._conns = [c for c in self._conns if not c.closed]
            if not self._conns:
                await self._new_conn()

    async def _slot(self) -> _Conn:
        async with self._lock:
            self._conns = [c for c in self._conns if not c.closed]
            for c in self._conns:
                if c.has_room(self.target.max_channels):
                    c.channels += 1
                    return c
            c = await self._new_conn()
            c.channels += 1
            return c

    async def _open(self, command: str) -> tuple[asyncssh.SSHClientProcess[bytes], _Release]:
        # At most one retry on a fresh connection: a refusal there is not about MaxSessions.
        for attempt in range(2):
            entry = await self._slot()
            release = _Release(entry)
            try:
                proc = await entry.conn.create_process(command, encoding=None)
            except asyncssh.ChannelOpenError as exc:
                release()
                if entry.channels > 0 and attempt == 0:
                    entry.refused_at = entry.channels + 0  # this many is what the server allows
                    continue
                raise TransportError(f"{self.target.label}: channel refused: {exc.reason}") from exc
            except (asyncssh.Error, OSError) as exc:
                release()
                entry.closed = True
                raise describe_ssh_error(self.target, exc) from exc
            return proc, release
        raise TransportError(f"{self.target.label}: no channel available")  # pragma: no cover

    async def open_process(self, argv: Sequence[str]) -> Channel:
        proc, release = await self._open(shlex.join(argv))
        return SSHChannel(proc, release)

    async def _runner(self) -> ShellRunner:
        """An idle shell; else a new one, up to RUNNERS; else the one with the fewest
        commands due (they are pipelined: it takes this one at once, see ShellRunner)."""
        async with self._runner_lock:  # two callers at once open one shell, not two
            self._runners = [r for r in self._runners if not r.broken]
            idle = [r for r in self._runners if not r.queued]
            if idle:
                return idle[0]
            if len(self._runners) < RUNNERS:
                proc, release = await self._open("exec sh")
                runner = ShellRunner(SSHChannel(proc, release, drain=False), proc.stderr)
                self._runners.append(runner)
                return runner
            return min(self._runners, key=lambda r: r.queued)

    async def run(self, argv: Sequence[str], timeout: float = 10.0, limit: int = 1 << 20) -> RunResult:
        """Through a long-lived shell (see ShellRunner): no session set-up per command."""
        runner = await self._runner()
        try:
            return await runner.run(argv, timeout, limit)
        except TransportError as exc:
            raise TransportError(f"{self.target.label}: {exc}") from exc

    async def exec(self, argv: Sequence[str], timeout: float = 10.0, limit: int = 1 << 20) -> RunResult:
        """One exec channel for one command (what `run` avoids; kept for comparison)."""
        proc, release = await self._open(shlex.join(argv))
        try:

            async def collect(stream: asyncssh.SSHReader[bytes], cap: int) -> bytes:
                buf = bytearray()
                with contextlib.suppress(asyncssh.Error, OSError):
                    while chunk := await stream.read(65536):
                        if len(buf) < cap:
                            buf += chunk[: cap - len(buf)]
                return bytes(buf)

            proc.stdin.write_eof()
            both = asyncio.gather(collect(proc.stdout, limit), collect(proc.stderr, STDERR_LIMIT))
            both.add_done_callback(lambda f: f.cancelled() or f.exception())  # never "unretrieved"
            out, err = await asyncio.wait_for(both, timeout)
            await asyncio.wait_for(proc.wait_closed(), timeout)
            return RunResult(proc.exit_status, out, err)
        except TimeoutError as exc:
            proc.close()
            msg = f"{self.target.label}: {argv[0]} did not finish within {timeout:g}s"
            raise TransportError(msg) from exc
        except (asyncssh.Error, OSError) as exc:
            raise describe_ssh_error(self.target, exc) from exc
        finally:
            release()

    async def close(self) -> None:
        self._runners.clear()
        async with self._lock:
            for c in self._conns:
                c.conn.close()
            for c in self._conns:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(c.conn.wait_closed(), 2.0)
                if c.waiter:
                    c.waiter.cancel()
                for j in reversed(c.jumps):
                    j.close()
            self._conns.clear()
