"""Is the server answering on a port the one a test started?

A test picks a free port (bind to port 0, read it, close) and then starts a server on
it. Between the two, another test process (pytest-xdist's workers) can be given the same
port and start its own server there first. Our server then fails to bind and exits, but
until its exit is seen, a health check on the port is answered by the other one, and the
test would go on against a server with another database. So a start is ready only when
the listening socket on the port belongs to the process started (or to a process of its
session: a wrapper's child).
"""

from __future__ import annotations

import os
from pathlib import Path

LISTEN = "0A"  # the TCP state column of /proc/net/tcp


def _listening_inodes(pid: int, port: int) -> set[str]:
    """The inodes of the sockets listening on `port` in `pid`'s network namespace."""
    found = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                found.add(fields[9])
    return found


def _session_pids(sid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getsid(int(entry.name)) == sid:
                    pids.append(int(entry.name))
            except OSError:  # gone meanwhile
                continue
    return pids


def listens(pid: int, port: int) -> bool:
    """Whether `pid` (the leader of its own session), or a process of its session, holds
    the socket listening on `port`."""
    sockets = {f"socket:[{inode}]" for inode in _listening_inodes(pid, port)}
    if not sockets:
        return False
    for member in _session_pids(pid):
        try:
            fds = list(Path(f"/proc/{member}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd) in sockets:
                    return True
            except OSError:
                continue
    return False
