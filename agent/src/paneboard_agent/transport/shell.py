"""One-shot commands through one long-lived `sh`: what the SSH transport runs them on.

Only SSH needs it (a local subprocess costs little), so it lives beside SSH.
"""

from __future__ import annotations

import asyncio
import secrets
import shlex
from collections.abc import Sequence
from typing import Protocol

from paneboard_agent.transport.base import STDERR_LIMIT, Channel, RunResult, TransportError


class ShellRunner:
    """One-shot commands through one long-lived `sh`, instead of a process per command.

    Over SSH every exec channel costs a session set-up and the user's login shell
    start (hundreds of ms on a loaded host with a heavy ~/.bashrc); the collector
    runs `ps` every second and `capture-pane` per settled pane. The runner writes
    each command to the shell's stdin followed by a marker carrying a fresh random
    nonce, and reads stdout and stderr up to that marker: a pane's screen text (which
    capture-pane passes through) cannot forge a nonce it never saw.
    """

    def __init__(self, channel: Channel, stderr_reader: StreamReader) -> None:
        self._chan = channel
        self._err = stderr_reader
        self._lock = asyncio.Lock()
        self._out_buf = bytearray()
        self._err_buf = bytearray()
        self.broken = False

    @property
    def busy(self) -> bool:
        return self._lock.locked()

    async def run(self, argv: Sequence[str], timeout: float, limit: int) -> RunResult:
        async with self._lock:
            if self.broken:
                raise TransportError("command shell closed")
            nonce = secrets.token_hex(16)
            mark = f"pb-{nonce}"
            tail = f"printf '\\n%s %d\\n' {mark} $?; printf '\\n{mark}\\n' >&2"
            script = f"{shlex.join(argv)} </dev/null; {tail}\n"
            try:
                await self._chan.write(script.encode())
                out, rc = await asyncio.wait_for(self._read_out(nonce, limit), timeout)
                err = await asyncio.wait_for(self._read_err(nonce), timeout)
            except (TimeoutError, TransportError) as exc:
                self.broken = True  # out of step with the shell: never reuse it
                await self._chan.close()
                if isinstance(exc, TransportError):
                    raise
                raise TransportError(f"{argv[0]} did not finish within {timeout:g}s") from exc
            return RunResult(rc, out, err)

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
                self.broken = True
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
                self.broken = True
                raise TransportError("command shell closed")
            buf += chunk


class StreamReader(Protocol):
    async def read(self, n: int) -> bytes: ...
