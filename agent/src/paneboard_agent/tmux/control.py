"""tmux control mode: a byte-level parser and a read-only control client.

The parser is pure (bytes in, notifications out; every chunking of the same bytes
gives the same notifications) so it is tested without tmux. What tmux 3.3a sends:

    %begin <time> <number> <flags>      a command's reply ... %end / %error, same three
    %output %<pane> <data>              pane bytes; bytes < 0x20 and `\\` as `\\ooo`
    %extended-output %<pane> <age> ... : <data>    the same with pause-after on
    %pause %<pane> / %continue %<pane>  tmux stopped / resumed sending a pane
    %window-add @w, %window-close @w, %unlinked-window-close @w, %sessions-changed,
    %session-changed $s name, %layout-change @w ..., %exit [reason], ...

tmux never sends a notification inside a reply (tmux(1), CONTROL MODE): every line
between `%begin` and the `%end`/`%error` with the same time, number and flags is reply
text, whatever it starts with. A reply line is never taken for a notification: a
program's name in a listing once put a `%sessions-changed` line there, and the
collector re-listed without pause.

The client never changes anything in tmux: `ControlClient.command` refuses anything
but the read commands in `READ_COMMANDS` (a read-only client would still run
`new-window` if asked).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from paneboard_agent.transport import Channel, TransportError

log = logging.getLogger(__name__)

#: one line longer than this is dropped (tmux writes a pane's output in chunks far shorter)
MAX_LINE = 1 << 20
#: a command reply larger than this keeps only its first lines
MAX_BLOCK_BYTES = 8 << 20


@dataclass(frozen=True, slots=True)
class Output:
    """Bytes a pane wrote (unescaped); `age` in ms is set for %extended-output."""

    pane: str
    data: bytes
    age: int | None = None


@dataclass(frozen=True, slots=True)
class Pause:
    pane: str


@dataclass(frozen=True, slots=True)
class Continue:
    pane: str


@dataclass(frozen=True, slots=True)
class Block:
    """A command's reply; `ok` False for %error. `flags` & 1: sent by this client."""

    number: int
    flags: int
    ok: bool
    lines: tuple[bytes, ...]
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class Notice:
    """Any other notification, e.g. Notice("window-add", ("@3",))."""

    name: str
    args: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Exit:
    reason: str | None


@dataclass(frozen=True, slots=True)
class Lost:
    """A line was too long or malformed and was dropped; `pane` when it was output."""

    pane: str | None
    reason: str


Notification = Output | Pause | Continue | Block | Notice | Exit | Lost

_OCTAL = re.compile(rb"\\([0-7]{3})")
_PANE = re.compile(r"%\d+\Z")


_BYTE_OF = {b"%03o" % i: bytes((i,)) for i in range(256)} | {
    b"%03o" % i: bytes((i & 0xFF,)) for i in range(256, 512)
}


def _octal(m: re.Match[bytes]) -> bytes:
    return _BYTE_OF[m[1]]


def unescape(data: bytes) -> bytes:
    """Undo tmux's `\\ooo` escaping of control bytes and backslash.

    The commonest escapes (CR, LF, ESC, TAB: every line and colour change) are replaced
    first at C speed, faster than the regex's callback per escape. The same
    result: whether a backslash starts an escape depends only on the three bytes after
    it, which no replacement touches (it removes whole escapes and writes no digit or
    backslash); `\\134` (backslash itself) is left to the regex, after the others."""
    if b"\\" not in data:
        return data
    data = data.replace(b"\\015", b"\r").replace(b"\\012", b"\n").replace(b"\\033", b"\x1b")
    data = data.replace(b"\\011", b"\t")
    if b"\\" not in data:
        return data
    return _OCTAL.sub(_octal, data)


def _word(line: bytes) -> tuple[bytes, bytes]:
    head, _, rest = line.partition(b" ")
    return head, rest


