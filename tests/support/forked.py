"""`paneboard serve` and `paneboard agent` processes forked from a pre-loaded parent.

A test that starts a server or a collector needs it as a process of its own: it is
stopped with SIGTERM, killed mid-write, restarted on the same database, read from its
log. What it does not need is a fresh interpreter importing FastAPI, SQLAlchemy and
asyncssh again each time, which is most of a server's start, in CPU as well as time.

So these come from a zygote: one small process per test process (`python forked.py`),
single-threaded (pytest's own process has threads, and forking a process with threads
is not safe), which imports those modules once and then, for each request on its
socket, forks a child that runs `paneboard.cli.main(argv)` (what the `paneboard` script
runs) in a new session, with the caller's environment, working directory, umask and
log (or pipes, passed as file descriptors) as stdout and stderr. The zygote reports each
child's pid, and its exit status when it ends (a pidfd per child, so no signal
handler); it kills what it started when its caller goes.

`python -m paneboard.cli`, the console script and an interpreter's start-up are tested
where they are the subject (tests/paneboard: the demo and the installed package).
`Forked` answers the `subprocess.Popen` calls the tests make.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

MAX_MESSAGE = 1 << 20  # a request: the argv and the whole environment

#: what a server and a collector import, some of it lazily (a module missing here is only
#: imported in the child, as before)
PRELOAD = [
    "paneboard.cli",
    "paneboard_server.cli",
    "paneboard_server.serve",
    "paneboard_server.app",
    "aiosqlite",
    "asyncpg",
    "sqlalchemy.dialects.postgresql.asyncpg",
    "sqlalchemy.dialects.sqlite.aiosqlite",
    "anyio._backends._asyncio",
    "py_vapid",
    "pydantic.v1",
    "uvloop",
    "uvicorn",
    "uvicorn.loops.uvloop",
    "uvicorn.lifespan.on",
    "uvicorn.protocols.http.httptools_impl",
    "uvicorn.protocols.websockets.websockets_sansio_impl",
    "paneboard_agent.cli",
    "paneboard_agent.collector",
    "asyncssh",
]


class Forked:
    """One forked `paneboard` command, with the `Popen` methods the tests use."""

    def __init__(self, args: Sequence[str], n: int, zygote: _Zygote) -> None:
        self.args = list(args)
        self.pid = zygote.pids[n]
        self._n = n  # the zygote's count of it: a pid may be used again by a later child
        self._zygote = zygote

    @property
    def returncode(self) -> int | None:
        return self._zygote.exits.get(self._n)

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        with self._zygote.changed:
            if not self._zygote.changed.wait_for(lambda: self._n in self._zygote.exits, timeout):
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return self._zygote.exits[self._n]

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:  # its pid may already be another process's
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class _Zygote:
    """The caller's side: a request (and the file descriptors it names) in, pids and exit
    statuses out (a reader thread), over a socket pair (SCM_RIGHTS carries the fds)."""

    def __init__(self) -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = subprocess.Popen(
            [sys.executable, __file__, str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        theirs.close()
        self.sock = mine
        self.changed = threading.Condition()
        self.exits: dict[int, int] = {}  # the nth child -> its exit status
        self.pids: list[int] = []  # the nth child's pid
        self.lock = threading.Lock()  # one request at a time: replies come in order
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while data := self.sock.recv(MAX_MESSAGE):
            msg = json.loads(data)
            with self.changed:
                if "pid" in msg:
                    self.pids.append(msg["pid"])
                else:
                    self.exits[msg["exit"]] = msg["code"]
                self.changed.notify_all()
        with self.changed:  # the zygote went: nothing more will be told
            self.pids.append(-1)
            self.changed.notify_all()

    def spawn(self, request: dict[str, Any], fds: list[int]) -> int:
        """The child's number (its pid is `pids[n]`)."""
        with self.lock:
            with self.changed:
                seen = len(self.pids)
            socket.send_fds(self.sock, [json.dumps(request).encode()], fds)
            with self.changed:
                if not self.changed.wait_for(lambda: len(self.pids) > seen, 60):
                    raise RuntimeError("the zygote did not fork in 60 s")
                pid = self.pids[seen]
        if pid < 0:
            raise RuntimeError(f"the zygote has exited ({self.proc.poll()})")
        return seen


_zygote: _Zygote | None = None
_zygote_lock = threading.Lock()


def spawn(
    argv: Sequence[str],
    log: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    truncate: bool = False,
    stdout: int | None = None,
    stderr: int | None = None,
) -> Forked:
    """Start `paneboard *argv` as a process of its own (a session leader, so killpg
    reaches it and what it starts). Its output goes to `log`, appended (or replacing it:
    `truncate`), or to the file descriptors `stdout` and `stderr` (the caller closes its
    own copies). It gets this process's umask, as a child of it would."""
    global _zygote
    with _zygote_lock:
        if _zygote is None or _zygote.proc.poll() is not None:
            _zygote = _Zygote()
        zygote = _zygote
    fds = [fd for fd in (stdout, stderr) if fd is not None]
    if fds and len(fds) != 2:
        raise ValueError("stdout and stderr come together")
    request = {
        "argv": list(argv),
        "env": dict(os.environ if env is None else env),
        "cwd": str(cwd or os.getcwd()),
        "log": str(log) if log else os.devnull,
        "truncate": bool(truncate and log),
        "umask": _umask(),
    }
    return Forked(argv, zygote.spawn(request, fds), zygote)


def _umask() -> int:
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


# --- the zygote itself (run as a script) ------------------------------------------------


def _child(request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: the caller's world, then the command; never returns."""
    code = 1
    try:
        os.setsid()
        os.umask(request["umask"])
        if fds:
            out, err = fds
        else:
            mode = os.O_TRUNC if request["truncate"] else os.O_APPEND
            out = err = os.open(request["log"], os.O_WRONLY | os.O_CREAT | mode, 0o666)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.closerange(3, 1 << 16)  # the zygote's pipes and pidfds are not the command's
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's own streams
        sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
        sys.argv = ["paneboard", *request["argv"]]
        from paneboard.cli import main

        code = main(request["argv"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _serve(fd: int) -> None:
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    sock = socket.socket(fileno=fd)
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ, None)
    children: dict[int, tuple[int, int]] = {}  # pidfd -> (pid, the nth child)
    forked = 0

    def say(msg: dict[str, int]) -> None:
        sock.send(json.dumps(msg).encode())

    try:
        while True:
            for key, _ in sel.select():
                if key.data is None:
                    data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 2)
                    if not data:
                        return  # the caller went
                    pid = os.fork()
                    if pid == 0:
                        _child(json.loads(data), fds)
                    for passed in fds:
                        os.close(passed)
                    pidfd = os.pidfd_open(pid)
                    children[pidfd] = (pid, forked)
                    forked += 1
                    sel.register(pidfd, selectors.EVENT_READ, pid)
                    say({"pid": pid})
                else:
                    sel.unregister(key.fd)
                    pid, n = children.pop(key.fd)
                    _, status = os.waitpid(pid, 0)
                    os.close(key.fd)
                    say({"exit": n, "code": os.waitstatus_to_exitcode(status)})
    finally:
        for pid, _ in children.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
