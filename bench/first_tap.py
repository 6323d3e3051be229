"""First-tap success on the real agent CLIs: is the answer (or the follow-up) typed on the
first tap?

    uv run python bench/first_tap.py --agent claude|codex|gemini|aider|opencode|copilot|qwen|pi|all \
        [--mode answer|follow-up] [--rounds 20] [--min-wait 1] [--max-wait 15] [--seed 20] [--json FILE]

Each real CLI (installed under ~/.cache/paneboard/agents/, against the loopback
model-API stand-in, tests/realagents/) is started as its own test starts it, in one
session, with the collector in-process (`harness.Page`, `--allow-input`) and a page's
view of it: the screens it sends while the pane is watched.

**--mode answer** (the default) drives `--rounds` permission prompts: the stand-in asks
`touch pb-1`, then `touch pb-2`, ... in turn (commands.json): each tool result is
answered with the next command; Aider, which sends no result back, is given the task
again after each command and is asked the next one. Each round:

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

Pi asks no permission (it has no prompts to answer): answer mode refuses it.

**--mode follow-up** runs the eight agents whose follow-ups the suite checks
(tests/realagents/test_follow_up_real.py): Claude Code, Codex, Gemini CLI, Aider,
Copilot CLI, OpenCode, Pi and Qwen Code (`all`: all eight), each started idle at its
prompt by that test's own `open_idle`, and sends follow-ups to the agent idle or done at its
prompt. Each round:

1. the page holds its latest screen that takes a follow-up;
2. a human-like pause, as above;
3. an **interleave**: letters typed at the terminal, then a follow-up sent with the
   fingerprint the page held before them — must come back `changed`, nothing typed (the
   letters are then deleted at the terminal);
4. the send: the follow-up `say hi, round N` with the fingerprint the page holds now;
   counted typed / changed / other, and timed from the send to the model-API stand-in
   receiving it (tap-to-effect). A send not typed keeps both screens (the page's and a
   capture after the send) in the --json output, and is sent again, as a person would,
   on the screen the page holds then. The stand-in answers at once with short text, and
   the turn ends: the next round's prompt.
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
from test_copilot import copilot_env  # noqa: E402
from test_copilot import ready as copilot_ready  # noqa: E402
from test_follow_up_real import open_idle  # noqa: E402
from test_gemini import gemini_home  # noqa: E402
from test_opencode import opencode_env  # noqa: E402
from test_qwen import qwen_env  # noqa: E402

TASK = "Please do PBTASK now"
#: the agents `--mode follow-up --agent all` runs: those whose follow-ups the suite checks
FOLLOW_UP_AGENTS = ("claude", "codex", "gemini", "aider", "copilot", "opencode", "pi", "qwen")


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


def _start_copilot(stage: Stage, home: Path, work: Path) -> None:
    # the folder trusted beforehand: the rounds measure its permission dialog
    stage.open(str(install(AGENTS["copilot"])), copilot_env(home.parent, stage.api.url, trusted=work), work)
    stage.wait_screen(copilot_ready, 120, "Copilot's input box")
    stage.wait_class({"agent": "copilot", "state": "idle"}, 30, "idle at start")


def _start_qwen(stage: Stage, home: Path, work: Path) -> None:
    stage.open(str(install(AGENTS["qwen"])), qwen_env(home.parent, stage.api.url), work)
    stage.wait_screen(lambda s: "Type your message" in s, 120, "Qwen Code's input")
    stage.wait_class({"agent": "qwen", "state": "idle"}, 30, "idle at start")


AGENT_RUNS = {
    "claude": Agent("claude", _start_claude, "yes"),
    "codex": Agent("codex", _start_codex, "yes"),
    "gemini": Agent("gemini", _start_gemini, "once"),
    "aider": Agent("aider", _start_aider, "yes", reask=True, back=lambda s: s.rstrip().endswith("diff>")),
    "opencode": Agent("opencode", _start_opencode, "once"),
    "copilot": Agent("copilot", _start_copilot, "yes"),
    "qwen": Agent("qwen", _start_qwen, "once"),
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


#: one mode's rounds on a started agent: (stage, page, the agent's folder, the run's record)
Rounds = Callable[[Stage, Page, Path, dict[str, Any]], None]


def drive(
    name: str,
    mode: str,
    start: Callable[[Stage, Path], None],
    play: Rounds,
    prepare: Callable[[Stage], None] | None = None,
) -> dict[str, Any]:
    """Start the agent in a fresh stage watched by a page, as its test starts it
    (`start(stage, tmp)`: its home and its folder, `work`, under tmp), and run `play`
    (one mode's rounds) on it: the start-up both modes share. A round that cannot go on
    ends the agent's run: the error and the screen at it go in the record, and the next
    agent runs."""
    tmp = Path(tempfile.mkdtemp(prefix=f"pb-first-tap-{mode}-{name}-"))
    stage = Stage(tmp)
    page = Page(stage)
    work = tmp / "work"
    out: dict[str, Any] = {"rounds": [], "agent": name, "mode": mode, "error": None}
    try:
        if prepare is not None:
            prepare(stage)
        start(stage, tmp)
        play(stage, page, work, out)
    except Exception as e:  # reported in the summary, not raised
        out["error"] = f"{type(e).__name__}: {e}"
        out["screen_at_error"] = stage.screen()
        # what the page and the classifier said last: which of them a wait was missing
        last = page.latest()
        out["page_at_error"] = last and {k: last[k] for k in ("state", "follow_up", "text", "fingerprint")}
        out["class_at_error"] = stage.latest()
        print(f"{name}: stopped: {out['error']}\n{out['screen_at_error']}", flush=True)
        print(f"page: {out['page_at_error']}\nclassified: {out['class_at_error']}", flush=True)
    finally:
        page.close()
        stage.close()
    return out


def run(agent: Agent, rounds: int, lo: float, hi: float, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    commands = [f"touch pb-{i}" for i in range(1, rounds + 1)]

    def prepare(stage: Stage) -> None:
        (stage.api.root / "commands.json").write_text(json.dumps(commands))

    def play(stage: Stage, page: Page, work: Path, out: dict[str, Any]) -> None:
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

    def start(stage: Stage, tmp: Path) -> None:
        (tmp / "work").mkdir()
        agent.start(stage, tmp / "home", tmp / "work")

    return drive(agent.name, "answer", start, play, prepare)


def _arrived(stage: Stage, text: str) -> bool:
    return any(text in json.dumps(r["body"]) for r in stage.api.requests())


def run_follow_ups(name: str, rounds: int, lo: float, hi: float, seed: int) -> dict[str, Any]:
    """Follow-up rounds on `name`, started idle at its prompt by the follow-up test's own
    `open_idle` (tests/realagents/test_follow_up_real.py)."""
    rng = random.Random(seed)

    def play(stage: Stage, page: Page, work: Path, out: dict[str, Any]) -> None:
        until(
            lambda: any(u.key.pane == stage.pane and u.state for u in page.sink.updates), 60, "the pane seen"
        )
        page.watch()
        for n in range(1, rounds + 1):
            until(lambda: (s := page.latest()) is not None and s["follow_up"], 120, f"round {n}'s prompt")
            wait = rng.uniform(lo, hi)
            time.sleep(wait)
            held = page.latest()
            assert held is not None
            # the interleave: letters typed at the terminal after the page's read
            before = held["fingerprint"]
            stage.keys("qzx", literal=True)
            until(lambda b=before: (s := page.latest()) is not None and s["fingerprint"] != b, 20, "the echo")
            interleaved = page.send(f"i{n}", before, text=f"interleaved {n}")
            time.sleep(0.3)
            if interleaved == "typed" or _arrived(stage, f"interleaved {n}"):
                print(f"!! interleaved follow-up typed in round {n}", flush=True)
            stage.keys("BSpace", "BSpace", "BSpace")

            def clean() -> dict[str, Any] | None:
                s = page.latest()
                ok = s is not None and s["follow_up"] and not any("qzx" in plain(ln) for ln in s["lines"])
                return s if ok else None

            text = f"say hi, round {n}"
            shown = until(clean, 20, "the letters removed")
            t0 = time.time()
            outcome = page.send(f"f{n}", shown["fingerprint"], text=text)
            sent = time.time()
            delay = None
            record: dict[str, Any] = {}
            if outcome == "typed":
                until(lambda text=text: _arrived(stage, text), 60, "the follow-up at the model API")
                delay = time.time() - t0
            else:
                # what moved between the page's look and the send: both screens, plain
                record["held_lines"] = [plain(ln) for ln in shown["lines"]]
                record["send_lines"] = stage.screen().split("\n")
                # a second send, as a person would, on the screen the page holds now
                for again in range(5):
                    time.sleep(1.0)
                    latest = page.latest()
                    if latest is not None and latest["follow_up"]:
                        record["again"] = page.send(f"f{n}.{again}", latest["fingerprint"], text=text)
                        if record["again"] == "typed":
                            sent = time.time()
                            until(
                                lambda text=text: _arrived(stage, text), 60, "the follow-up at the model API"
                            )
                            break
            out["rounds"].append(
                {"n": n, "wait_s": round(wait, 2), "outcome": outcome, "interleaved": interleaved,
                 "tap_to_effect_ms": None if delay is None else round(delay * 1000, 1), **record}
            )  # fmt: skip
            short = {k: v for k, v in out["rounds"][-1].items() if not k.endswith("_lines")}
            print(name, json.dumps(short), flush=True)
            if outcome != "typed" and record.get("again") != "typed":
                break
            # the turn ended: idle or done again (Codex reports done), and the page's latest
            # screen, taken after the send, shows the follow-up. Read in the lines' plain
            # text: the colours of a capture can split it (Codex drew one of its sent
            # messages a colour run per word, and a match on the coloured line waited for
            # good: the earlier "stalled after 4 rounds").
            until(
                lambda text=text, sent=sent: (
                    (u := stage.latest()) is not None
                    and u["state"] in ("idle", "done")
                    and (s := page.latest()) is not None
                    and s["follow_up"]
                    and s["t"] >= sent
                    and any(text in plain(ln) for ln in s["lines"])
                ),
                60,
                "the turn ended",
            )

    def start(stage: Stage, tmp: Path) -> None:
        open_idle(name, stage, lambda agent: install(AGENTS[agent]), tmp)

    return drive(name, "follow-up", start, play)


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


def follow_up_summary(out: dict[str, Any]) -> dict[str, Any]:
    rs = out["rounds"]
    delays = [r["tap_to_effect_ms"] for r in rs if r["tap_to_effect_ms"] is not None]
    return {
        "agent": out["agent"],
        "rounds": len(rs),
        "typed": sum(r["outcome"] == "typed" for r in rs),
        "changed": sum(r["outcome"] == "changed" for r in rs),
        "other": _counts(r["outcome"] for r in rs if r["outcome"] not in ("typed", "changed")),
        "interleaved": len(rs),
        "interleaved_typed": sum(r["interleaved"] == "typed" for r in rs),
        "interleaved_outcomes": _counts(r["interleaved"] for r in rs),
        "tap_to_effect_ms_p50": round(statistics.median(delays), 1) if delays else None,
        "tap_to_effect_ms_p99": _pct(delays, 0.99),
        "load": [round(x, 2) for x in os.getloadavg()],
        "error": out["error"],
    }


def table(rows: list[dict[str, Any]], mode: str = "answer") -> str:
    if mode == "follow-up":
        head = (
            "| agent | rounds | typed | changed | other | typed after an interleave "
            "| send→model API p50 ms | p99 ms | load (1/5/15 min) at the end |"
        )
    else:
        head = (
            "| agent | rounds | typed | changed | other | whole-screen fp typed | swapped typed "
            "| tap→effect p50 ms | p99 ms | load (1/5/15 min) at the end |"
        )
    out = [head, "|" + "---|" * head.count(" |")]
    for s in rows:
        other = ", ".join(f"{k} {v}" for k, v in s["other"].items()) or "0"
        checks = (
            [f"{s['interleaved_typed']} / {s['interleaved']}"]
            if mode == "follow-up"
            else [s["baseline_typed"], f"{s['swapped_typed']} / {s['swapped']}"]
        )
        cells = [
            s["agent"], s["rounds"], s["typed"], s["changed"], other, *checks,
            s["tap_to_effect_ms_p50"], s["tap_to_effect_ms_p99"], " ".join(str(x) for x in s["load"]),
        ]  # fmt: skip
        out.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--agent", choices=[*dict.fromkeys([*AGENT_RUNS, *FOLLOW_UP_AGENTS]), "all"], default="claude"
    )
    ap.add_argument(
        "--mode",
        choices=["answer", "follow-up"],
        default="answer",
        help="answer: tap a permission prompt's answer; follow-up: send a done agent a follow-up",
    )
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--min-wait", type=float, default=1.0)
    ap.add_argument("--max-wait", type=float, default=15.0)
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("--json", metavar="FILE", help="also write every round (screens of a missed tap too)")
    a = ap.parse_args(argv)
    follow_ups = a.mode == "follow-up"
    if not follow_ups and a.agent not in (*AGENT_RUNS, "all"):
        ap.error(
            f"--mode answer: {a.agent} asks no permission (it has no prompts to answer); use --mode follow-up"
        )
    every = FOLLOW_UP_AGENTS if follow_ups else tuple(AGENT_RUNS)
    names = list(every) if a.agent == "all" else [a.agent]
    outs, rows = [], []
    for name in names:
        print(f"{name}: load before {os.getloadavg()}", flush=True)
        if follow_ups:
            outs.append(run_follow_ups(name, a.rounds, a.min_wait, a.max_wait, a.seed))
            rows.append(follow_up_summary(outs[-1]))
        else:
            outs.append(run(AGENT_RUNS[name], a.rounds, a.min_wait, a.max_wait, a.seed))
            rows.append(summary(outs[-1]))
        print(json.dumps(rows[-1]), flush=True)
        if a.json:
            Path(a.json).write_text(json.dumps({"runs": outs, "summary": rows}, indent=1))
    print(table(rows, a.mode))
    return 0 if all(r["error"] is None for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