@dataclass
class _OpenBlock:
    number: int
    flags: int
    guard: bytes  # `%begin`'s arguments, which its `%end`/`%error` repeats
    lines: list[bytes] = field(default_factory=list)
    size: int = 0
    truncated: bool = False


class ControlParser:
    """Incremental: `feed(chunk)` returns the notifications completed by `chunk`."""

    def __init__(self, max_line: int = MAX_LINE, max_block: int = MAX_BLOCK_BYTES) -> None:
        self._buf = bytearray()
        self._max_line = max_line
        self._max_block = max_block
        self._skipping: bytes | None = None  # the head of an overlong line being skipped
        self._block: _OpenBlock | None = None

    def feed(self, data: bytes) -> list[Notification]:
        out: list[Notification] = []
        buf = self._buf
        start = 0
        if self._skipping is not None:
            nl = data.find(b"\n")
            if nl < 0:
                return out
            self._too_long(self._skipping, out)
            self._skipping = None
            start = nl + 1
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            if buf:
                buf += data[start:nl]
                line = bytes(buf)
                buf.clear()
            else:
                line = data[start:nl]
            start = nl + 1
            if len(line) > self._max_line:
                self._too_long(line[:64], out)
                continue
            self._line(line, out)
        rest = data[start:]
        if len(buf) + len(rest) > self._max_line:
            self._skipping = bytes((buf + rest)[:64])
            buf.clear()
        else:
            buf += rest
        return out

    def _too_long(self, head: bytes, out: list[Notification]) -> None:
        """An overlong line is dropped: inside a reply it cuts the reply (reply text is
        never a notification, not even a lost one), outside it is a lost notification."""
        if self._block is not None:
            self._block.truncated = True
        else:
            out.append(self._lost_line(head))

    def _lost_line(self, head: bytes) -> Lost:
        name, rest = _word(head)
        pane = None
        if name in (b"%output", b"%extended-output"):
            cand = _word(rest)[0].decode("ascii", "replace")
            pane = cand if _PANE.match(cand) else None
        return Lost(pane, "line too long")

    def _line(self, line: bytes, out: list[Notification]) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        blk = self._block
        if blk is not None:
            if line.startswith((b"%end ", b"%error ")):
                head, rest = _word(line)
                if rest == blk.guard:
                    self._block = None
                    out.append(Block(blk.number, blk.flags, head == b"%end", tuple(blk.lines), blk.truncated))
                    return
            if blk.size + len(line) > self._max_block:
                blk.truncated = True
            else:
                blk.lines.append(line)
                blk.size += len(line) + 1
            return
        # the hot path: nearly every line is pane output
        if line.startswith(b"%extended-output %"):
            sp = line.find(b" ", 18)
            sep = line.find(b" : ", sp)
            age = line[sp + 1 : line.find(b" ", sp + 1)] if sp > 0 else b""
            if sp > 18 and sep > 0 and line[18:sp].isdigit() and age.isdigit():
                out.append(Output(line[17:sp].decode(), unescape(line[sep + 3 :]), int(age)))
                return
        elif line.startswith(b"%output %"):
            sp = line.find(b" ", 9)
            if sp > 9 and line[9:sp].isdigit():
                out.append(Output(line[8:sp].decode(), unescape(line[sp + 1 :])))
                return
        if line.startswith(b"%begin "):
            parts = line.split(b" ")
            if len(parts) >= 4 and parts[2].isdigit() and parts[3].isdigit():
                self._block = _OpenBlock(int(parts[2]), int(parts[3]), _word(line)[1])
                return
        if line.startswith(b"%"):
            self._notification(line, out)
            return
        if line:
            out.append(Lost(None, "unexpected line outside a block"))

    def _notification(self, line: bytes, out: list[Notification]) -> None:
        head, rest = _word(line)
        name = head[1:].decode("ascii", "replace")
        if name == "output":
            pane, data = _word(rest)
            p = pane.decode("ascii", "replace")
            if _PANE.match(p):
                out.append(Output(p, unescape(data)))
            else:
                out.append(Lost(None, "bad %output"))
            return
        if name == "extended-output":
            pane, rest2 = _word(rest)
            p = pane.decode("ascii", "replace")
            age_b, _ = _word(rest2)
            sep = rest2.find(b" : ")
            if _PANE.match(p) and age_b.isdigit() and sep >= 0:
                out.append(Output(p, unescape(rest2[sep + 3 :]), int(age_b)))
            elif _PANE.match(p) and rest2.endswith(b" :"):
                out.append(Output(p, b"", int(age_b) if age_b.isdigit() else None))
            else:
                out.append(Lost(p if _PANE.match(p) else None, "bad %extended-output"))
            return
        text = rest.decode("utf-8", "replace")
        if name in ("pause", "continue"):
            p = text.strip()
            if _PANE.match(p):
                out.append(Pause(p) if name == "pause" else Continue(p))
            else:
                out.append(Lost(None, f"bad %{name}"))
            return
        if name == "exit":
            out.append(Exit(text or None))
            return
        out.append(Notice(name, tuple(text.split(" ")) if text else ()))


