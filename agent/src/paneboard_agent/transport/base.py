"""One interface for reaching a host's tmux: a local subprocess or an SSH channel.

The collector only ever needs two things from a host: a long-lived process with byte
streams (a tmux control client) and a one-shot command whose output it collects
(`ps`, `capture-pane`). Both implementations (`transport.local`, `transport.ssh`)
give exactly that, so everything above them is tested once against real tmux and
runs unchanged over SSH.

Errors come in three kinds. `TransportError` is something a reconnect can cure (the
network went away, sshd restarted). `RefusedTransportError` is a decision a person has
to make (the host key does not match, our key was refused): the collector says it in
one line and retries with back-off, so the fix is picked up without a restart.
`FatalTransportError` is a mistake in what was asked (a key file that is not there):
said once, never retried.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass


class TransportError(Exception):
    """The host could not be reached or the channel broke; retrying may help."""


class FatalTransportError(TransportError):
    """A mistake in what was asked (a file that is not there, a config we cannot honour):
    retrying cannot help."""


class RefusedTransportError(TransportError):
    """The host refused us (its key is not the one known_hosts trusts, or it refused our
    key): a person must fix it, on their own time. Retried with back-off, so a fixed
    known_hosts or authorized_keys is picked up without restarting the collector
    (asyncssh reads known_hosts afresh at every connect)."""


@dataclass(frozen=True, slots=True)
class RunResult:
    """What a one-shot command produced."""

    returncode: int | None
    stdout: bytes
    stderr: bytes


class Channel(abc.ABC):
    """A running command with byte streams: what a tmux control client lives on."""

    @abc.abstractmethod
    async def read(self, n: int = 65536) -> bytes:
        """Up to `n` bytes of stdout; b"" at end of stream."""

    @abc.abstractmethod
    async def write(self, data: bytes) -> None:
        """Write to stdin and wait until the transport accepted it (back-pressure)."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Close stdin (a control client exits on EOF) and release the channel."""

    @abc.abstractmethod
    async def wait(self) -> int | None:
        """Wait for the command to end; its exit status, None when unknown."""

    @abc.abstractmethod
    async def stderr_text(self) -> str:
        """Whatever the command wrote on stderr so far (bounded), for error lines."""


class Transport(abc.ABC):
    """A host: opens process channels and runs one-shot commands there."""

    #: the host's name as the sink reports it ("local" or the SSH host)
    host: str

    #: a one-shot command costs a network round trip (SSH): a poll then asks for tmux's
    #: listing and `ps` in one command (look.py) instead of a control-client listing and
    #: a `ps` after it. Locally a command costs a fork, and the control client is cheaper.
    round_trips: bool = False

    @abc.abstractmethod
    async def connect(self) -> None:
        """Make sure the host is reachable (raises TransportError/FatalTransportError)."""

    @abc.abstractmethod
    async def open_process(self, argv: Sequence[str]) -> Channel:
        """Start `argv` with byte streams on stdin/stdout."""

    @abc.abstractmethod
    async def run(self, argv: Sequence[str], timeout: float = 10.0, limit: int = 1 << 20) -> RunResult:
        """Run `argv` to completion; stdout/stderr are cut at `limit` bytes each."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release every connection and process this transport holds."""


#: stderr kept per channel: enough for an error line, bounded against a chatty command
STDERR_LIMIT = 4096
