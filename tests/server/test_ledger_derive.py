"""The ledger's derivation (`paneboard_server.ledger`) on replayed histories: every way a
block and a done can end, repeats, and rows delivered out of order."""

from __future__ import annotations

import random

import pytest
from paneboard_server.ledger.intervals import Event, Interval, derive, normalise, step

T = 1_900_000_000.0


def ev(
    dt: float,
    state: str | None,
    *,
    agent: str | None = "claude",
    kind: str | None = None,
    msg: str | None = None,
    reason: str = "report",
    id: int = 0,
) -> Event:
    return Event(T + dt, agent, state, kind, msg, reason, id)


def blocked_then(end: Event) -> list[Interval]:
    return derive([ev(0, "working", id=1), ev(10, "blocked", kind="permission", msg="Allow?", id=2), end])


@pytest.mark.parametrize(
    ("end", "ended"),
    [
        (ev(70, "working", id=3), "answered"),
        (ev(70, "done", id=3), "answered"),
        (ev(70, "blocked", kind="question", id=3), "answered"),  # answered, and asked something else
        (ev(70, "idle", id=3), "cancelled"),
        (ev(70, "error", id=3), "cancelled"),
        (ev(70, None, id=3), "cancelled"),
        (ev(70, None, agent=None, id=3), "exited"),  # the program ended
        (ev(70, "idle", agent="codex", id=3), "exited"),  # another program took the pane
        (ev(70, None, agent="claude", reason="gone", id=3), "gone"),
        (ev(70, None, agent=None, reason="stale", id=3), "stale"),
    ],
)
def test_every_way_a_block_ends(end: Event, ended: str) -> None:
    ivs = blocked_then(end)
    block = ivs[0]
    assert (block.state, block.kind, block.msg, block.agent) == ("blocked", "permission", "Allow?", "claude")
    assert (block.start_t, block.end_t, block.ended, block.end_state) == (T + 10, T + 70, ended, end.state)
    assert block.waited(T + 1000) == 60
    # A next wait opens when the row that ended this one is itself a wait.
    assert [iv.state for iv in ivs[1:]] == (
        [end.state] if end.state in ("blocked", "done") and end.reason != "gone" else []
    )


@pytest.mark.parametrize(
    ("end", "ended"),
    [
        (ev(50, "idle", reason="seen"), "seen"),
        (ev(50, "idle"), "seen"),
        (ev(50, "working"), "resumed"),
        (ev(50, "blocked", kind="question"), "resumed"),
        (ev(50, "error"), "cancelled"),
        (ev(50, None, agent=None), "exited"),
        (ev(50, None, reason="gone"), "gone"),
        (ev(50, None, agent=None, reason="stale"), "stale"),
    ],
)
def test_every_way_a_done_ends(end: Event, ended: str) -> None:
    ivs = derive([ev(0, "working"), ev(20, "done"), end])
    assert (ivs[0].state, ivs[0].end_t, ivs[0].ended) == ("done", T + 50, ended)


def test_an_open_block_counts_up_to_now_and_a_repeat_does_not_restart_it() -> None:
    ivs = derive([ev(0, "blocked", kind="question"), ev(30, "blocked", kind="question")])
    assert len(ivs) == 1 and ivs[0].end_t is None and ivs[0].ended is None
    assert ivs[0].waited(T + 100) == 100


def test_a_pane_that_comes_back_blocked_after_gone_opens_a_new_block() -> None:
    ivs = derive([ev(0, "blocked"), ev(10, None, reason="gone"), ev(20, "blocked")])
    assert [(iv.start_t - T, iv.ended) for iv in ivs] == [(0, "gone"), (20, None)]


def test_states_that_do_not_wait_make_no_intervals() -> None:
    assert derive([ev(0, "working"), ev(5, "idle"), ev(9, "error"), ev(12, None, agent=None)]) == []


def test_a_program_that_names_no_agent_is_answered_too() -> None:
    ivs = derive([ev(0, "blocked", agent=None), ev(9, "working", agent=None)])
    assert ivs[0].ended == "answered"
    assert derive([ev(0, "blocked", agent=None), ev(9, None, agent=None)])[0].ended == "exited"
    assert derive([ev(0, "blocked", agent=None), ev(9, "working", agent="claude")])[0].ended == "exited"


def test_step_against_an_open_interval() -> None:
    open_ = Interval("blocked", T, "claude", "auth", "token?")
    closed, nxt = step(open_, ev(40, "working"))
    assert closed is not None and (closed.end_t, closed.ended) == (T + 40, "answered") and nxt is None
    closed, nxt = step(open_, ev(40, "blocked", kind="auth"))
    assert closed is None and nxt is open_
    # A derivation can start from a wait already open (the store's stored one).
    assert derive([ev(40, "idle")], open_)[0].ended == "cancelled"


def test_out_of_order_and_duplicated_rows_give_the_same_ledger() -> None:
    day = [ev(0, "working", id=1)]
    t, i = 0.0, 2
    rng = random.Random(7)
    for _ in range(200):
        t += rng.uniform(1, 300)
        state = rng.choice(["working", "blocked", "blocked", "done", "idle", None])
        kind = rng.choice(["permission", "question"]) if state == "blocked" else None
        reason = rng.choice(["report"] * 8 + ["seen", "stale", "gone"])
        day.append(ev(t, state, kind=kind, reason=reason, id=i))
        i += 1
    want = derive(day)
    assert len(want) > 20 and {iv.ended for iv in want} >= {"answered", "cancelled", "gone", "seen"}
    for seed in range(5):
        shuffled = list(day)
        random.Random(seed).shuffle(shuffled)
        assert derive(shuffled) == want
    # Same-time rows: the id decides, whatever order they come in.
    a, b = ev(5, "blocked", id=10), ev(5, "working", id=11)
    assert derive([b, a]) == derive([a, b]) == [derive([a, b])[0]]
    assert derive([b, a])[0].ended == "answered" and derive([b, a])[0].waited(T + 99) == 0


def test_normalise_blanks_what_differs_between_occurrences() -> None:
    a = normalise("Allow edit of 'src/a.py' (3 lines)?")
    assert a == normalise("Allow  edit of 'b.py' (12 lines)?") == "allow edit of … (# lines)?"
    assert normalise("Run /usr/bin/make -j8 now?") == normalise("Run ./build.sh -j2 now?")
    assert normalise(None) == "" and len(normalise("x" * 10_000)) == 160