# --- the client ---------------------------------------------------------------------

#: the only commands the collector ever sends to tmux (all of them read state)
READ_COMMANDS = frozenset(
    {
        "list-panes",
        "list-sessions",
        "list-windows",
        "list-clients",
        "display-message",
        "capture-pane",
        "refresh-client",
        "show-options",
    }
)


class CommandError(Exception):
    """tmux answered a command with %error."""


def check_read_only(command: str) -> None:
    """Refuse anything that could change tmux (and refresh-client except flow control)."""
    word = command.split(" ", 1)[0]
    if word not in READ_COMMANDS:
        raise ValueError(f"refusing to send a non-read command to tmux: {word!r}")
    flow = re.fullmatch(r"refresh-client -A '%\d+:(continue|pause|on)'", command)
    if word == "refresh-client" and not flow:
        raise ValueError("refresh-client is only sent for flow control (-A '%N:continue')")
    if word == "display-message" and " -p" not in command:
        raise ValueError("display-message is only sent with -p")
    if "\n" in command or ";" in command.replace("\\;", ""):
        raise ValueError("one command per line, no command separators")


def quote(arg: str) -> str:
    """`arg` as one double-quoted argument of a control-mode command line: control bytes
    as tmux's `\\ooo` escapes (a command is one line, so a literal newline would end it),
    and `\\`, `"` and `$` (variables expand in double quotes) escaped."""
    out = ['"']
    for ch in arg:
        if ch in '\\"$':
            out.append("\\" + ch)
        elif ch < " " or ch == "\x7f":
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def tmux_base(socket: str | None, socket_path: str | None) -> list[str]:
    """`tmux -u` with the server selected: -S path, -L name, or the default server.

    `-u`: without it a client in a locale-less environment (an SSH exec channel) gets
    every control byte of a reply, tabs included, replaced by `_`.
    """
    if socket_path:
        return ["tmux", "-u", "-S", socket_path]
    if socket:
        return ["tmux", "-u", "-L", socket]
    return ["tmux", "-u"]


def parse_version(text: str) -> tuple[int, int]:
    """`tmux 3.3a` -> (3, 3); `tmux next-3.4` -> (3, 4); unknown -> (0, 0)."""
    m = re.search(r"(\d+)\.(\d+)", text)
    return (int(m[1]), int(m[2])) if m else (0, 0)


def attach_argv(base: list[str], session: str, version: tuple[int, int], pause_after: int) -> list[str]:
    """The control client's command line; tmux < 3.2 lacks -N and -f flags, so degrade."""
    if version >= (3, 2):
        flags = f"ignore-size,read-only,pause-after={pause_after}"
        return [*base, "-N", "-C", "attach-session", "-t", f"={session}", "-f", flags]
    return [*base, "-C", "attach-session", "-r", "-t", f"={session}"]


