"""First-tap success on the real agent CLIs: is the answer typed on the first tap?

    uv run python bench/first_tap.py --agent claude|codex|gemini|aider|opencode|all \
        [--rounds 20] [--min-wait 1] [--max-wait 15] [--seed 20] [--json FILE]

Drives each real CLI (installed under ~/.cache/paneboard/agents/, against the loopback
model-API stand-in, tests/realagents/; started as its own test starts it) through
`--rounds` permission prompts in one session: the stand-in asks `touch pb-1`, then
`touch pb-2`, ... in turn (commands.json): each tool result is answered with the next
command; Aider, which sends no result back, is given the task again after each
command and is asked the next one. The collector runs in-process (`harness.Page`,
`--allow-input`) with a page's view of it: the screens it sends while the pane is
watched. Each round:

1. the first screen offering answers for this round's command reaches the "page";
2. a human-like pause, uniformly random in [min-wait, max-wait] seconds (seeded);
3. a **swapped** tap: the fingerprint the page held for the previous round's prompt,
   sent while this one is up — must type nothing (`changed`);
4. the tap: the agent's "approve once" answer with the fingerprint the page holds now
   (its latest screen); its outcome is counted (typed / changed / other), and the time
   from the tap to the key's effect (the command's file appearing) is the
   tap-to-effect delay. A tap not typed keeps both screens (the page's and a capture at
   the tap) in the --json output: what moved.

Baseline, in the same run and on the same screens: the fingerprint this project used
before (sha256 of the whole visible text) of the screen the page held at the tap, against
the one of a `capture-pane` taken at the moment of the tap — equal: that tap would have
been typed, else `changed`. (Not main's code running: the old function over the same
captures, so both columns see the same prompts and the same blinks.)

OpenCode's dialog shows its selection only in colour: its "Allow once" is offered while
the capture's colours say it is selected (docs/answers.md), which is how each of its
prompts appears.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "realagents"))

from harness import Page, Stage  # noqa: E402
from install import AGENTS, install  # noqa: E402
from paneboard_protocol.screen import plain  # noqa: E402
from test_aider import FLAGS as AIDER_FLAGS  # noqa: E402
from test_aider import aider_home  # noqa: E402
from test_claude import claude_env, claude_home  # noqa: E402
from test_codex import codex_home  # noqa: E402
from test_gemini import gemini_home  # noqa: E402
from test_opencode import opencode_env  # noqa: E402

TASK = "Please do PBTASK now"


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


@dataclass
class Agent:
    """How to start one real CLI on the stage (the tests' own set-up) and answer it."""

    name: str
    start: Callable[[Stage, Path, Path], None]  # open it in the stage's pane, wait till it takes a task
    answer: str  # the manifest's answer id for "approve this once"
    reask: bool = False  # True: it sends no tool result back; each round is a new task message
    back: Callable[[str], bool] = lambda s: True  # the screen that takes the next task (reask)


def _start_claude(stage: Stage, home: Path, work: Path) -> None:
    claude_home(home, work)
    stage.open(
        f"{install(AGENTS['claude'])} --permission-mode default", claude_env(home, stage.api.url), work
    )
    stage.wait_class({"agent": "claude", "state": "idle"}, 90, "idle at start")
    stage.wait_screen(lambda s: "? for shortcuts" in s, 30, "the prompt")


def _start_codex(stage: Stage, home: Path, work: Path) -> None:
    ch = codex_home(home, work, stage.api.url)
    env = {"HOME": str(home), "CODEX_HOME": str(ch), "PB_API_KEY": "pb-dummy", "TERM": "xterm-256color"}
    stage.open(f"{install(AGENTS['codex'])} --no-daemon", env, work)
    stage.wait_screen(lambda s: "›" in s and "for shortcuts" in s, 60, "Codex's prompt")
    stage.wait_class({"agent": "codex", "state": "idle"}, 30, "idle at start")


def _start_gemini(stage: Stage, home: Path, work: Path) -> None:
    gemini_home(home)
    env = {
        "HOME": str(home),
        "TERM": "xterm-256color",
        "GEMINI_API_KEY": "pb-dummy",
        "GOOGLE_GEMINI_BASE_URL": stage.api.url,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "NO_UPDATE_NOTIFIER": "1",
    }
    stage.open(str(install(AGENTS["gemini"])), env, work)
    stage.wait_screen(lambda s: "Type your message" in s, 90, "Gemini's prompt")
    stage.wait_class({"agent": "gemini", "state": "idle"}, 30, "idle at start")


def _start_aider(stage: Stage, home: Path, work: Path) -> None:
    aider_home(home)
    env = {
        "HOME": str(home),
        "TERM": "xterm-256color",
        "OPENAI_API_KEY": "pb-dummy",
        "OPENAI_API_BASE": stage.api.url + "/text-tools/v1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    stage.open(f"{install(AGENTS['aider'])} {AIDER_FLAGS}", env, work)
    stage.wait_screen(lambda s: "diff>" in s, 90, "Aider's prompt")
    stage.wait_class({"agent": "aider", "state": "idle"}, 30, "idle at start")


def _start_opencode(stage: Stage, home: Path, work: Path) -> None:
    home.mkdir()
    stage.open(str(install(AGENTS["opencode"])), opencode_env(home, stage.api.url), work)
    stage.wait_screen(lambda s: "Ask anything" in s, 120, "OpenCode's prompt")
    stage.wait_class({"agent": "opencode", "state": "idle"}, 30, "idle at start")


AGENT_RUNS = {
    "claude": Agent("claude", _start_claude, "yes"),
    "codex": Agent("codex", _start_codex, "yes"),
    "gemini": Agent("gemini", _start_gemini, "once"),
    "aider": Agent("aider", _start_aider, "yes", reask=True, back=lambda s: s.rstrip().endswith("diff>")),
    "opencode": Agent("opencode", _start_opencode, "once"),
}


def send_task(stage: Stage, gate: int) -> None:
    """Type the task and send it; sent is proved by the model API getting turn `gate`."""
    stage.press_until(
        [TASK],
        lambda: stage.screen().rstrip().endswith(TASK) or (gate == 1 and "PBTASK" in stage.screen()),
        "the task typed",
        tries=3,
        each=10,
        literal=True,
    )
    stage.press_until(["Enter"], lambda: stage.api.held(gate), "the task sent")


def run(agent: Agent, rounds: int, lo: float, hi: float, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    tmp = Path(tempfile.mkdtemp(prefix=f"pb-first-tap-{agent.name}-"))
    stage = Stage(tmp)
    page = Page(stage)
    home, work = tmp / "home", tmp / "work"
    work.mkdir()
    commands = [f"touch pb-{i}" for i in range(1, rounds + 1)]
    (stage.api.root / "commands.json").write_text(json.dumps(commands))
    out: dict[str, Any] = {"rounds": [], "agent": agent.name, "error": None}
    try:
        agent.start(stage, home, work)
        send_task(stage, 1)
        page.watch()
        stage.api.release(1)
        previous_fp: str | None = None
        mark = 0  # the page's messages before this round's prompt
        for n, command in enumerate(commands, start=1):
            name = command.split()[1]

            asks = re.compile(re.escape(f"touch {name}") + r"(?!\d)")

            def shown(asks: re.Pattern[str] = asks, mark: int = mark) -> Any:
                return next(
                    (
                        m
                        for m in page.screens(mark)
                        if m["answers"] and any(asks.search(ln) for ln in m["lines"])
                    ),
                    None,
                )

            try:
                first = until(shown, 120, f"the prompt for {command}")
            except TimeoutError:
                bare = next(
                    (m for m in page.screens(mark) if m["state"] == "blocked" and not m["answers"]), None
                )
                if bare is None:
                    raise
                raise RuntimeError(f"the prompt for {command} is offered with no answers") from None
            wait = rng.uniform(lo, hi)
            time.sleep(wait)
            swapped = page.answer(f"swap{n}", previous_fp, agent.answer) if previous_fp is not None else None
            if swapped == "typed":
                print(f"!! swapped prompt typed in round {n}", flush=True)
            held = page.latest()
            assert held is not None
            now_lines = stage.tmux.cmd("capture-pane", "-p", "-e", "-t", stage.pane).split("\n")
            height = int(stage.tmux.cmd("display-message", "-p", "-t", stage.pane, "#{pane_height}").strip())
            baseline = (
                "typed"
                if old_fingerprint(held["lines"][-height:]) == old_fingerprint(now_lines[:height])
                else "changed"
            )
            t0 = time.time()
            outcome = page.answer(f"yes{n}", held["fingerprint"], agent.answer)
            delay = None
            record: dict[str, Any] = {}
            if outcome == "typed":
                until(lambda name=name: (work / name).exists(), 60, f"{command} to run")
                delay = time.time() - t0
            else:
                # What moved between the page's look and the tap: both screens, plain.
                record["held_lines"] = [plain(ln) for ln in held["lines"][-height:]]
                record["tap_lines"] = [plain(ln) for ln in now_lines[:height]]
                record["held_answers"] = held["answers"]
                # a second tap, as a person would, on the screen the page holds now
                for again in range(5):
                    time.sleep(1.0)
                    latest = page.latest(answers=True)
                    if latest is None:
                        continue
                    got = page.answer(f"again{n}.{again}", latest["fingerprint"], agent.answer)
                    if got == "typed":
                        break
                until(lambda name=name: (work / name).exists(), 60, f"{command} to run")
            redraws = sum(1 for m in page.screens() if m is not first and m.get("t", 0) >= first["t"])
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
                    **record,
                }
            )
            short = {k: v for k, v in out["rounds"][-1].items() if not k.startswith(("held_", "tap_lines"))}
            print(agent.name, json.dumps(short), flush=True)
            previous_fp = held["fingerprint"]
            mark = len(page.side)
            if agent.reask:
                if n < rounds:
                    stage.wait_screen(agent.back, 60, "the prompt back")
                    send_task(stage, n + 1)
                    stage.api.release(n + 1)
            else:
                until(lambda n=n: stage.api.held(n + 1), 60, "the result sent to the model")
                stage.api.release(n + 1)
    except Exception as e:  # a round that cannot go on ends the agent's run, reported
        out["error"] = f"{type(e).__name__}: {e}"
        out["screen_at_error"] = stage.screen()
        print(f"{agent.name}: stopped: {out['error']}\n{out['screen_at_error']}", flush=True)
    finally:
        page.close()
        stage.close()
    return out


def _pct(xs: list[float], q: float) -> float | None:
    """Nearest-rank percentile."""
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * len(xs) + 0.5) - 1))]


