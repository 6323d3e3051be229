"""First-tap success on the real Claude Code: is the answer typed on the first tap?

    uv run python bench/first_tap.py [--rounds 20] [--min-wait 1] [--max-wait 15] [--json]

Drives the real Claude Code (installed under ~/.cache/paneboard/agents/, against the
loopback model-API stand-in, tests/realagents/) through `--rounds` permission prompts
in one session: the stand-in asks `touch pb-1`, then `touch pb-2`, ... in turn
(commands.json). The collector runs in-process (`Collector`, `--allow-input`) with a
page's view of it: the screens it sends while the pane is watched. Each round:

1. the first screen offering answers for this round's command reaches the "page";
2. a human-like pause, uniformly random in [min-wait, max-wait] seconds;
3. a **swapped** tap: the fingerprint the page held for the previous round's prompt,
   sent while this one is up — must type nothing (`changed`);
4. the tap: "Yes" with the fingerprint the page holds now (its latest screen); its
   outcome is counted (typed / changed / other), and the time from the tap to the
   key's effect (the command's file appearing) is the tap-to-effect delay.

Baseline, in the same run and on the same screens: the fingerprint this project used
before (sha256 of the whole visible text) of the screen the page held at the tap, against
the one of a `capture-pane` taken at the moment of the tap — equal: that tap would have
been typed, else `changed`. (Not main's code running: the old function over the same
captures, so both columns see the same prompts and the same blinks.)

Codex, Gemini CLI, Aider and OpenCode are not driven yet: their stand-in APIs ask one
command per session (see the report in docs/answers.md).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "realagents"))

from harness import Stage  # noqa: E402
from install import AGENTS, install  # noqa: E402
from paneboard_agent.collector import Collector, Options, TmuxTarget  # noqa: E402
from paneboard_agent.transport.local import LocalTransport  # noqa: E402
from paneboard_protocol import wire  # noqa: E402
from paneboard_protocol.rules import load_rules  # noqa: E402
from paneboard_protocol.screen import plain  # noqa: E402
from test_claude import claude_env, claude_home  # noqa: E402


def old_fingerprint(lines: list[str]) -> str:
    """The whole-screen fingerprint used before the prompt fingerprint."""
    rows = [plain(ln).rstrip() for ln in lines]
    while rows and not rows[-1]:
        rows.pop()
    return hashlib.sha256("\n".join(rows).encode("utf-8", "surrogatepass")).hexdigest()


def until(pred: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while not (v := pred()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.05)
    return v


class _Sink:
    async def pane_changed(self, update: Any) -> None:
        pass

    async def pane_gone(self, key: Any, t: float) -> None:
        pass

    async def host_status(self, host: str, reachable: bool, t: float, error: str | None) -> None:
        pass


def run(rounds: int, lo: float, hi: float, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    tmp = Path(tempfile.mkdtemp(prefix="pb-first-tap-"))
    claude = install(AGENTS["claude"])
    stage = Stage(tmp)
    home, work = tmp / "home", tmp / "work"
    work.mkdir()
    claude_home(home, work)
    commands = [f"touch pb-{i}" for i in range(1, rounds + 1)]
    (stage.api.root / "commands.json").write_text(json.dumps(commands))
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    side: list[dict[str, Any]] = []
    target = TmuxTarget(LocalTransport("here"), socket=stage.tmux.name, allow_input=True)
    collector = Collector([target], _Sink(), Options(rules=load_rules(None)))
    collector.set_side(side.append)
    running = asyncio.run_coroutine_threadsafe(collector.run(), loop)
    out: dict[str, Any] = {"rounds": [], "agent": "claude"}
    try:
        stage.open(f"{claude} --permission-mode default", claude_env(home, stage.api.url), work)
        stage.wait_class({"agent": "claude", "state": "idle"}, 90, "idle at start")
        stage.wait_screen(lambda s: "? for shortcuts" in s, 30, "the prompt")
        stage.press_until(
            ["Please do PBTASK now"],
            lambda: "PBTASK" in stage.screen(),
            "typed",
            tries=1,
            each=20,
            literal=True,
        )
        stage.press_until(["Enter"], lambda: stage.api.held(1), "the prompt sent")
        key = {"host": "here", "tmux": stage.tmux.name, "pane": stage.pane}
        asyncio.run_coroutine_threadsafe(collector.command(dict(wire.watch(key))), loop).result(20)
        stage.api.release(1)

        def tap(request: str, fp: str) -> str:
            msg = dict(wire.answer(request, key, fp, time.time() + 60, answer="yes"))
            asyncio.run_coroutine_threadsafe(collector.command(msg), loop).result(30)
            return str(next(m["outcome"] for m in side if m["type"] == "answered" and m["id"] == request))

        previous_fp: str | None = None
        for n, command in enumerate(commands, start=1):
            name = command.split()[1]

            def shown(name: str = name) -> Any:
                return next(
                    (
                        m
                        for m in side
                        if m["type"] == "screen"
                        and m["answers"]
                        and any(f"touch {name}" in ln for ln in m["lines"])
                    ),
                    None,
                )

            first = until(shown, 120, f"the prompt for {command}")
            wait = rng.uniform(lo, hi)
            time.sleep(wait)
            swapped = tap(f"swap{n}", previous_fp) if previous_fp is not None else None
            held = next(m for m in reversed(side) if m["type"] == "screen")
            now_lines = stage.tmux.cmd("capture-pane", "-p", "-e", "-t", stage.pane).split("\n")
            height = int(stage.tmux.cmd("display-message", "-p", "-t", stage.pane, "#{pane_height}").strip())
            baseline = (
                "typed"
                if old_fingerprint(held["lines"][-height:]) == old_fingerprint(now_lines[:height])
                else "changed"
            )
            t0 = time.time()
            outcome = tap(f"yes{n}", held["fingerprint"])
            delay = None
            if outcome == "typed":
                until(lambda name=name: (work / name).exists(), 60, f"{command} to run")
                delay = time.time() - t0
            else:  # a second tap, as a person would: the round goes on
                latest = next(m for m in reversed(side) if m["type"] == "screen")
                tap(f"again{n}", latest["fingerprint"])
                until(lambda name=name: (work / name).exists(), 60, f"{command} to run")
            redraws = sum(
                1 for m in side if m["type"] == "screen" and m is not first and m.get("t", 0) >= first["t"]
            )
            out["rounds"].append(
                {
                    "n": n,
                    "wait_s": round(wait, 2),
                    "outcome": outcome,
                    "baseline": baseline,
                    "swapped": swapped,
                    "tap_to_effect_ms": None if delay is None else round(delay * 1000, 1),
                    "screens_since_shown": redraws,
                    "same_fp_as_shown": held["fingerprint"] == first["fingerprint"],
                }
            )
            print(json.dumps(out["rounds"][-1]), flush=True)
            previous_fp = held["fingerprint"]
            until(lambda n=n: stage.api.held(n + 1), 60, "the result sent to the model")
            stage.api.release(n + 1)
    finally:
        running.cancel()
        time.sleep(0.5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        stage.close()
    return out


def summary(out: dict[str, Any]) -> dict[str, Any]:
    rs = out["rounds"]

    def count(field: str) -> dict[str, int]:
        got: dict[str, int] = {}
        for r in rs:
            if r[field] is not None:
                got[r[field]] = got.get(r[field], 0) + 1
        return got

    delays = sorted(r["tap_to_effect_ms"] for r in rs if r["tap_to_effect_ms"] is not None)
    return {
        "rounds": len(rs),
        "first_tap": count("outcome"),
        "baseline_first_tap": count("baseline"),
        "swapped": count("swapped"),
        "tap_to_effect_ms_p50": statistics.median(delays) if delays else None,
        "tap_to_effect_ms_max": delays[-1] if delays else None,
        "load": os.getloadavg(),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--min-wait", type=float, default=1.0)
    ap.add_argument("--max-wait", type=float, default=15.0)
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    load = os.getloadavg()
    out = run(a.rounds, a.min_wait, a.max_wait, a.seed)
    s = summary(out)
    s["load_before"] = load
    print(json.dumps(s) if a.json else json.dumps(s, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
