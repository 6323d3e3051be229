"""Network namespaces and veth pairs for the fleet harness (tests/support/fleet.py).

Each test host is a network namespace of its own (`ip netns`), joined to its neighbour by
a veth pair with a /30 on it, so the collector reaches it through a real interface that
`ip link set down` really takes away. Every namespace this harness makes is named
`pbf-<pid>-<host>`: the pid of the process that made it, so `sweep()` can tell a stale
run's namespaces (their maker is gone) from a live one's and remove them, with every
process still inside, before a new run starts. Needs root and iproute2.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

PREFIX = "pbf-"
CLONE_NEWNET = 0x40000000
T = TypeVar("T")


def unavailable() -> str | None:
    """Why namespaces cannot be made here (not root, no `ip`, the kernel refuses), or None."""
    if os.geteuid() != 0:
        return "the fleet harness needs root (ip netns, veth pairs)"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    probe = f"{PREFIX}probe-{os.getpid()}"
    res = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if res.returncode != 0:
        return f"ip netns add failed: {res.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def ip(*args: str) -> None:
    """Run `ip ARGS`; a failure raises with ip's own message."""
    res = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if res.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {res.stderr.strip()}")


def ns_name(host: str, owner: int | None = None) -> str:
    return f"{PREFIX}{owner if owner is not None else os.getpid()}-{host}"


def add(ns: str) -> None:
    ip("netns", "add", ns)
    ip("-n", ns, "link", "set", "lo", "up")


def veth(a_ns: str | None, a_name: str, a_addr: str, b_ns: str, b_name: str, b_addr: str) -> None:
    """A veth pair: `a_name` in `a_ns` (None: this namespace) and `b_name` in `b_ns`,
    each end up with its /30 address (`a_addr`, `b_addr` without the prefix length)."""
    on_a = ["-n", a_ns] if a_ns else []
    ip(*on_a, "link", "add", a_name, "type", "veth", "peer", "name", b_name, "netns", b_ns)
    ip(*on_a, "addr", "add", f"{a_addr}/30", "dev", a_name)
    ip("-n", b_ns, "addr", "add", f"{b_addr}/30", "dev", b_name)
    ip(*on_a, "link", "set", a_name, "up")
    ip("-n", b_ns, "link", "set", b_name, "up")


def link(ns: str | None, name: str, up: bool) -> None:
    """`ip link set NAME up|down` (in `ns`, or here): the real link drop."""
    ip(*(["-n", ns] if ns else []), "link", "set", name, "up" if up else "down")


def pids(ns: str) -> list[int]:
    res = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, timeout=30)
    return [int(p) for p in res.stdout.split() if p.isdigit()]


def kill_all(ns: str, timeout: float = 10.0) -> None:
    """SIGKILL every process inside `ns` (a reboot's first half, and cleanup)."""
    deadline = time.monotonic() + timeout
    while (left := pids(ns)) and time.monotonic() < deadline:
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def delete(ns: str) -> None:
    """Kill what runs inside, then remove the namespace (its veth ends go with it)."""
    kill_all(ns)
    subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)


def ours() -> list[str]:
    res = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30)
    return [line.split()[0] for line in res.stdout.splitlines() if line.startswith(PREFIX)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep() -> list[str]:
    """Remove the namespaces (and tmux sockets) of earlier runs whose maker is gone."""
    swept = []
    for ns in ours():
        owner = ns[len(PREFIX) :].split("-", 1)[0]
        if owner.isdigit() and not _alive(int(owner)):
            delete(ns)
            swept.append(ns)
    tmux_dir = Path(f"/tmp/tmux-{os.getuid()}")
    for sock in tmux_dir.glob(f"{PREFIX}*") if tmux_dir.is_dir() else []:
        owner = sock.name[len(PREFIX) :].split("-", 1)[0]
        if owner.isdigit() and not _alive(int(owner)):
            sock.unlink(missing_ok=True)
    return swept


def inside(ns: str, fn: Callable[[], T]) -> T:
    """Run `fn` in a thread that joined `ns` (setns is per thread, and the thread ends
    with its call, so nothing else of this process ever changes namespace)."""
    box: dict[str, object] = {}

    def run() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                box["err"] = OSError(ctypes.get_errno(), f"setns {ns}")
                return
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller's thread
            box["err"] = exc
        finally:
            os.close(fd)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join()
    if "err" in box:
        raise box["err"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


def listening(ns: str | None, addr: str, port: int) -> bool:
    """A TCP connection to addr:port from inside `ns` (None: here) is accepted."""

    def probe() -> bool:
        try:
            with socket.create_connection((addr, port), timeout=0.5):
                return True
        except OSError:
            return False

    return inside(ns, probe) if ns else probe()
