"""A real OpenSSH sshd on 127.0.0.1, with throw-away keys, for tests that need one.

Everything lives in one temporary directory: host key, a client key that is
authorised, a second client key that is not, a known_hosts file with the right host
key and one with a wrong key. `stop()` kills the whole process group (listener and
per-connection processes), which is what "sshd died" looks like to a client;
`start()` brings it back on the same port.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"

#: A session runs the user's login shell, and bash run by sshd reads ~/.bashrc. On these
#: machines root's runs `pyenv init -`, whose `pyenv rehash` takes a lock file and waits
#: up to 60 s for one already there. A session killed mid-rehash (a test stopping sshd
#: or a host) leaves that lock, and every later session then waited a minute before its
#: command ran: once, four SSH tests failed on it, one after another. The tests'
#: sessions give up on the lock at once instead.
SESSION_ENV = "SetEnv PYENV_REHASH_TIMEOUT=0"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "paneboard-test", "-f", str(path)],
        check=True,
        capture_output=True,
    )


class Sshd:
    def __init__(
        self, root: Path, max_sessions: int = 10, log_level: str = "ERROR", extra: tuple[str, ...] = ()
    ) -> None:
        self.root = root
        self.port = free_port()
        self.user = os.environ.get("USER") or "root"
        root.mkdir(parents=True, exist_ok=True)
        self.host_key = root / "host_ed25519"
        self.client_key = root / "client_ed25519"
        self.wrong_client_key = root / "wrong_client_ed25519"
        self.other_host_key = root / "other_host_ed25519"
        for k in (self.host_key, self.client_key, self.wrong_client_key, self.other_host_key):
            _keygen(k)
        self.authorized_keys = root / "authorized_keys"
        self.authorized_keys.write_text(Path(f"{self.client_key}.pub").read_text())
        self.known_hosts = root / "known_hosts"
        self.known_hosts.write_text(self._known_line(self.host_key))
        self.wrong_known_hosts = root / "known_hosts_wrong"
        self.wrong_known_hosts.write_text(self._known_line(self.other_host_key))
        self.config = root / "sshd_config"
        self.config.write_text(
            "\n".join(
                [
                    f"Port {self.port}",
                    "ListenAddress 127.0.0.1",
                    f"HostKey {self.host_key}",
                    "UsePAM no",
                    "StrictModes no",
                    "PermitRootLogin yes",
                    f"AuthorizedKeysFile {self.authorized_keys}",
                    "PubkeyAuthentication yes",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "PidFile none",
                    f"MaxSessions {max_sessions}",
                    "MaxStartups 100:30:200",
                    f"LogLevel {log_level}",
                    SESSION_ENV,
                    *extra,
                    "",
                ]
            )
        )
        self.log = root / "sshd.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def _known_line(self, key: Path) -> str:
        pub = Path(f"{key}.pub").read_text().split()
        return f"[127.0.0.1]:{self.port} {pub[0]} {pub[1]}\n"

    @property
    def spec(self) -> str:
        return f"{self.user}@127.0.0.1:{self.port}"

    def start(self, timeout: float = 10.0) -> Sshd:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation directory
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [SSHD, "-D", "-e", "-f", str(self.config)], stdout=log, stderr=log, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited: {self.log.read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("sshd did not start listening")

    def stop(self) -> None:
        """Kill sshd and every connection it serves (SIGKILL: no goodbye to clients)."""
        if self.proc is None:
            return
        # per-connection sshd processes call setsid(), so a process-group kill misses
        # them: find the listener's descendants by parent pid instead
        for pid in [*_descendants(self.proc.pid), self.proc.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        self.proc = None

    def ssh_args(self) -> list[str]:
        return [
            "--ssh",
            self.spec,
            "--identity",
            str(self.client_key),
            "--known-hosts",
            str(self.known_hosts),
        ]


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out
