"""The per-pane tracker as tables: an input in, its `Effects` out. No tmux.

Each scenario is a list of steps applied to a fresh tracker; for every step the
expected parts of the effects it returned are checked: the state of the update it
produced (or that none came), whether a capture is to start, whether a report waits for
a look (`hold`), and the settle time.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import b64, osc7501
from paneboard_agent.tmux import Observation, PaneInfo
from paneboard_agent.uplink import PaneKey
from paneboard_agent.watch.effects import (
    Captured,
    Deadline,
    Disconnected,
    Effects,
    Input,
    Listed,
    Polling,
    Released,
    Seen,
    Settled,
    Skipped,
    Wrote,
)
from paneboard_agent.watch.tracker import REREAD, SETTLE, PaneTracker
from paneboard_protocol.encode import encode_agent
from paneboard_protocol.rules import load_rules

RULES = load_rules("/nonexistent-paneboard-rules")  # the bundled manifests only
KEY = PaneKey("h", "default", "%1")
T0 = 1_800_000_000.0


def info(window: str = "w", command: str = "bash", pid: int = 100) -> PaneInfo:
    return PaneInfo("$0", "@0", "0", "%1", pid, False, "/dev/pts/9", "main", window, command)


SHELL = Observation(None, 100, True)
CODEX = Observation("codex", 200, True)
APP = Observation("builder", 300, True)
SCRIPT = Observation(None, 400, True)  # `./deploy.sh` typed at bash: tmux names it `bash` too
AT_PROMPT = Observation(None, 100, True, None, (1,))
SLEEP = Observation("sleep", 500, True, None, (100, 1))
WORKING = osc7501(f"state=working:msg={b64('Syncing photos')}")
DONE = osc7501(f"state=done:msg={b64('Photos synced')}")
BLOCKED = osc7501(f"state=blocked:kind=question:app=builder:msg={b64('Deploy?')}")
NO_UPDATE = "no update"


def to_input(now: float, op: str, *args: Any) -> Input:
    """A table's step as the tracker's input (times are offsets from T0)."""
    at = T0 + now
    inputs: dict[str, Any] = {
        "listed": lambda: Listed(at, *args),
        "output": lambda: Wrote(at, *args),
        "polling": Polling,
        "released": lambda: Released(at),
        "settled": lambda: Settled(at),
        "captured": lambda: Captured(at, *args),
        "deadline": lambda: Deadline(at),
        "skipped": lambda: Skipped(at),
        "disconnected": Disconnected,
        "seen": lambda: Seen(at),
    }
    return inputs[op]()  # a KeyError: a typo in a table


def run(steps: list[tuple[Any, ...]], reread: float = REREAD) -> list[dict[str, Any]]:
    """Apply steps; for each, the effects it returned (update state, capture, hold, settle)."""
    t = PaneTracker(KEY, "main", RULES, ("ssh",), reread=reread)
    out = []
    for step in steps:
        fx = t.step(to_input(*step))
        out.append(
            {
                "state": fx.update.state if fx.update else NO_UPDATE,
                "capture": fx.capture,
                "hold": fx.look,
                "settle": None if fx.settle_at is None else fx.settle_at - T0,
                "deadline": fx.deadline_at,
            }
        )
    return out


SCENARIOS: dict[str, tuple[list[tuple[Any, ...]], list[dict[str, Any]]]] = {
    "first listing is an update, the same listing again is none": (
        [(0, "listed", info(), SHELL), (1, "listed", info(), SHELL)],
        [{"state": None}, {"state": NO_UPDATE}],
    ),
    "a renamed window is an update": (
        [(0, "listed", info(), SHELL), (1, "listed", info(window="x"), None)],
        [{"state": None}, {"state": None}],
    ),
    "a report is held until the poll after it has run": (
        [(0, "listed", info(), SHELL), (1, "output", BLOCKED), (1.01, "polling"), (1.05, "released")],
        [{"state": None}, {"state": NO_UPDATE, "hold": True}, {"state": NO_UPDATE}, {"state": "blocked"}],
    ),
    # The race CI caught: a script started right after a poll reports at once. Filed under
    # the shell that poll saw, its record ended as "the process left" at the next poll.
    "a report right after a look at the shell waits for a look after it: the script's": (
        [
            (0, "listed", info(), SHELL),
            (0.03, "output", BLOCKED),
            (0.04, "polling"),
            (0.05, "listed", info(), SCRIPT),
            (0.05, "released"),
            (1, "listed", info(), SCRIPT),
        ],
        [
            {"state": None},
            {"state": NO_UPDATE, "hold": True},
            {"state": NO_UPDATE},
            {"state": None},  # the script is in front (its record is not filed yet)
            {"state": "blocked", "hold": False},
            {"state": NO_UPDATE},  # still the script's: nothing left
        ],
    ),
    "a report that arrives while a poll runs waits for the next poll": (
        [
            (0, "listed", info(), SHELL),
            (1, "output", osc7501("state=working")),  # the shell's (a prompt hook)
            (1.01, "polling"),
            (1.015, "output", BLOCKED),  # the script's, started after the poll looked
            (1.02, "listed", info(), SHELL),
            (1.02, "released"),
            (1.03, "polling"),
            (1.04, "listed", info(), SCRIPT),
            (1.04, "released"),
            (2, "listed", info(), SCRIPT),
        ],
        [
            {"state": None},
            {"hold": True},
            {"state": NO_UPDATE},
            {"state": NO_UPDATE, "hold": False},
            {"state": NO_UPDATE},
            {"state": "working", "hold": True},  # the shell's report only; the other waits
            {"state": NO_UPDATE},
            {"state": None},  # the script is in front: the shell's record ended
            {"state": "blocked", "hold": False},
            {"state": NO_UPDATE},
        ],
    ),
    # Looks overlap (overlap.py): each serves what was held when it started, and they
    # come back in the order they started.
    "overlapping looks: the later one serves the report the earlier one started before": (
        [
            (0, "listed", info(), SHELL),
            (1, "output", osc7501("state=working")),  # the shell's (a prompt hook)
            (1.01, "polling"),  # look A
            (1.015, "output", BLOCKED),  # the script's, started after A looked
            (1.02, "polling"),  # look B, under way beside A
            (1.03, "listed", info(), SHELL),  # A's
            (1.03, "released"),
            (1.04, "listed", info(), SCRIPT),  # B's
            (1.04, "released"),
        ],
        [
            {"state": None},
            {"hold": True},
            {"state": NO_UPDATE},
            {"state": NO_UPDATE, "hold": False},
            {"state": NO_UPDATE},
            {"state": NO_UPDATE},
            {"state": "working", "hold": True},  # A: the shell's report only; B serves the other
            {"state": None},  # the script is in front: the shell's record ended
            {"state": "blocked", "hold": False},
        ],
    ),
    "a look under way never serves a report that came after it started": (
        [
            (0, "listed", info(command="builder"), APP),
            (1, "output", osc7501("state=working:app=builder")),
            (1.01, "polling"),  # look A
            (1.02, "polling"),  # look B (nothing new for this pane)
            (1.03, "released"),  # A: everything held goes
            (1.035, "output", osc7501("state=done:app=builder")),  # after A and B started
            (1.04, "polling"),  # look C
            (1.05, "released"),  # B: it started before the `done`
            (1.06, "released"),  # C
        ],
        [
            {"state": None},
            {"hold": True},
            {"state": NO_UPDATE},
            {"state": NO_UPDATE},
            {"state": "working", "hold": False},
            {"state": NO_UPDATE, "hold": True},
            {"state": NO_UPDATE},
            {"state": NO_UPDATE, "hold": True},  # still held: only C may serve it
            {"state": "done", "hold": False},
        ],
    ),
    "plain text that arrives while a poll runs does not keep the pane held": (
        [
            (0, "listed", info(), SHELL),
            (1, "output", BLOCKED),
            (1.01, "polling"),
            (1.015, "output", b"Deploy? [y/N] "),
            (1.02, "released"),
        ],
        [{"state": None}, {"hold": True}, {}, {"hold": False}, {"state": "blocked", "hold": False}],
    ),
    "output while held joins the held events, in order": (
        [
            (0, "listed", info(), SHELL),
            (1, "output", BLOCKED),
            (1.01, "output", osc7501("state=working:app=builder")),
            (1.02, "polling"),
            (1.05, "released"),
        ],
        [{"state": None}, {"hold": True}, {"state": NO_UPDATE, "hold": False}, {}, {"state": "working"}],
    ),
    "a held THINKTERM blocked asks for the screen once released, to read its question": (
        [
            (0, "listed", info(), SHELL),
            (1, "output", encode_agent("my-agent", "blocked", ts=int(T0 + 1)) + b"Push to? [main/dev]\r\n"),
            (1.01, "polling"),
            (1.05, "released"),
        ],
        [
            {"state": None},
            {"state": NO_UPDATE, "hold": True},
            {},
            {"state": "blocked", "settle": 1.05 + SETTLE},
        ],
    ),
    "plain text is never held": (
        [(0, "listed", info(), SHELL), (5, "output", b"hello\r\n")],
        [{"state": None}, {"state": NO_UPDATE, "hold": False}],
    ),
    "the program leaving ends its blocked record (P7501-8)": (
        [
            (0, "listed", info(command="builder"), APP),
            (0.01, "output", BLOCKED),
            (0.02, "polling"),
            (0.03, "released"),
            (1, "listed", info(), SHELL),
        ],
        [{"state": None}, {"hold": True}, {}, {"state": "blocked"}, {"state": None}],
    ),
    "a pane with screen rules is captured once listed, then after output settles": (
        [
            (0, "listed", info(command="codex"), CODEX),
            (0.5, "captured", "screen text\n"),
            (1, "listed", info(command="codex"), None),
            (2, "output", b"x"),
            (2.1, "output", b"y"),
            (2 + SETTLE, "settled"),
            (2.1 + SETTLE + 0.001, "settled"),
        ],
        [
            {"capture": True},  # a new pane's screen is read at once
            {"capture": False},
            {"capture": False, "settle": None},
            {"settle": 2 + SETTLE, "capture": False},
            {"settle": 2 + SETTLE, "capture": False},  # the first settle time stands
            {"settle": 2.1 + SETTLE, "capture": False},  # not quiet yet: later
            {"settle": None, "capture": True},
        ],
    ),
    "a capture asked for while one runs runs after it, once settled again": (
        [
            (0, "listed", info(command="codex"), CODEX),
            (0.5, "captured", "screen text\n"),
            (1, "output", b"x"),
            (1 + SETTLE + 0.001, "settled"),
            (1.2, "output", b"y"),
            (1.2 + SETTLE + 0.001, "settled"),
            (1.4, "captured", "screen text\n"),
            (1.4 + SETTLE + 0.001, "settled"),
        ],
        [
            {"capture": True},
            {"capture": False},
            {"settle": 1 + SETTLE},
            {"capture": True, "settle": None},
            {"settle": 1.2 + SETTLE},
            {"capture": False, "settle": None},  # one is in flight
            {"settle": 1.4 + SETTLE},  # the deferred one waits for quiet
            {"capture": True},
        ],
    ),
    "output of a shell pane never asks for its screen": (
        [(0, "listed", info(), SHELL), (1, "output", b"x"), (1 + SETTLE + 0.001, "settled")],
        [{"capture": False}, {"settle": None}, {"capture": False}],
    ),
    "lost output re-reads the screen where rules apply": (
        [(0, "listed", info(command="codex"), CODEX), (1, "skipped")],
        [{}, {"settle": 1 + SETTLE}],
    ),
    "a lost link voids timers and re-captures on the next listing": (
        [
            (0, "listed", info(command="codex"), CODEX),
            (1, "output", b"x"),
            (1.05, "disconnected"),
            (5, "listed", info(command="codex"), None),
        ],
        [{"capture": True}, {"settle": 1 + SETTLE}, {"settle": None}, {"capture": True}],
    ),
    # The protocol author's snippet: `status working …` at the prompt, then `sleep 3 &&
    # status done …`. The shell's report holds while its child runs (RI-2); the first
    # look that sees the shell back waits for the next, which brings its `done` along.
    "a shell's report holds through its command; its return and its done come together": (
        [
            (0, "listed", info(), AT_PROMPT),
            (1, "output", WORKING),
            (1.01, "polling"),
            (1.05, "released"),
            (2, "listed", info(command="sleep"), SLEEP),
            (5, "listed", info(), AT_PROMPT),  # the shell computes its report
            (5.1, "output", DONE),
            (5.11, "polling"),
            (5.15, "listed", info(), AT_PROMPT),
            (5.15, "released"),
        ],
        [
            {"state": None},
            {"state": NO_UPDATE, "hold": True},
            {"state": NO_UPDATE},
            {"state": "working"},
            {"state": "working"},  # sleep in front: the shell's working holds
            {"state": NO_UPDATE},  # the first look back: applied at the next
            {"state": NO_UPDATE, "hold": True},
            {"state": NO_UPDATE},
            {"state": None},  # back at the shell: its working ends ...
            {"state": "done", "hold": False},  # ... and its done, in the same look
        ],
    ),
    "Ctrl-C: the second look at the shell back ends its working": (
        [
            (0, "listed", info(), AT_PROMPT),
            (1, "output", WORKING),
            (1.01, "polling"),
            (1.05, "released"),
            (2, "listed", info(command="sleep"), SLEEP),
            (5, "listed", info(), AT_PROMPT),
            (6, "listed", info(), AT_PROMPT),
        ],
        [
            {"state": None},
            {"state": NO_UPDATE, "hold": True},
            {"state": NO_UPDATE},
            {"state": "working"},
            {"state": "working"},
            {"state": NO_UPDATE},
            {"state": None},
        ],
    ),
}


def spinner(start: float, n: int = 5, every: float = 0.08) -> list[tuple[Any, ...]]:
    """`n` spinner frames, one every `every` s from `start` (never a quiet SETTLE)."""
    return [(start + i * every, "output", b"\r\xe2\xa0\x8b Working") for i in range(n)]


#: A timer fires at (not before) its time; the table's times add this, as floats at
#: T0 + t cannot name an instant exactly.
E = 0.001

#: A pane that keeps writing (REREAD = 0.4 s, SETTLE = 0.15 s): steps, reread, outputs.
#: Only the settle timers that matter are fired; the ones that would only wait on are
#: left out where the scenario above already shows them waiting on.
ANIMATED: dict[str, tuple[list[tuple[Any, ...]], float, list[dict[str, Any]]]] = {
    "an animating pane with rules is re-read REREAD after the output that armed the settle": (
        [
            (0, "listed", info(command="codex"), CODEX),
            (0.05, "captured", "screen\n"),
            (1.0, "output", b"a"),
            (1.1, "output", b"b"),
            (1.0 + SETTLE + E, "settled"),
            (1.2, "output", b"c"),
            (1.1 + SETTLE + E, "settled"),
            (1.3, "output", b"d"),
            (1.2 + SETTLE + E, "settled"),
            (1.38, "output", b"e"),
            (1.0 + REREAD + E, "settled"),
            (1.42, "output", b"f"),
            (1.45, "captured", "screen 2\n"),
            (1.42 + SETTLE + E, "settled"),
        ],
        REREAD,
        [
            {"capture": True},
            {"capture": False, "settle": None},
            {"settle": 1.0 + SETTLE},
            {"settle": 1.0 + SETTLE},
            {"settle": 1.1 + SETTLE, "capture": False},  # not quiet: wait on
            {"settle": 1.1 + SETTLE},
            {"settle": 1.2 + SETTLE, "capture": False},
            {"settle": 1.2 + SETTLE},
            {"settle": 1.0 + REREAD, "capture": False},  # the re-read comes before quiet would
            {"settle": 1.0 + REREAD},
            {"settle": None, "capture": True},  # kept writing for REREAD s: read it anyway
            {"settle": 1.42 + SETTLE},  # the next frame arms the next round
            {"capture": False, "settle": 1.42 + SETTLE},
            {"settle": None, "capture": True},  # quiet: read once more, the final screen
        ],
    ),
    "with re-reading off (0), an animating pane is read only once quiet": (
        [
            (0, "listed", info(command="codex"), CODEX),
            (0.05, "captured", "screen\n"),
            *spinner(1.0, 10),
            (1.0 + REREAD + E, "settled"),
            (1.72 + SETTLE + E, "settled"),
        ],
        0,
        [
            {"capture": True},
            {},
            *[{"settle": 1.0 + SETTLE} for _ in range(10)],
            {"settle": 1.72 + SETTLE, "capture": False},  # past REREAD: still waits for quiet
            {"settle": None, "capture": True},
        ],
    ),
    "a re-read due while a capture runs is read right after it, not at the next quiet": (
        [
            (0, "listed", info(command="codex"), CODEX),
            (0.05, "captured", "screen\n"),
            *spinner(1.0),
            (1.0 + REREAD + E, "settled"),  # capture 1 starts
            *spinner(1.48),
            (1.48 + REREAD + E, "settled"),  # capture 1 still runs: one more is due after it
            (1.9, "captured", "screen 2\n"),  # capture 1 ends; the spinner goes on
            *spinner(1.96),
            (1.9 + REREAD + E, "settled"),
        ],
        REREAD,
        [
            {"capture": True},
            {},
            *[{} for _ in range(5)],
            {"capture": True, "settle": None},
            {"settle": 1.48 + SETTLE},
            *[{} for _ in range(4)],
            {"capture": False, "settle": None},  # one is in flight
            {"capture": False, "settle": 1.9 + SETTLE},  # armed again as it ended
            *[{} for _ in range(5)],
            {"capture": True, "settle": None},  # output never paused: REREAD after that
        ],
    ),
    "an animating shell pane is never read": (
        [(0, "listed", info(), SHELL), *spinner(1.0, 12), (1.0 + REREAD + E, "settled")],
        REREAD,
        [{"capture": False}, *[{"settle": None, "capture": False} for _ in range(13)]],
    ),
    "an animating agent that reports OSC 7501 is never read (RI-2)": (
        [
            (0, "listed", info(command="codex"), CODEX),
            (0.05, "captured", "screen\n"),
            (0.5, "output", osc7501("state=working:app=codex")),
            (0.52, "polling"),  # a look at the process, started after the report
            (0.55, "released"),
            *spinner(1.0, 12),
            (1.0 + REREAD + E, "settled"),
        ],
        REREAD,
        [
            {"capture": True},
            {},
            {"hold": True, "settle": 0.5 + SETTLE},  # armed before the report was read
            {},
            {"state": "working"},
            *[{"capture": False} for _ in range(12)],  # the frames arm nothing more
            {"settle": None, "capture": False},  # and the armed time reads nothing
        ],
    ),
}


@pytest.mark.parametrize("name", list(ANIMATED))
def test_tracker_animated(name: str) -> None:
    steps, reread, expected = ANIMATED[name]
    got = run(steps, reread)
    assert len(got) == len(expected), [s[:2] for s in steps]
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        for k, v in e.items():
            want = pytest.approx(v, abs=1e-6) if isinstance(v, float) else v
            at = f"step {i} at {steps[i][0]:.3f} {steps[i][1]!r}"
            assert g[k] == want, f"{at}: {k} = {g[k]!r}, expected {v!r}"


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_tracker_table(name: str) -> None:
    steps, expected = SCENARIOS[name]
    got = run(steps)
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        for k, v in e.items():
            want = pytest.approx(v, abs=1e-6) if isinstance(v, float) else v
            assert g[k] == want, f"step {i} {steps[i][1]!r}: {k} = {g[k]!r}, expected {v!r}"


def test_the_classifier_deadline_is_handed_out_and_honoured() -> None:
    """A working contract goes stale (TA-12): the tracker names that moment, and at it
    re-evaluates with no new input."""
    from helpers import thinkterm

    t = PaneTracker(KEY, "main", RULES)
    t.step(Listed(T0, info(), SHELL))
    assert t.step(Wrote(T0 + 0.01, thinkterm("my-agent", "working", ts=int(T0)))).look  # held for a look
    t.step(Polling())
    fx = t.step(Released(T0 + 0.02))
    assert not fx.look
    assert fx.update is not None and fx.update.state == "working"
    assert fx.deadline_at is not None and fx.deadline_at > T0
    fx = t.step(Deadline(fx.deadline_at))
    assert fx.update is not None and fx.update.state != "working"


def test_without_holding_a_report_counts_at_once() -> None:
    """`hold_reports=False` (the bench's diagnostic): the report is classified as it
    arrives, with no look asked for; held (the default) it waits for one."""
    for hold in (True, False):
        t = PaneTracker(KEY, "main", RULES, hold_reports=hold)
        t.step(Listed(T0, info(), SHELL))
        fx = t.step(Wrote(T0 + 0.01, BLOCKED))
        assert fx.look is hold
        assert (fx.update is not None and fx.update.state == "blocked") is not hold


def test_seen_turns_done_into_idle() -> None:
    t = PaneTracker(KEY, "main", RULES)
    t.step(Listed(T0, info(command="builder"), APP))
    t.step(Wrote(T0 + 0.01, osc7501("state=done:app=builder")))
    t.step(Polling())
    fx = t.step(Released(T0 + 0.02))
    assert fx.update is not None and fx.update.state == "done"
    fx = t.step(Seen(T0 + 1))
    assert fx.update is None or fx.update.state in ("idle", None)
    assert t.last_update is not None and t.last_update.state in ("idle", None)


def test_text_longer_than_the_wire_takes_is_cut_to_its_limit() -> None:
    """A tmux session name longer than the server stores (`pane.NAME_MAX`, its
    `tmux_sessions.name` column) is cut, not sent whole: the server refuses a pane with a
    longer value, so an honest collector would lose the pane for the end of a name."""
    from paneboard_protocol.pane import NAME_MAX, WIRE_TEXT_MAX

    t = PaneTracker(KEY, "main", RULES)
    long_info = PaneInfo("$0", "@0", "0", "%1", 100, False, "/dev/pts/9", "s" * 4000, "w" * 5000, "bash")
    update = t.step(Listed(T0, long_info, SHELL)).update
    assert update is not None
    assert update.session == "s" * NAME_MAX
    window_max = WIRE_TEXT_MAX["window"]
    assert window_max is not None and update.window == ("0:" + "w" * 5000)[:window_max]


def test_unserved_names_a_report_no_look_under_way_was_started_for() -> None:
    """The watcher starts a look only for panes holding such a report: a pane whose
    reports a look already under way serves does not make another start."""
    t = PaneTracker(KEY, "main", RULES)
    t.step(Listed(T0, info(command="builder"), APP))
    assert not t.unserved()
    assert t.step(Wrote(T0 + 0.01, osc7501("state=working:app=builder"))).look
    assert t.unserved()
    t.step(Polling())
    assert not t.unserved()
    t.step(Wrote(T0 + 0.02, b"plain text\r\n"))
    assert not t.unserved()  # text attributes nothing: no look needed for it
    t.step(Wrote(T0 + 0.03, osc7501("state=done:app=builder")))
    assert t.unserved()
    t.step(Polling())
    assert not t.unserved()
    assert t.step(Released(T0 + 0.04)).look  # the first look: the `done` waits for the second
    assert not t.unserved()
    fx = t.step(Released(T0 + 0.05))
    assert not fx.look
    assert fx.update is not None and fx.update.state == "done"


def test_every_input_returns_all_its_effects_at_once() -> None:
    """What an input asks for comes back from that input and only from it: an update
    or a capture is handed out once, never left for a later input to carry (a runner
    that forgot to ask after an input lost the update)."""
    t = PaneTracker(KEY, "main", RULES)
    first = t.step(Listed(T0, info(command="codex"), CODEX))
    assert first.update is not None and first.capture  # a new pane: classified, its screen read
    assert t.step(Polling()) == Effects(None, False, None, first.deadline_at, False)
    fx = t.step(Wrote(T0 + 1, b"x"))
    assert (fx.update, fx.capture) == (None, False)
    assert fx.settle_at == pytest.approx(T0 + 1 + SETTLE)
    assert t.step(Polling()).settle_at == fx.settle_at  # the timer stands until it fires
    assert t.step(Disconnected()) == Effects()  # timers and captures void with the link


def test_a_contract_with_an_unknown_state_names_the_agent() -> None:
    """RI-6, read live as `paneboard replay` reads it: the agent is named, its state
    never set from the contract."""
    from helpers import thinkterm

    t = PaneTracker(KEY, "main", RULES)
    t.step(Listed(T0, info(), SHELL))
    fx = t.step(Wrote(T0 + 0.01, thinkterm("my-agent", "pondering", ts=int(T0))))
    t.step(Polling())
    fx = t.step(Released(T0 + 0.02))
    assert t.last_update is not None and t.last_update.agent == "my-agent"
    assert t.last_update.state != "pondering"
    assert fx.discarded == ()  # only a tracker made for --explain hands them out


def test_explain_hands_out_each_discarded_report_once() -> None:
    from helpers import thinkterm

    t = PaneTracker(KEY, "main", RULES, explain=True)
    t.step(Listed(T0, info(command="builder"), APP))
    bad = osc7501("state=pondering:app=builder") + thinkterm("my-agent", "musing", ts=int(T0))
    fx = t.step(Wrote(T0 + 0.01, bad))
    assert [(r.proto, r.reason) for r in fx.discarded] == [
        ("osc7501", "unknown state 'pondering'"),
        ("thinkterm", fx.discarded[1].reason),
    ]
    assert "musing" in fx.discarded[1].reason
    assert t.step(Wrote(T0 + 0.02, WORKING)).discarded == ()  # a valid report is no discarded one
    t.step(Polling())
    assert t.step(Released(T0 + 0.03)).discarded == ()  # said when written, not again when fed
