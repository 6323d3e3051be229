"""`report()`: the smallest way for a Python program to tell paneboard its state.

It writes to the controlling terminal (`/dev/tty`), not to stdout, because the
programs that report most — agent hooks — have their stdout captured by the agent;
`$PANEBOARD_TTY` (or `tty=`) points it elsewhere (a pane's pty path, a log file).
All encoding and every limit check is `paneboard_protocol.encode`'s.

THINKTERM_AGENT knows only working/idle/blocked (TA-7). `done` is sent there as
`idle` (the turn is over and the agent waits for input, which is what TA-16 calls
idle); `error` and `clear` have no honest form, so `protocol="thinkterm"` refuses
them, and `protocol="both"` sends them through OSC 7501 only (plus, for `error`,
`idle` as the contract, since the agent is no longer working).
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Mapping

from paneboard_protocol.encode import encode_agent, encode_report
from paneboard_protocol.events import AgentState

PROTOCOLS = ("osc7501", "thinkterm", "both")
#: a report's state as a THINKTERM_AGENT contract says it (a contract has no done)
THINKTERM_STATE: dict[str, AgentState] = {
    "working": "working",
    "idle": "idle",
    "blocked": "blocked",
    "done": "idle",
}


class ReportError(Exception):
    """The report could not be written (no terminal, unwritable path); one line for the user."""


def build(
    state: str,
    *,
    kind: str | None = None,
    msg: str | None = None,
    title: str | None = None,
    id: str | None = None,
    app: str | None = None,
    progress: int | None = None,
    protocol: str = "osc7501",
    agent: str | None = None,
    session: str | None = None,
    ts: int | None = None,
    ended: bool = False,
) -> bytes:
    """The bytes `report()` writes; raises `ValueError` for anything a reader would drop.

    `ended` marks the contract `ended=1` (the session is over, TA-15/RI-6); with
    `clear` it sends the contract as `idle;ended=1`, so "forget me" reaches both readers.
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}, not {protocol!r}")
    if ended and protocol == "osc7501":
        raise ValueError("--ended belongs to THINKTERM_AGENT: use --protocol thinkterm or both")
    out = b""
    if protocol in ("osc7501", "both"):
        out += encode_report(state, kind=kind, msg=msg, title=title, id=id, app=app, progress=progress)
    if protocol in ("thinkterm", "both"):
        contract_state = THINKTERM_STATE.get(state)
        if contract_state is None and state == "clear" and ended:
            contract_state = "idle"
        if contract_state is None:
            if protocol == "thinkterm":
                raise ValueError(
                    f"state {state!r} cannot be sent as THINKTERM_AGENT (it knows only working, idle, "
                    "blocked; done is sent as idle): use --protocol osc7501 or both"
                )
            if state == "error":
                contract_state = "idle"
        if contract_state is not None:
            name = agent or app
            if not name:
                raise ValueError("THINKTERM_AGENT needs an agent name: give --agent (or --app)")
            out += encode_agent(
                name,
                contract_state,
                session=session,
                ts=int(time.time()) if ts is None else ts,
                ended=ended,
            )
    return out


#: how far up the process tree `ancestor_tty` looks
MAX_ANCESTORS = 32


def _tty_of(pid: int) -> tuple[int, int] | None:
    """(parent pid, controlling terminal device number or 0) from /proc/PID/stat."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return int(fields[1]), int(fields[4])
    except (OSError, ValueError, IndexError):
        return None


def ancestor_tty(pid: int | None = None) -> str | None:
    """The terminal of the nearest ancestor that has one (Linux /proc), or None.

    Why: an agent may start its hooks in a session of their own, with no controlling
    terminal (the real Claude Code 2.1.328 does: setsid, sockets for stdin and stdout),
    while the agent itself still runs in the pane. The report belongs in that pane.
    The path is one of the ancestor's own open files that is its terminal (so it is the
    device the kernel names, never a guess from the device number)."""
    pid = os.getppid() if pid is None else pid
    for _ in range(MAX_ANCESTORS):
        if pid <= 1:
            return None
        got = _tty_of(pid)
        if got is None:
            return None
        ppid, dev = got
        if dev:
            for fd in (0, 1, 2):
                try:
                    path = os.readlink(f"/proc/{pid}/fd/{fd}")
                    st = os.stat(path)
                except OSError:
                    continue
                if stat.S_ISCHR(st.st_mode) and st.st_rdev == dev:
                    return path
            return None  # it has a terminal but none of its standard files is it: do not guess
        pid = ppid
    return None


def open_tty(tty: str | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Open the terminal reports go to: `tty`, else `$PANEBOARD_TTY`, else `/dev/tty`,
    else (no controlling terminal) the nearest ancestor's terminal (`ancestor_tty`)."""
    env = os.environ if environ is None else environ
    path = tty or env.get("PANEBOARD_TTY") or "/dev/tty"
    flags = os.O_WRONLY | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    if path != "/dev/tty":
        flags |= os.O_APPEND | os.O_CREAT  # a plain file given as PANEBOARD_TTY is a log: add to it
    try:
        return os.open(path, flags, 0o600)
    except OSError as exc:
        if path == "/dev/tty" and exc.errno in (errno.ENXIO, errno.ENOENT, errno.EIO):
            other = ancestor_tty()
            if other is not None:
                try:
                    return os.open(other, flags)
                except OSError:
                    pass
            raise ReportError(
                "no controlling terminal to write to (set PANEBOARD_TTY to the pane's tty)"
            ) from None
        raise ReportError(f"cannot open {path}: {exc.strerror}") from None


def write_all(fd: int, data: bytes) -> None:
    """Write every byte (a terminal may accept a long report in pieces)."""
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except InterruptedError:  # pragma: no cover - PEP 475 retries for us
            continue
        view = view[n:]


def report(
    state: str,
    *,
    kind: str | None = None,
    msg: str | None = None,
    title: str | None = None,
    id: str | None = None,
    app: str | None = None,
    progress: int | None = None,
    protocol: str = "osc7501",
    agent: str | None = None,
    session: str | None = None,
    ended: bool = False,
    tty: str | None = None,
) -> bytes:
    """Encode one report and write it to the terminal in a single write; return the bytes.

    Raises `ValueError` for an invalid report and `ReportError` when there is no
    terminal to write to. Nothing is written unless the whole report is valid.
    """
    data = build(
        state,
        kind=kind,
        msg=msg,
        title=title,
        id=id,
        app=app,
        progress=progress,
        protocol=protocol,
        agent=agent,
        session=session,
        ended=ended,
    )
    fd = open_tty(tty)
    try:
        write_all(fd, data)
    except OSError as exc:
        raise ReportError(f"cannot write the report: {exc.strerror}") from None
    finally:
        os.close(fd)
    return data