Handler = Callable[["ControlClient", Notification], Awaitable[None]]


class ControlClient:
    """One tmux control client attached (read-only) to one session.

    Notifications go to `handler` in order, awaited one at a time: a slow consumer
    slows reading, and tmux's pause-after (not our memory) absorbs it. The handler
    must not await `command()` itself (the reply is read by the same loop).
    """

    def __init__(self, channel: Channel, session: str, handler: Handler) -> None:
        self.channel = channel
        self.session = session
        self._handler = handler
        self._parser = ControlParser()
        self._pending: deque[asyncio.Future[Block]] = deque()
        self._write_lock = asyncio.Lock()
        self.closed = asyncio.Event()
        # tmux answers commands that arrive before attach-session finished as if no
        # session were attached (and may then exit): nothing is sent before this is set
        self.ready = asyncio.Event()
        self.exit_reason: str | None = None
        self._task = asyncio.create_task(self._read_loop(), name=f"tmux-control:{session}")

    async def _read_loop(self) -> None:
        try:
            while True:
                chunk = await self.channel.read(65536)
                if not chunk:
                    break
                for note in self._parser.feed(chunk):
                    if not self.ready.is_set() and isinstance(note, Block | Notice):
                        self.ready.set()  # the attach's own reply, or a notification after it
                    if isinstance(note, Block):
                        if note.flags & 1 and self._pending:
                            fut = self._pending.popleft()
                            if not fut.done():
                                fut.set_result(note)
                        continue
                    if isinstance(note, Exit):
                        self.exit_reason = note.reason or "exit"
                    await self._handler(self, note)
                # a read of buffered data does not suspend: without this, a busy pane
                # would keep every other task (other sessions, timers, signals) waiting
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            raise
        except Exception:  # a handler bug must not leave a zombie client behind
            log.exception("control client for session %r failed", self.session)
        finally:
            for fut in self._pending:
                if not fut.done():
                    fut.set_exception(TransportError(f"control client for session {self.session!r} closed"))
            self._pending.clear()
            self.closed.set()

    async def wait_ready(self, timeout: float) -> None:
        if self.ready.is_set():
            return
        waiters = [asyncio.ensure_future(self.ready.wait()), asyncio.ensure_future(self.closed.wait())]
        try:
            await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waiters:
                w.cancel()
        if not self.ready.is_set():
            why = "closed" if self.closed.is_set() else f"did not attach within {timeout:g}s"
            raise TransportError(f"control client for session {self.session!r} {why}")

    async def command(self, command: str, timeout: float = 10.0) -> Block:
        """Send one read command and wait for its reply block."""
        check_read_only(command)
        await self.wait_ready(timeout)
        if self.closed.is_set():
            raise TransportError(f"control client for session {self.session!r} closed")
        fut: asyncio.Future[Block] = asyncio.get_running_loop().create_future()
        async with self._write_lock:
            self._pending.append(fut)
            await self.channel.write(command.encode() + b"\n")
        try:
            block = await asyncio.wait_for(fut, timeout)
        except TimeoutError as exc:
            raise TransportError(f"tmux did not answer {command.split()[0]} within {timeout:g}s") from exc
        if not block.ok:
            raise CommandError(b" ".join(block.lines).decode("utf-8", "replace") or "tmux error")
        return block

    async def send_nowait(self, command: str) -> None:
        """Send a read command whose reply nobody waits for (flow control)."""
        check_read_only(command)
        if self.closed.is_set() or not self.ready.is_set():
            return
        fut: asyncio.Future[Block] = asyncio.get_running_loop().create_future()
        fut.add_done_callback(lambda f: f.exception() if not f.cancelled() else None)
        async with self._write_lock:
            self._pending.append(fut)
            with contextlib.suppress(TransportError):
                await self.channel.write(command.encode() + b"\n")

    async def close(self) -> None:
        await self.channel.close()
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(self._task), 3.0)
        if not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
