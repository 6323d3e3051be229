"""Generate `pane-output.log`: the raw bytes a `tmux pipe-pane` log of an agent session holds.

Run `python samples/make_sample.py` to regenerate it (the output is deterministic, so
the committed file and the script never drift apart: a test checks that). It plays a
shell starting a coding agent that probes the terminal, reports through both
protocols, redraws a colourful TUI, asks for a permission, finishes, and exits back to
the prompt. One report travels inside a tmux passthrough envelope and one is wrong on
purpose, so `paneboard decode --all` has something to reject.
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path

OUT = Path(__file__).with_name("pane-output.log")
ESC, BEL, ST = "\x1b", "\x07", "\x1b\\"
CSI, OSC = ESC + "[", ESC + "]"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def report(pairs: str, term: str = ST) -> str:
    return f"{OSC}7501;{pairs}{term}"


def agent(state: str, ts: int, extra: str = "") -> str:
    value = f"v1;agent=claude;state={state};session=7f3c9a;pid=48211;ts={ts}{extra}"
    return f"{OSC}1337;SetUserVar=THINKTERM_AGENT={b64(value)}{BEL}"


def sgr(*codes: int) -> str:
    return f"{CSI}{';'.join(map(str, codes))}m"


def goto(row: int, col: int = 1) -> str:
    return f"{CSI}{row};{col}H"


def prompt(exit_code: int | None = None) -> str:
    done = "" if exit_code is None else f"{OSC}133;D;{exit_code}{BEL}"
    return (
        f"{done}{OSC}133;A{BEL}{sgr(1, 32)}dev@build-7{sgr(0)}:{sgr(1, 34)}~/infra{sgr(0)}$ {OSC}133;B{BEL}"
    )


def frame(spinner: str, status: str, lines: list[str], row0: int = 3) -> str:
    out = [
        f"{OSC}0;{spinner} Claude Code{BEL}",
        goto(1),
        f"{CSI}2K",
        sgr(38, 5, 208),
        "✻ Claude Code",
        sgr(0),
    ]
    for k, text in enumerate(lines):
        out += [goto(row0 + k), f"{CSI}2K", sgr(2), "│ ", sgr(0), text]
    out += [
        goto(22),
        f"{CSI}2K",
        sgr(38, 5, 245),
        f"{spinner} {status}… ",
        sgr(2),
        "(esc to interrupt)",
        sgr(0),
    ]
    return "".join(out)


def build() -> bytes:
    t0 = 1764680000
    parts: list[str] = []
    add = parts.append
    add(prompt())
    add("claude\r\n")
    add(f"{OSC}133;C{BEL}")
    # Start-up probes, in Claude Code's order (P7501-13).
    add(f"{CSI}>0q{CSI}?u{OSC}7501;?{ST}{CSI}c")
    add(f"{CSI}?1049h{CSI}?25l{CSI}H{CSI}2J")
    add(agent("idle", t0))
    add(report("state=idle:app=claude-code"))
    add(frame("✳", "Ready", ["> refactor the terraform module and plan it"]))
    add(agent("working", t0 + 5))
    add(report(f"state=working:app=claude-code:progress=10:title={b64('Refactor terraform module')}"))
    add(f"{OSC}9;4;3{ST}")
    spin = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
    files = ["main.tf", "variables.tf", "outputs.tf", "modules/net/main.tf", "modules/net/vars.tf"]
    for k in range(12):
        body = [
            f"{sgr(36)}Read{sgr(0)} {files[k % len(files)]} ({40 + 7 * k} lines)",
            f"{sgr(33)}Thinking{sgr(0)}",
        ]
        add(frame(spin[k % len(spin)], "Refactoring", body))
        if k == 6:
            add(report(f"state=working:app=claude-code:progress=55:title={b64('Refactor terraform module')}"))
    # A child record asks a question (P7501-13 shape), then the root asks for permission.
    question = b64("Keep the old variable names?")
    add(report(f"state=blocked:app=claude-code:id=task_1.a:kind=question:msg={question}"))
    add(report("state=working:app=claude-code:id=task_1.a:progress=80"))
    add(f"{OSC}9;4;1;80{BEL}")
    # The spec's own example, as terraform would send it from inside the agent's tool.
    add(
        report(
            "state=blocked:kind=permission:app=terraform:msg=QXBwbHkgMyB0byBhZGQsIDEgdG8gY2hhbmdlLCAwIHRvIGRlc3Ryb3k/"
        )
    )
    add(agent("blocked", t0 + 60))
    add(frame("✳", "Waiting", [f"{sgr(1)}Do you want to proceed?{sgr(0)}", "❯ 1. Yes", "  2. No"]))
    # A report wrapped for tmux passthrough (every inner ESC doubled).
    inner = report(f"state=working:app=claude-code:progress=90:title={b64('Applying plan')}")
    add(f"{ESC}Ptmux;{inner.replace(ESC, ESC + ESC)}{ST}")
    add(agent("working", t0 + 75))
    # A report from a newer program: unknown state, discarded whole (P7501-5).
    add(report("state=paused:app=claude-code"))
    add(
        frame(
            "⠼", "Applying", [f"{sgr(32)}Apply complete!{sgr(0)} Resources: 3 added, 1 changed, 0 destroyed."]
        )
    )
    add(report("state=clear:id=task_1.a"))
    add(f"{OSC}9;4;0{BEL}")
    add(report(f"state=done:app=claude-code:msg={b64('Refactored the module; plan applied.')}"))
    add(agent("idle", t0 + 90))
    add(f"{OSC}0;✳ Claude Code{BEL}")
    add(f"{CSI}?25h{CSI}?1049l")
    add(prompt(exit_code=0))
    return "".join(parts).replace("\n", "\r\n").replace("\r\r\n", "\r\n").encode()


def main() -> int:
    OUT.write_bytes(build())
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
