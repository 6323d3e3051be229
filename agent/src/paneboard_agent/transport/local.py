"""The local transport: tmux on this machine, through asyncio subprocesses."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Sequence

from paneboard_agent.transport.base import STDERR_LIMIT, Channel, RunResult, Transport, TransportError


class LocalChannel(Channel):
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc = proc
        self._stderr = bytearray()
        self._stderr_task = asyncio.create_task(self._drain_stderr())

    async def _drain_stderr(self) -> None:
        # Always drained so a chatty stderr can never block the command; only the start is kept.
        assert self._proc.stderr is not None
        while chunk := await self._proc.stderr.read(4096):
            if len(self._stderr) < STDERR_LIMIT:
                self._stderr += chunk[: STDERR_LIMIT - len(self._stderr)]

    async def read(self, n: int = 65536) -> bytes:
        assert self._proc.stdout is not None
        try:
            return await self._proc.stdout.read(n)
        except (ConnectionError, OSError):
            return b""

    async def write(self, data: bytes) -> None:
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(data)
            await self._proc.stdin.drain()
        except (ConnectionError, OSError) as exc:
            raise TransportError(f"local process stdin closed: {exc}") from exc

    async def close(self) -> None:
        if self._proc.stdin is not None:
            with contextlib.suppress(OSError, ConnectionError):
                self._proc.stdin.close()
        try:
            await asyncio.wait_for(self._proc.wait(), 2.0)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()
            await _reaped(self._proc)
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(self._stderr_task, 1.0)

    async def wait(self) -> int | None:
        return await self._proc.wait()

    async def stderr_text(self) -> str:
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(self._stderr_task), 0.2)
        return self._stderr.decode("utf-8", "replace").strip()


class LocalTransport(Transport):
    """Runs commands here; `env` lets tests point tmux at a private TMUX_TMPDIR."""

    def __init__(self, host: str = "local", env: dict[str, str] | None = None) -> None:
        self.host = host
        self._env = env
        self._channels: set[LocalChannel] = set()

    async def connect(self) -> None:
        return None

    def _environ(self) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("TMUX", None)  # never talk to the tmux we may be running inside by accident
        if self._env:
            env.update(self._env)
        return env

    async def open_process(self, argv: Sequence[str]) -> Channel:
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._environ(),
                start_new_session=True,
            )
        except OSError as exc:
            raise TransportError(f"cannot run {argv[0]}: {exc.strerror or exc}") from exc
        chan = LocalChannel(proc)
        self._channels = {c for c in self._channels if c._proc.returncode is None}
        self._channels.add(chan)
        return chan

    async def run(self, argv: Sequence[str], timeout: float = 10.0, limit: int = 1 << 20) -> RunResult:
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._environ(),
                start_new_session=True,
            )
        except OSError as exc:
            raise TransportError(f"cannot run {argv[0]}: {exc.strerror or exc}") from exc
        try:
            out, err = await asyncio.wait_for(_bounded_communicate(proc, limit), timeout)
        except TimeoutError as exc:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await _reaped(proc)
            raise TransportError(f"{argv[0]} did not finish within {timeout:g}s") from exc
        except asyncio.CancelledError:  # the collector stopping: leave no child running
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await _reaped(proc)
            raise
        return RunResult(proc.returncode, out, err)

    async def close(self) -> None:
        for chan in list(self._channels):
            await chan.close()
        self._channels.clear()


async def _reaped(proc: asyncio.subprocess.Process, timeout: float = 5.0) -> None:
    """Wait for a killed process, but not for ever: the exit of a process killed after a
    time-out can go unreported to its `wait()` (it may have exited, unwaited, just
    before the kill), and a collector that waits for it stops watching every pane."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(proc.wait(), timeout)


async def _bounded_communicate(proc: asyncio.subprocess.Process, limit: int) -> tuple[bytes, bytes]:
    async def collect(stream: asyncio.StreamReader | None, cap: int) -> bytes:
        buf = bytearray()
        if stream is None:
            return b""
        while chunk := await stream.read(65536):
            if len(buf) < cap:
                buf += chunk[: cap - len(buf)]
        return bytes(buf)

    out, err = await asyncio.gather(collect(proc.stdout, limit), collect(proc.stderr, STDERR_LIMIT))
    await proc.wait()
    return out, err
