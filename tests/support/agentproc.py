"""`paneboard agent --stdout ...` as a process of its own, with its JSON lines collected."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from support.forked import spawn

if TYPE_CHECKING:
    from support.tmux import TmuxServer


class AgentProcess:
    """Starts the real CLI (forked ready-loaded, support.forked); a thread collects stdout
    lines (parsed) and stderr text."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.argv = ["agent", "--stdout", *args]
        full_env = dict(os.environ)
        full_env.pop("TMUX", None)
        if env:
            full_env.update(env)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            self.proc = spawn(self.argv, env=full_env, stdout=out_w, stderr=err_w)
        finally:
            os.close(out_w)
            os.close(err_w)
        self.lines: list[dict[str, Any]] = []
        # `--explain`'s lines for discarded reports: kept apart, so `lines` stays the
        # panes' lines (a real agent may write what the spec discards at any time)
        self.discarded: list[dict[str, Any]] = []
        self.raw: list[str] = []
        self.stderr = ""
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._read_out, args=(os.fdopen(out_r, "rb"),), daemon=True),
            threading.Thread(target=self._read_err, args=(os.fdopen(err_r, "rb"),), daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read_out(self, out: IO[bytes]) -> None:
        with out:
            for line in out:
                text = line.decode("utf-8", "replace")
                obj = json.loads(text)
                with self._lock:
                    self.raw.append(text)
                    (self.discarded if "discarded" in obj else self.lines).append(obj)

    def _read_err(self, err: IO[bytes]) -> None:
        with err:
            for line in err:
                with self._lock:
                    self.stderr += line.decode("utf-8", "replace")

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.lines)

    def latest(self, pane: str) -> dict[str, Any] | None:
        found = None
        for obj in self.snapshot():
            if obj["pane"] == pane:
                found = obj
        return found

    def wait_line(self, pred: Callable[[dict[str, Any]], bool], timeout: float = 15.0, what: str = "a line"):
        """The first line (from the beginning) matching `pred`, waiting up to `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            for obj in self.snapshot():
                if pred(obj):
                    return obj
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out waiting for {what}; lines:\n{''.join(self.raw)}\nstderr:\n{self.stderr}"
                )
            if self.proc.poll() is not None and not any(pred(o) for o in self.snapshot()):
                time.sleep(0.2)  # let the reader threads finish
                if not any(pred(o) for o in self.snapshot()):
                    raise AssertionError(
                        f"agent exited ({self.proc.returncode}) before {what}; stderr:\n{self.stderr}"
                    )
            time.sleep(0.05)

    def wait_exit(self, timeout: float = 30.0) -> int:
        rc = self.proc.wait(timeout=timeout)
        for t in self._threads:
            t.join(timeout=5)
        return rc

    needed_kill = False

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after 10 s (`needed_kill` records that it came to that)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.needed_kill = True
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        for t in self._threads:
            t.join(timeout=5)
        return self.proc.returncode


def polled(agent: AgentProcess, tmux_server: TmuxServer, times: int, session: str = "main") -> None:
    """Returns once `times` full polls have run since the call, and all but the last
    have been written out.

    A new window makes the collector list every pane and run `ps` for all of them
    (a full poll); its first line is written when that poll ends. Each window is opened
    only after the one before it has its line, so everything a poll decided about the
    other panes has been written by the time the next one's line is seen: the polls a
    fixed sleep only hoped had happened, witnessed (the windows join `session`).
    """
    for n in range(times):
        pane = tmux_server.new_window(session, f"witness{n}")
        agent.wait_line(lambda o, pane=pane: o["pane"] == pane, what=f"poll witness {n}")
