"""A private tmux server in a network namespace of its own, a model-API stand-in inside it,
and the real collector watching it: the stage on which the real agent CLIs are run.

Why a network namespace: the real CLIs phone home (telemetry, update checks, feature
flags) in ways their switches may not all cover. In a fresh namespace only loopback
exists, so no byte can leave the machine whatever a CLI tries; the stand-in model API
listens on that namespace's 127.0.0.1, started in a tmux window so it shares it. The
collector reaches tmux through its Unix socket, which a network namespace does not
separate.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
from support.agentproc import AgentProcess
from support.tmux import SHELL, TmuxServer
from support.wait import wait_for

HERE = Path(__file__).parent
MODEL_API = HERE / "model_api.py"
FIXTURES = HERE.parent / "protocol" / "fixtures" / "real"
PANEBOARD = str(Path(sys.executable).parent / "paneboard")
WIDTH, HEIGHT = 120, 40
TITLE = re.compile(rb"\x1b\][02];([^\x07\x1b]*)(?:\x07|\x1b\\)")


#: Variables by which programs tell they run under CI (the `ci-info` package's and
#: alike). Gemini CLI, seeing `CI=true`, starts non-interactive and exits waiting for
#: stdin; a user's pane has none of them, so the agents' panes do not either.
CI_MARKERS = ("CI", "CONTINUOUS_INTEGRATION", "BUILD_NUMBER", "BUILD_ID", "RUN_ID")
CI_PREFIXES = (
    "CI_", "GITHUB_", "GITLAB_", "BUILDKITE", "CIRCLE", "TRAVIS", "JENKINS", "TEAMCITY", "BITBUCKET_",
)  # fmt: skip


def without_ci(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in CI_MARKERS and not k.startswith(CI_PREFIXES)}


class IsolatedTmux(TmuxServer):
    """TmuxServer whose server process (and so every pane) lives in a new network namespace."""

    def start(self, session: str = "main", command: str = SHELL) -> IsolatedTmux:
        self.env = without_ci(self.env)
        if shutil.which("unshare") is None or shutil.which("ip") is None:
            raise RuntimeError("the real-agent tests need unshare(1) and ip(8) to isolate the network")
        inner = " ".join(
            shlex.quote(a)
            for a in [
                *self.base(),
                "new-session",
                "-d",
                "-s",
                session,
                "-x",
                str(WIDTH),
                "-y",
                str(HEIGHT),
                command,
            ]
        )
        argv = ["unshare", "--net", "sh", "-c", f"ip link set lo up && {inner}"]
        if os.getuid() != 0:
            argv[1:1] = ["--map-root-user"]
        res = subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=20, check=False)
        if res.returncode != 0:
            raise RuntimeError(f"cannot start tmux in a network namespace: {res.stderr.strip()}")
        self.pid = int(self.cmd("display-message", "-p", "#{pid}").strip())
        self.cmd("set-option", "-g", "default-command", SHELL)
        self.cmd("set-option", "-g", "remain-on-exit", "on")
        self.cmd("set-option", "-g", "history-limit", "2000")
        return self

    def netns(self) -> str | None:
        """The server's network namespace (None if it is gone)."""
        return _netns_of(self.pid) if self.pid is not None else None


