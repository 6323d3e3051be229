"""`why.explain`: what decided a pane's state, in words, from its evidence alone.

Each case drives the real classifier with the inputs a collector gives it (the steps
of `classifier_steps`, plus ("sh", t, shell, pid, chain): a shell in front, which the
collector names `None` and tells by name apart), then explains the evidence it built
— the same dict the server stores and explains again.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from classifier_steps import RULES, T0, agent, apply, progress, rep, title, unknown_state_contract
from paneboard_protocol.classifier import EvidenceError, PaneClassifier
from paneboard_protocol.rules import RuleSet, parse_manifest
from paneboard_protocol.why import Why, explain

PROMPT_TOML = r"""
id = "boxed"
agent = "boxed"
process = ["boxed"]

[[rules]]
id = "permission_prompt"
state = "blocked"
kind = "permission"
priority = 100
line_regex = ['^│ Allow .* to run', '^│ ❯ 1\. Yes']

[[rules]]
id = "spanning"
state = "working"
priority = 50
regex = ['(?s)Building.*step 3/3']
"""

BOXED = RuleSet.from_manifests([parse_manifest(PROMPT_TOML)])

SECRET = "rm -rf /tmp/very-secret-path"


def _run(steps: list[tuple], rules: RuleSet | None = RULES) -> tuple[PaneClassifier, float]:
    c = PaneClassifier(rules)
    t = 0.0
    for step in steps:
        if step[0] == "sh":
            _, t, shell, pid, chain = step
            c.set_process(t, None, pid, chain=chain, shell=shell)
        else:
            t = apply(c, step)
    return c, t


def _why(steps: list[tuple], rules: RuleSet | None = RULES, at: float | None = None) -> Why:
    c, t = _run(steps, rules)
    now = t if at is None else at
    got = explain(c.evidence(), now)
    assert got.state == c.classification(now).state  # it explains the state the pane shows
    return got


def _screen(rows: list[str], height: int = 40) -> str:
    """A captured screen: `rows` at the top, blank rows below them."""
    return "\n".join(rows + [""] * (height - len(rows)))


def _prompt_screen(top: int) -> str:
    rows = [f"output line {i}" for i in range(1, top)]
    rows += [
        "╭──────────────────────────────────────╮",
        "│ Allow boxed to run `rm -rf build`?   │",  # row top + 1
        "│                                      │",
        "│ ❯ 1. Yes                             │",  # row top + 3
        "│   2. No                              │",
        "╰──────────────────────────────────────╯",
    ]
    return _screen(rows, max(40, len(rows) + 2))


SHELL = ("sh", 0.0, "bash", 4242, [1])


def _fields(w: Why, keys: list[str]) -> dict[str, Any]:
    return {k: getattr(w, k) for k in keys}


REPORT_KEYS = ["source", "state", "writer", "pid", "relation", "front", "at", "text"]

CASES = [
    pytest.param(
        [("proc", 0.0, "deploy.sh", 500), ("ev", 3.0, [rep("working", msg="deploying")])],
        RULES,
        {
            "source": "report",
            "state": "working",
            "writer": "deploy.sh",
            "pid": 500,
            "relation": "front",
            "front": None,
            "at": 3.0,
            "text": "reported by `deploy.sh` (pid 500), the process in front",
        },
        id="reported by the process in front",
    ),
    pytest.param(
        [SHELL, ("ev", 1.0, [rep("working", msg="Syncing photos")]), ("fg", 2.0, "rsync", 4300, [4242, 1])],
        RULES,
        {
            "source": "report",
            "state": "working",
            "writer": "bash",
            "pid": 4242,
            "relation": "parent",
            "front": "rsync",
            "at": 1.0,
            "text": "reported by `bash` (pid 4242), the parent of `rsync`",
        },
        id="reported by the shell, the parent of the command it runs",
    ),
    pytest.param(
        [
            SHELL,
            ("ev", 1.0, [rep("working", msg="deploy")]),
            ("fg", 2.0, "make", 200, [4242, 1]),
            ("fg", 3.0, "cc", 300, [200, 4242, 1]),
        ],
        RULES,
        {
            "source": "report",
            "state": "working",
            "writer": "bash",
            "pid": 4242,
            "relation": "ancestor",
            "front": "cc",
            "at": 1.0,
            "text": "reported by `bash` (pid 4242), an ancestor of `cc`",
        },
        id="reported by an ancestor of a grandchild",
    ),
    pytest.param(
        [("proc", 0.0, "build", 500), ("ev", 2.0, [rep("done", msg="built")]), ("proc", 4.0, None)],
        RULES,
        {
            "source": "report",
            "state": "done",
            "writer": "build",
            "pid": 500,
            "relation": "earlier",
            "front": None,
            "at": 2.0,
            "text": "reported by `build` (pid 500), a result left from before",
        },
        id="a result left by a process that has gone",
    ),
]


@pytest.mark.parametrize(("steps", "rules", "want"), CASES)
def test_reports_say_who_wrote_them(steps: list[tuple], rules: RuleSet, want: dict[str, Any]) -> None:
    assert _fields(_why(steps, rules), REPORT_KEYS) == want


def test_screen_rule_and_the_rows_it_matched() -> None:
    w = _why([("proc", 0.0, "boxed", 700), ("screen", 1.0, _prompt_screen(31))], BOXED)
    assert _fields(w, ["source", "state", "rule", "lines", "text"]) == {
        "source": "screen",
        "state": "blocked",
        "rule": "boxed.permission_prompt",
        "lines": (32, 34),
        "text": "screen rule `boxed.permission_prompt` matched lines 32–34",
    }


def test_rows_count_from_the_top_of_the_captured_screen_past_the_rows_read() -> None:
    # 100 rows captured: the rules read the bottom 64 (RI-9); the rows named are the
    # screen's own, the ones a person finds on the pane's screen page.
    w = _why([("proc", 0.0, "boxed", 700), ("screen", 1.0, _prompt_screen(90))], BOXED)
    assert w.lines == (91, 93)


def test_a_regex_across_rows_names_its_first_and_last_row() -> None:
    screen = _screen(["$ make", "Building step 1/3", "compiling", "Building step 3/3", "linking"])
    w = _why([("proc", 0.0, "boxed", 700), ("screen", 1.0, screen)], BOXED)
    assert (w.rule, w.lines, w.text) == (
        "boxed.spanning",
        (2, 4),
        "screen rule `boxed.spanning` matched lines 2–4",
    )


def test_a_rule_on_one_row_says_line() -> None:
    screen = _screen(["hello", "", "> Do you want to proceed?"])
    w = _why([("proc", 0.0, "claude", 700), ("screen", 1.0, screen)])
    assert (w.source, w.rule, w.lines) == ("screen", "test-claude.permission", (3, 3))
    assert w.text == "screen rule `test-claude.permission` matched line 3"


def test_a_contract_and_its_age() -> None:
    w = _why([("ev", T0, [agent("aider", "working", ts=int(T0) - 12)])], None, at=T0)
    assert _fields(w, ["source", "state", "age", "at", "text"]) == {
        "source": "contract",
        "state": "working",
        "age": 12.0,
        "at": T0,
        "text": "THINKTERM_AGENT contract of `aider`, ts 12 s old",
    }


def test_a_progress_signal() -> None:
    # A contract with a state nobody knows still names the agent (RI-6); no manifest
    # reads its screen, so its OSC 9;4 progress says working (TA-3, RI-7).
    w = _why([("ev", T0, [unknown_state_contract("mytool", ts=int(T0)), progress(1, 40)])], None, at=T0)
    assert _fields(w, ["source", "state", "signal", "text"]) == {
        "source": "native",
        "state": "working",
        "signal": "progress",
        "text": "progress signal (OSC 9;4)",
    }


def test_a_title_spinner_without_a_manifest() -> None:
    w = _why([("ev", T0, [unknown_state_contract("mytool", ts=int(T0)), title("⠋ thinking")])], None, at=T0)
    assert (w.source, w.state, w.signal, w.text) == ("native", "working", "title", "title spinner")


def test_a_manifest_rule_on_the_title_is_native() -> None:
    w = _why([("proc", 0.0, "claude", 700), ("ev", 1.0, [title("⠋ Working")])])
    assert (w.source, w.state, w.rule) == ("native", "working", "test-claude.title_spinner")
    assert w.text == "rule `test-claude.title_spinner` read the program's title"


def test_an_agent_nothing_says_more_of() -> None:
    w = _why([("proc", 0.0, "claude", 700)])
    assert (w.source, w.state) == ("none", "idle")
    assert w.text == "`claude` is known here and nothing says more, so it is idle"


def test_nothing() -> None:
    w = _why([SHELL])
    assert (w.source, w.state, w.text) == ("none", None, "nothing reports a state and no screen rule applies")


def test_no_screen_text_and_no_arguments_travel() -> None:
    """The prompt's text is the screen's (only the screen endpoint shows it); a process
    is named by its program, never its command line."""
    screen = _screen(["x", f"│ Allow boxed to run `{SECRET}`?", "│ ❯ 1. Yes"])
    c, t = _run([("proc", 0.0, f"node /opt/boxed/cli.js {SECRET}", 700), ("screen", 1.0, screen)], BOXED)
    w = explain(c.evidence(), t)
    assert w.rule == "boxed.permission_prompt"
    assert "secret" not in msgspec.json.encode(w).decode()
    c.feed(2.0, [rep("working")])
    rec = c.evidence()["records"][0]
    assert (rec["writer"], rec["pid"]) == ("boxed", 700)
    assert "secret" not in msgspec.json.encode(explain(c.evidence(), 2.0)).decode()


def test_an_older_collectors_evidence_is_still_explained() -> None:
    """Version 2 evidence has no writer names, no parent and no rows: the sentence says
    what it can, and the classification is what it was."""
    c, t = _run([SHELL, ("ev", 1.0, [rep("working")]), ("fg", 2.0, "rsync", 4300, [4242, 1])])
    ev = c.evidence()
    ev["v"] = 2
    del ev["process"]["parent"]
    for r in ev["records"]:
        del r["writer"]
    w = explain(ev, t)
    assert (w.relation, w.writer, w.text) == (
        "ancestor",
        None,
        "reported by the shell (pid 4242), an ancestor of `rsync`",
    )


def test_hostile_names_are_display_safe_and_short() -> None:
    c, t = _run([("proc", 0.0, "evil\u202e" + "x" * 300, 9), ("ev", 1.0, [rep("working")])])
    w = explain(c.evidence(), t)
    assert w.writer is not None and "\u202e" not in w.writer and len(w.writer) <= 64
    assert "\u202e" not in w.text


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("screen", "result", "lines"), [5, 2]),
        (("screen", "result", "lines"), [0, 2]),
        (("screen", "result", "lines"), [1]),
        (("screen", "result", "lines"), "1-2"),
        (("process", "parent"), -1),
    ],
)
def test_bad_why_evidence_is_refused(path: tuple[str, ...], value: Any) -> None:
    c, t = _run([("proc", 0.0, "boxed", 700), ("screen", 1.0, _prompt_screen(3))], BOXED)
    ev = c.evidence()
    node = ev
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(EvidenceError):
        explain(ev, t)


def test_a_bad_writer_is_refused() -> None:
    c, t = _run([("proc", 0.0, "boxed", 700), ("ev", 1.0, [rep("working")])], BOXED)
    ev = c.evidence()
    ev["records"][0]["writer"] = "w" * 300
    with pytest.raises(EvidenceError, match=r"records\[0\]\.writer"):
        explain(ev, t)
