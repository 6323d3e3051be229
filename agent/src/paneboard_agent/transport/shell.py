"""One-shot commands through one long-lived `sh`: what the SSH transport runs them on.

Only SSH needs it (a local subprocess costs little), so it lives beside SSH.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import shlex
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from paneboard_agent.transport.base import STDERR_LIMIT, Channel, RunResult, TransportError

log = logging.getLogger("paneboard.agent")


class ShellRunner:
    """One-shot commands through one long-lived `sh`, instead of a process per command.

    Over SSH every exec channel costs a session set-up and the user's login shell
    start (hundreds of ms on a loaded host with a heavy ~/.bashrc); the collector
    runs `ps` every second and `capture-pane` per settled pane. The runner writes
    each command to the shell's stdin followed by a marker carrying a fresh random
    nonce, and reads stdout and stderr up to that marker: a pane's screen text (which
    capture-pane passes through) cannot forge a nonce it never saw.

    Commands are pipelined: each is written the moment it is asked for, even while
    earlier ones are still running or their answers are still on the way, and one
    reader takes the answers in the order the commands were written (the shell runs
    them in that order). On a far link a command asked for while another is out thus
    waits for the host to finish that one (milliseconds), not for its answer to come
    back and its own question to go out (a round trip): a held report's look no longer
    queues a whole round trip behind a capture or another look. A caller that gives up
    (cancelled) leaves its answer to be read and dropped, so the shell never gets out
    of step with the commands after it.
    """

    def __init__(self, channel: Channel, stderr_reader: StreamReader) -> None:
        self._chan = channel
        self._err = stderr_reader
        self._write_lock = asyncio.Lock()  # a script is written whole before the next
        self._queue: deque[_Command] = deque()  # written, answer not yet read; oldest first
        self._reader: asyncio.Task[None] | None = None
        self._out_buf = bytearray()
        self._err_buf = bytearray()
        self.broken = False

    @property
    def queued(self) -> int:
        """Commands written whose answers have not been read yet."""
        return len(self._queue)

    async def run(self, argv: Sequence[str], timeout: float, limit: int) -> RunResult:
        """Run `argv`; `timeout` counts from when the commands before it are done."""
        nonce = secrets.token_hex(16)
        mark = f"pb-{nonce}"
        tail = f"printf '\\n%s %d\\n' {mark} $?; printf '\\n{mark}\\n' >&2"
        script = f"{shlex.join(argv)} </dev/null; {tail}\n"
        answer: asyncio.Future[RunResult] = asyncio.get_running_loop().create_future()
        cmd = _Command(nonce, argv[0] if argv else "", timeout, limit, answer)
        async with self._write_lock:
            if self.broken:
                raise TransportError("command shell closed")
            self._queue.append(cmd)
            if self._reader is None:
                self._reader = asyncio.create_task(self._read_answers())
            try:
                await self._chan.write(script.encode())
            except TransportError as exc:
                await self._break(exc)
        return await cmd.answer

    async def _read_answers(self) -> None:
        """Read the answers in the order the commands were written, until none is due."""
        try:
            while self._queue:
                cmd = self._queue[0]
                try:  # a scope, not wait_for: no task made per read on every look's path
                    async with asyncio.timeout(cmd.timeout):
                        out, rc = await self._read_out(cmd.nonce, cmd.limit)
                    async with asyncio.timeout(cmd.timeout):
                        err = await self._read_err(cmd.nonce)
                except TimeoutError as exc:
                    # out of step with the shell: never reuse it
                    raise TransportError(f"{cmd.name} did not finish within {cmd.timeout:g}s") from exc
                if self.broken:  # a failed write broke it meanwhile: everything due has failed
                    return
                self._queue.popleft()
                if not cmd.answer.done():  # its caller may have given up
                    cmd.answer.set_result(RunResult(rc, out, err))
        except TransportError as exc:
            await self._break(exc)
        except BaseException as exc:
            if not isinstance(exc, asyncio.CancelledError):
                log.exception("command shell reader failed")
            await self._break(TransportError(f"command shell failed: {exc!r}"))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._reader = None

    async def _break(self, exc: TransportError) -> None:
        """The shell cannot go on: every command still due fails with the reason. The
        only place that marks the runner broken, so no command is left unanswered."""
        pending, self._queue = self._queue, deque()
        for cmd in pending:
            if not cmd.answer.done():
                cmd.answer.set_exception(TransportError(str(exc)))
        if not self.broken:
            self.broken = True
            await self._chan.close()

    async def _read_out(self, nonce: str, limit: int) -> tuple[bytes, int | None]:
        marker = f"\npb-{nonce} ".encode()
        kept = bytearray()
        buf = self._out_buf
        while True:
            i = buf.find(marker)
            if i >= 0:
                end = buf.find(b"\n", i + len(marker))
                if end >= 0:
                    if len(kept) < limit:
                        kept += buf[: min(i, limit - len(kept))]
                    code = bytes(buf[i + len(marker) : end])
                    del buf[: end + 1]
                    return bytes(kept), int(code) if code.isdigit() else None
            elif len(buf) > len(marker):
                # flush what cannot be part of a marker, bounded by `limit`
                cut = len(buf) - len(marker)
                if len(kept) < limit:
                    kept += buf[: min(cut, limit - len(kept))]
                del buf[:cut]
            chunk = await self._chan.read(65536)
            if not chunk:
                raise TransportError("command shell closed")
            buf += chunk

    async def _read_err(self, nonce: str) -> bytes:
        marker = f"\npb-{nonce}\n".encode()
        buf = self._err_buf
        while True:
            i = buf.find(marker)
            if i >= 0:
                err = bytes(buf[: min(i, STDERR_LIMIT)])
                del buf[: i + len(marker)]
                return err
            if len(buf) > STDERR_LIMIT + len(marker):
                del buf[: len(buf) - len(marker) - STDERR_LIMIT]
            chunk = await self._err.read(4096)
            if not chunk:
                raise TransportError("command shell closed")
            buf += chunk


@dataclass(eq=False)
class _Command:
    """A command written to the shell, waiting for its answer."""

    nonce: str
    name: str  # argv[0], for the error line
    timeout: float
    limit: int
    answer: asyncio.Future[RunResult]


class StreamReader(Protocol):
    async def read(self, n: int) -> bytes: ...