class ModelApi:
    """The stand-in server (model_api.py) in a window of the isolated tmux server."""

    def __init__(self, tmux: IsolatedTmux, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        cmd = f"{shlex.quote(sys.executable)} {shlex.quote(str(MODEL_API))} {shlex.quote(str(root))}"
        tmux.new_window("main", "model-api", f"{cmd} 2> {shlex.quote(str(root / 'stderr'))}")
        port = wait_for(
            lambda: (root / "port").exists() and (root / "port").read_text(),
            timeout=30,
            what="the model-API stand-in to listen",
        )
        self.port = int(port)
        self.url = f"http://127.0.0.1:{self.port}"

    def requests(self) -> list[dict[str, Any]]:
        path = self.root / "requests.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def wait_held(self, n: int, timeout: float = 90.0) -> None:
        """Wait until the agent's n-th turn request arrived (and is being held)."""
        wait_for(
            lambda: (self.root / f"held-{n}").exists(),
            timeout=timeout,
            what=f"turn request {n} at the model API; requests: {self._paths()}",
        )

    def held(self, n: int) -> bool:
        return (self.root / f"held-{n}").exists()

    def release(self, n: int) -> None:
        (self.root / f"go-{n}").touch()

    def release_all(self) -> None:
        for n in range(1, 10):
            self.release(n)

    def _paths(self) -> list[str]:
        return [r["path"] for r in self.requests()]


class Stage:
    """One isolated tmux server, one model API, one collector, one pane for the agent."""

    def __init__(self, tmp: Path, where: tuple[str, ...] = ("--local",)) -> None:
        """`where`: how the collector reaches the tmux server, `--local` or a loopback
        sshd's `--ssh` arguments (the server's socket is in tmux's default directory, so
        a session over SSH finds it)."""
        self.tmp = tmp
        self.tmux = IsolatedTmux().start()
        self.api = ModelApi(self.tmux, tmp / "api")
        # --explain: every line also names the process taken for the program, and why
        self.collector = AgentProcess(*where, "--tmux-socket", self.tmux.name, "--explain", env=self.tmux.env)
        self.pane = ""
        self.screens: dict[str, str] = {}
        self.gaps: list[str] = []

    def open(self, command: str, env: dict[str, str], cwd: Path) -> str:
        """A new window running `command` (by bash) in `cwd` with `env` added."""
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        # The command waits for one line, so the raw capture is attached before its first byte.
        line = f"read _gate; cd {shlex.quote(str(cwd))} && exec env {exports} {command}"
        self.pane = self.tmux.new_window("main", "agent", f"bash --noprofile --norc -c {shlex.quote(line)}")
        self.raw = self.tmp / "pane.raw"
        self.tmux.cmd("pipe-pane", "-t", self.pane, f"cat >> {shlex.quote(str(self.raw))}")
        # ... and the collector follows the pane before it does: one that starts late has
        # missed what was written before (tmux keeps no raw history), a start-up report too.
        self.collector.wait_line(lambda o: o["pane"] == self.pane, timeout=30, what="the pane's first line")
        self.keys("Enter")
        return self.pane

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.tmux.cmd("send-keys", "-t", self.pane, *(["-l"] if literal else []), *keys)

    def press_until(
        self,
        keys: list[str],
        done: Callable[[], object],
        what: str,
        tries: int = 6,
        each: float = 5.0,
        literal: bool = False,
    ) -> None:
        """Send `keys`, wait up to `each` s for `done`; again, up to `tries` times.

        Real CLIs drop keys that arrive while they are still setting up a prompt (Claude
        Code ignores keys for a moment after showing a permission dialog, so that a key
        meant for something else does not approve it), so "pressed" is proved by the
        program's reaction, not by send-keys returning.
        """
        for _ in range(tries):
            self.keys(*keys, literal=literal)
            try:
                wait_for(done, timeout=each, interval=0.1, what=what)
                return
            except AssertionError:
                continue
        raise AssertionError(f"no reaction to {keys} ({what})\n--- screen ---\n{self.screen()}")

    def screen(self) -> str:
        return self.tmux.cmd("capture-pane", "-p", "-t", self.pane)

    def latest(self) -> dict[str, Any] | None:
        return self.collector.latest(self.pane)

    def wait_screen(self, pred: Callable[[str], bool], timeout: float = 60.0, what: str = "a screen") -> str:
        try:
            return wait_for(
                lambda: (s := self.screen()) and pred(s) and s, timeout=timeout, interval=0.1, what=what
            )
        except AssertionError as e:
            raise AssertionError(f"{e}\n--- screen ---\n{self.screen()}") from None

    def wait_class(self, want: dict[str, Any], timeout: float = 60.0, what: str = "") -> dict[str, Any]:
        """Wait until the collector's latest line for the pane has every field of `want`."""

        def ok() -> dict[str, Any] | None:
            cur = self.latest()
            return cur if cur and all(cur.get(k) == v for k, v in want.items()) else None

        try:
            return wait_for(ok, timeout=timeout, interval=0.1, what=what or f"classification {want}")
        except AssertionError as e:
            raise AssertionError(
                f"{e}\nlatest: {self.latest()}\n--- screen ---\n{self.screen()}\n"
                f"--- model API requests: {self.api._paths()}"
            ) from None

    def check(self, want: dict[str, Any], timeout: float, what: str) -> None:
        """Like wait_class, but a miss is recorded in `gaps` and the walk goes on, so one
        test names every step a real program is classified wrong at (then `assert not gaps`)."""
        try:
            self.wait_class(want, timeout, what)
        except AssertionError:
            cur = self.latest() or {}
            got = {k: cur.get(k) for k in ("agent", "state", "kind", "source", "msg")}
            self.gaps.append(f"{what}: wanted {want}, got {got}")

    def save(self, agent: str, state: str) -> str:
        """Keep the screen of this state; with PANEBOARD_RECORD_REAL=1 also write it as the
        fixture tests/protocol/fixtures/real/<agent>/<state>.txt (the manifests' unit tests
        read those; recording is a deliberate act, not a side effect of every run)."""
        text = self.screen()
        title = self.title()
        self.screens[state] = text
        (self.tmp / f"{agent}-{state}.txt").write_text(text)
        if os.environ.get("PANEBOARD_RECORD_REAL") == "1":
            out = FIXTURES / agent
            out.mkdir(parents=True, exist_ok=True)
            (out / f"{state}.txt").write_text(text)
            (out / f"{state}.title").unlink(missing_ok=True)
            if title is not None:
                (out / f"{state}.title").write_text(title)
        return text

    def title(self) -> str | None:
        """The pane's title as tmux holds it now, if the program ever set one (OSC 0/2 seen in
        its raw output; until then tmux shows its own default, which the classifier never reads)."""
        raw = self.raw.read_bytes() if self.raw.exists() else b""
        if not TITLE.search(raw):
            return None
        return self.tmux.cmd("display-message", "-p", "-t", self.pane, "#{pane_title}").rstrip("\n")

    def walk(self) -> list[tuple[str, str | None, str | None]]:
        """(state, kind, source) as the collector printed them for the pane, repeats collapsed."""
        out: list[tuple[str, str | None, str | None]] = []
        for line in self.collector.snapshot():
            step = (line["state"], line["kind"], line["source"])
            if line["pane"] == self.pane and (not out or out[-1] != step):
                out.append(step)
        return out

    def states(self) -> list[str]:
        """The pane's states as the collector printed them, repeats collapsed, from the
        program's first (the lines before it are the shell that waits to start it)."""
        out: list[str] = []
        for line in self.collector.snapshot():
            fresh = not out or out[-1] != line["state"]
            if line["pane"] == self.pane and fresh and (out or line["state"] is not None):
                out.append(line["state"])
        return out

    def close(self) -> None:
        self.api.release_all()
        self.collector.stop()
        netns = self.tmux.netns()
        self.tmux.kill()
        if netns is not None:
            kill_namespace(netns)


class _Sink:
    """Where the in-process collector's pane updates go (kept, for tests that look)."""

    def __init__(self) -> None:
        self.updates: list[Any] = []

    async def pane_changed(self, update: Any) -> None:
        self.updates.append(update)

    async def pane_gone(self, key: Any, t: float) -> None:
        pass

    async def host_status(self, host: str, reachable: bool, t: float, error: str | None) -> None:
        pass

    async def host_health(self, host: str, health: object) -> None:
        return None  # the link's health is not what this test reads


class Page:
    """The real collector run in-process on the stage's tmux server, with `--allow-input`,
    seen as a pane's page sees it: `side` is every screen and `answered` it sends (the
    messages the server would relay), `watch` and `answer` are what the server sends it.
    Its own event loop runs in a thread, so a test or bench drives it synchronously."""

    def __init__(self, stage: Stage) -> None:
        from paneboard_agent.collector import Collector, Options, TmuxTarget
        from paneboard_agent.transport import LocalTransport
        from paneboard_protocol.rules import load_rules

        self.stage = stage
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.sink = _Sink()
        self.side: list[dict[str, Any]] = []
        target = TmuxTarget(LocalTransport("here"), socket=stage.tmux.name, allow_input=True)
        self.collector = Collector(
            [target],
            self.sink,
            Options(rules=load_rules(None)),
            side=lambda m: self.side.append(msgspec.to_builtins(m)),  # as sent
        )
        self.running = asyncio.run_coroutine_threadsafe(self.collector.run(), self.loop)

    @property
    def key(self) -> Any:
        from paneboard_protocol.pane import PaneKey

        return PaneKey("here", self.stage.tmux.name, self.stage.pane)

    def watch(self) -> None:
        from paneboard_protocol import wire
        from paneboard_protocol.server_messages import decode

        asyncio.run_coroutine_threadsafe(
            self.collector.command(decode(wire.encode(wire.watch(self.key)))), self.loop
        ).result(20)

    def answer(self, request: str, fingerprint: str, answer: str = "yes") -> str:
        """Tap `answer` on the prompt whose fingerprint the page holds; the outcome."""
        from paneboard_protocol import wire
        from paneboard_protocol.server_messages import decode

        msg = decode(
            wire.encode(wire.answer(request, self.key, fingerprint, time.time() + 60, answer=answer))
        )
        asyncio.run_coroutine_threadsafe(self.collector.command(msg), self.loop).result(30)
        return str(next(m["outcome"] for m in self.side if m["type"] == "answered" and m["id"] == request))

    def send(self, request: str, fingerprint: str, **kind: Any) -> str:
        """Send a follow-up (`text=`) or a key (`press=`, `process=`) on the screen whose
        fingerprint the page holds, as the server relays it; the outcome."""
        from paneboard_protocol import wire
        from paneboard_protocol.server_messages import decode

        msg = decode(wire.encode(wire.answer(request, self.key, fingerprint, time.time() + 60, **kind)))
        asyncio.run_coroutine_threadsafe(self.collector.command(msg), self.loop).result(30)
        return str(next(m["outcome"] for m in self.side if m["type"] == "answered" and m["id"] == request))

    def screens(self, since: int = 0) -> list[dict[str, Any]]:
        return [m for m in self.side[since:] if m["type"] == "screen"]

    def latest(self, answers: bool = False) -> dict[str, Any] | None:
        return next(
            (m for m in reversed(self.side) if m["type"] == "screen" and (m["answers"] or not answers)), None
        )

    def close(self) -> None:
        self.running.cancel()
        time.sleep(0.5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def _netns_of(pid: int | str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def kill_namespace(netns: str, timeout: float = 10.0) -> None:
    """SIGKILL every process left in the test's own network namespace.

    Some real CLIs outlive their pane: Gemini CLI ignores the hang-up tmux sends, Codex
    can start a daemon that re-parents to init. Every process in this namespace was
    started by this test's tmux server (the namespace was made for it), so this is
    exactly the set to end, by pid; never our own namespace.
    """
    if netns == _netns_of("self"):
        return
    deadline = time.monotonic() + timeout
    while True:
        left = [int(p) for p in os.listdir("/proc") if p.isdigit() and _netns_of(p) == netns]
        if not left or time.monotonic() > deadline:
            return
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)


def wait_until(pred: Callable[[], object], timeout: float, what: str) -> object:
    return wait_for(pred, timeout=timeout, interval=0.1, what=what)


__all__ = ["FIXTURES", "PANEBOARD", "ModelApi", "Page", "Stage", "time", "wait_until"]


def choice_mislabels(lines: list[str], answers: list[dict[str, Any]]) -> list[str]:
    """The answers of a wire `screen` whose label is not the choice their keys select:
    for an answer naming numbered choice N (`option`), the bottom-most line of the
    screen that draws `N.` must draw the label right after it (issue 40)."""
    from paneboard_protocol.screen import plain

    text = [plain(ln) for ln in lines]
    wrong = []
    for a in answers:
        n = a.get("option")
        if n is None:
            continue
        drawn = next((ln for ln in reversed(text) if re.match(rf"^[\s│┃|❯›●>]*{n}\.\s", ln)), "")
        if not re.match(rf"^[\s│┃|❯›●>]*{n}\.\s+{re.escape(a['label'])}", drawn):
            wrong.append(f"{a['id']}: {a['label']!r} on {drawn!r}")
    return wrong
