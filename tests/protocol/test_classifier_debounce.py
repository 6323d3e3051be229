"""TA-6 / RI-3: screen-inferred transitions are debounced; time moves only by hand."""

from __future__ import annotations

import itertools

import pytest
from classifier_steps import RULES, rep
from hypothesis import given, settings
from hypothesis import strategies as st
from paneboard_protocol.classifier import PaneClassifier
from paneboard_protocol.debounce import CAP, CONFIRM

PERMISSION = "Do you want to proceed?\n❯ 1. Yes"
PROMPT = "done.\n❯ "
WORKING = "✻ Thinking… (esc to interrupt)"
OTHER = "plain text"


def pane(first: str, t: float = 10.0) -> PaneClassifier:
    c = PaneClassifier(RULES)
    c.set_process(0, "claude", 1)
    c.set_screen(t, first)
    return c


@pytest.mark.parametrize(
    ("first", "then", "before", "after"),
    [
        pytest.param(PERMISSION, PROMPT, "blocked", "idle", id="TA-6-leaving-blocked-to-idle"),
        pytest.param(PERMISSION, WORKING, "blocked", "working", id="TA-6-leaving-blocked-to-working"),
        pytest.param(WORKING, PROMPT, "working", "idle", id="TA-6-working-to-idle"),
        pytest.param(WORKING, OTHER, "working", "idle", id="RI-3-working-to-no-match-fallback-idle"),
    ],
)
def test_debounced_transitions(first, then, before, after):
    c = pane(first)
    c.set_screen(11.0, then)
    assert c.classification(11.0).state == before
    assert c.next_deadline(11.0) == pytest.approx(11.0 + CONFIRM)
    assert c.classification(11.0 + CONFIRM - 0.01).state == before
    got = c.classification(11.0 + CONFIRM)
    assert got.state == after
    assert got.since == pytest.approx(11.0 + CONFIRM)


@pytest.mark.parametrize(
    ("first", "then", "state"),
    [
        pytest.param(PROMPT, PERMISSION, "blocked", id="RI-3-entering-blocked-is-immediate"),
        pytest.param(WORKING, PERMISSION, "blocked", id="RI-3-working-to-blocked-is-immediate"),
        pytest.param(PROMPT, WORKING, "working", id="RI-3-idle-to-working-is-immediate"),
    ],
)
def test_immediate_transitions(first, then, state):
    c = pane(first)
    c.set_screen(11.0, then)
    assert c.classification(11.0).state == state
    assert c.next_deadline(11.0) is None


def test_RI_3_first_classification_is_immediate():
    c = pane(PROMPT)
    assert c.classification(10.0).state == "idle"
    c2 = pane(PERMISSION)
    assert c2.classification(10.0).state == "blocked"


def test_RI_3_half_drawn_frame_never_releases():
    c = pane(PERMISSION)
    c.set_screen(11.0, PROMPT)  # half-drawn
    c.set_screen(11.2, PERMISSION)  # the prompt is still there
    assert c.next_deadline(11.2) is None
    assert c.classification(20.0).state == "blocked"
    assert c.classification(20.0).since == 10.0


def test_RI_3_confirming_readings_keep_the_first_deadline():
    c = pane(PERMISSION)
    for i in range(4):
        c.set_screen(11.0 + 0.15 * i, PROMPT)
        if 0.15 * i < CONFIRM - 1e-9:
            assert c.classification(11.0 + 0.15 * i).state == "blocked"
    assert c.classification(11.0 + CONFIRM).state == "idle"


def test_RI_3_capped_at_700ms_from_first_reading():
    c = pane(PERMISSION)
    c.set_screen(11.0, PROMPT)
    c.set_screen(11.3, WORKING)  # a different candidate restarts its 450 ms, not the cap
    assert c.next_deadline(11.3) == pytest.approx(11.0 + CAP)
    assert c.classification(11.0 + CAP - 0.01).state == "blocked"
    assert c.classification(11.0 + CAP).state == "working"


def test_TA_6_protocol_states_never_debounced():
    c = PaneClassifier(RULES)
    c.set_process(0, "claude", 1)
    c.feed(1, [rep("blocked", app="claude-code")])
    c.feed(2, [rep("idle", app="claude-code")])
    assert c.classification(2).state == "idle"
    assert c.next_deadline(2) is None


def test_RI_3_release_is_printed_at_its_own_time_even_if_asked_late():
    c = pane(WORKING)
    c.set_screen(11.0, PROMPT)
    got = c.classification(99.0)
    assert got.state == "idle" and got.since == pytest.approx(11.45)


SCREENS = [PERMISSION, PROMPT, WORKING, OTHER]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 40), st.sampled_from(SCREENS)), min_size=1, max_size=30))
def test_TA_6_blocked_is_never_left_on_a_half_drawn_frame(readings):
    """Property: the screen showing blocked shows blocked at once, and leaving blocked at T
    means the screen said something else continuously since some reading <= T - 450 ms."""
    c = PaneClassifier(RULES)
    c.set_process(0, "claude", 1)
    t = 10.0
    seen: list[tuple[float, bool]] = []  # (time, reading was blocked)
    shown: list[tuple[float, str]] = []
    for step, screen in readings:
        nxt = t + step / 100  # 10 ms steps: many readings fall inside one debounce window
        probe = t + 0.01
        while probe < nxt:  # sample the classification between readings too
            shown.append((probe, c.classification(probe).state))
            probe += 0.01
        t = nxt
        c.set_screen(t, screen)
        seen.append((t, screen is PERMISSION))
        state = c.classification(t).state
        shown.append((t, state))
        if screen is PERMISSION:
            assert state == "blocked"
    for (t_prev, s_prev), (t_now, s_now) in itertools.pairwise(shown):
        if s_prev == "blocked" and s_now != "blocked":
            # Sampled every 10 ms, so the release happened in (t_prev, t_now]; the last
            # blocked reading is at least 450 ms before it (the first non-blocked reading
            # after it opened the debounce, and no blocked reading came since).
            last_blocked = max(r for r, b in seen if b and r <= t_now)
            first_after = min(r for r, b in seen if r > last_blocked)
            assert t_now - first_after >= 0.45 - 1e-6, (last_blocked, first_after, t_prev, t_now)