def _counts(xs: Any) -> dict[str, int]:
    got: dict[str, int] = {}
    for x in xs:
        got[x] = got.get(x, 0) + 1
    return got


def summary(out: dict[str, Any]) -> dict[str, Any]:
    rs = out["rounds"]
    delays = [r["tap_to_effect_ms"] for r in rs if r["tap_to_effect_ms"] is not None]
    swaps = [r["swapped"] for r in rs if r["swapped"] is not None]
    return {
        "agent": out["agent"],
        "rounds": len(rs),
        "typed": sum(r["outcome"] == "typed" for r in rs),
        "changed": sum(r["outcome"] == "changed" for r in rs),
        "other": _counts(r["outcome"] for r in rs if r["outcome"] not in ("typed", "changed")),
        "baseline_typed": sum(r["baseline"] == "typed" for r in rs),
        "swapped": len(swaps),
        "swapped_typed": sum(s == "typed" for s in swaps),
        "swapped_outcomes": _counts(swaps),
        "tap_to_effect_ms_p50": round(statistics.median(delays), 1) if delays else None,
        "tap_to_effect_ms_p99": _pct(delays, 0.99),
        "load": [round(x, 2) for x in os.getloadavg()],
        "error": out["error"],
    }


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| agent | rounds | typed | changed | other | whole-screen fp typed | swapped typed "
        "| tap→effect p50 ms | p99 ms | load (1/5/15 min) at the end |"
    )
    out = [head, "|" + "---|" * 10]
    for s in rows:
        other = ", ".join(f"{k} {v}" for k, v in s["other"].items()) or "0"
        cells = [
            s["agent"], s["rounds"], s["typed"], s["changed"], other, s["baseline_typed"],
            f"{s['swapped_typed']} / {s['swapped']}", s["tap_to_effect_ms_p50"], s["tap_to_effect_ms_p99"],
            " ".join(str(x) for x in s["load"]),
        ]  # fmt: skip
        out.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agent", choices=[*AGENT_RUNS, "all"], default="claude")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--min-wait", type=float, default=1.0)
    ap.add_argument("--max-wait", type=float, default=15.0)
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("--json", metavar="FILE", help="also write every round (screens of a missed tap too)")
    a = ap.parse_args(argv)
    names = list(AGENT_RUNS) if a.agent == "all" else [a.agent]
    outs, rows = [], []
    for name in names:
        print(f"{name}: load before {os.getloadavg()}", flush=True)
        outs.append(run(AGENT_RUNS[name], a.rounds, a.min_wait, a.max_wait, a.seed))
        rows.append(summary(outs[-1]))
        print(json.dumps(rows[-1]), flush=True)
        if a.json:
            Path(a.json).write_text(json.dumps({"runs": outs, "summary": rows}, indent=1))
    print(table(rows))
    return 0 if all(r["error"] is None for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
