"""The pure notification decisions: quiet rules, routing, limits, watch tracking."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st
from paneboard_server.config import ConfigError
from paneboard_server.notify.events import StateChange
from paneboard_server.notify.limits import Limiter
from paneboard_server.notify.quiet import Dnd, Mute, QuietHours, parse_hhmm, shared_quiet, viewer_quiet
from paneboard_server.notify.routing import Channel
from paneboard_server.notify.settings import parse_channels
from paneboard_server.notify.watch import WatchTracker


def ch(state="blocked", prev="working", host="build-1", agent="claude", pane="7") -> StateChange:
    return StateChange(pane, host, "s", "0", agent, state, prev)


def test_only_changes_into_blocked_error_or_done_are_notable():
    assert ch("blocked").notable
    assert ch("done").notable
    assert ch("error").notable
    assert not ch("error", prev="error").notable
    assert not ch("working").notable
    assert not ch("blocked", prev="blocked").notable
    assert not ch("idle", prev="done").notable


def test_mutes_cover_their_scope_and_expire():
    now = 1000.0
    mutes = [Mute(1, "host", "build-1", until=now + 60)]
    assert shared_quiet(ch(), now, dnd=None, mutes=mutes) == "muted host"
    assert shared_quiet(ch(host="other"), now, dnd=None, mutes=mutes) is None
    assert shared_quiet(ch(), now + 61, dnd=None, mutes=mutes) is None
    assert shared_quiet(ch(), now, dnd=None, mutes=[Mute(2, "agent", "claude", None)]) == "muted agent"
    assert shared_quiet(ch(agent="codex"), now, dnd=None, mutes=[Mute(2, "agent", "claude", None)]) is None
    assert shared_quiet(ch(), now, dnd=None, mutes=[Mute(3, "pane", "7", None)]) == "muted pane"
    assert shared_quiet(ch(pane="8"), now, dnd=None, mutes=[Mute(3, "pane", "7", None)]) is None


def test_a_logins_own_mute_quiets_that_login_alone():
    now = 1000.0
    own = [Mute(4, "host", "build-1", until=None, viewer_id=7)]
    assert shared_quiet(ch(), now, dnd=None, mutes=own) is None  # channels still told
    assert viewer_quiet(ch(), now, dnd=None, mutes=own, hours=None, viewer_id=7) == "muted host"
    assert viewer_quiet(ch(), now, dnd=None, mutes=own, hours=None, viewer_id=8) is None
    assert viewer_quiet(ch(), now, dnd=None, mutes=own, hours=None) is None  # no account


def test_dnd_silences_everything_until_it_ends():
    assert shared_quiet(ch(), 10, dnd=Dnd(True), mutes=[]) == "do not disturb"
    assert shared_quiet(ch(), 10, dnd=Dnd(True, until=20), mutes=[]) == "do not disturb"
    assert shared_quiet(ch(), 30, dnd=Dnd(True, until=20), mutes=[]) is None
    assert shared_quiet(ch(), 10, dnd=Dnd(False), mutes=[]) is None


def at(hour: int, minute: int = 0) -> float:
    return dt.datetime(2026, 12, 2, hour, minute, tzinfo=dt.UTC).timestamp()


def test_quiet_hours_wrap_midnight_in_the_viewers_zone():
    night = QuietHours(parse_hhmm("22:00"), parse_hhmm("07:00"), "UTC")
    assert night.contains(at(23))
    assert night.contains(at(3))
    assert not night.contains(at(7))
    assert not night.contains(at(12))
    assert night.contains(at(22))
    lunch = QuietHours(parse_hhmm("12:00"), parse_hhmm("13:00"), "Europe/Berlin")  # UTC+1 in December
    assert lunch.contains(at(11, 30))
    assert not lunch.contains(at(12, 30))
    assert viewer_quiet(ch(), at(3), dnd=None, mutes=[], hours=night) == "quiet hours"
    assert viewer_quiet(ch(), at(12), dnd=None, mutes=[], hours=night) is None


def test_bad_time_of_day_is_a_clear_error():
    with pytest.raises(ValueError, match="HH:MM"):
        parse_hhmm("25h")


def test_channels_parse_and_route():
    chans = parse_channels(
        {
            "channels": [
                {"url": "json://127.0.0.1:1/", "states": ["blocked"], "hosts": ["build-*"]},
                {"url": "ntfy://x/y"},
            ]
        }
    )
    assert chans[0].wants(ch("blocked"))
    assert not chans[0].wants(ch("done"))
    assert not chans[0].wants(ch("blocked", host="laptop"))
    assert chans[1].wants(ch("done", host="laptop"))
    only_codex = Channel(url="json://x", agents=("codex",))
    assert not only_codex.wants(ch())
    assert only_codex.wants(ch(agent="codex"))


@pytest.mark.parametrize(
    ("cfg", "msg"),
    [
        ({"channels": {"url": "x"}}, "array of tables"),
        ({"channels": [{"url": "nope"}]}, r"channels\[0\]\.url: must be an Apprise URL"),
        (
            {"channels": [{"url": "json://x", "states": ["sleeping"]}]},
            r"states\[0\]: expected one of .*sleeping",
        ),
        ({"channels": [{"url": "json://x", "hosts": [1]}]}, r"hosts\[0\]: expected a string"),
        ({"channels": [{"url": "json://x", "colour": "red"}]}, r"channels\[0\]\.colour: unknown key"),
    ],
)
def test_bad_channel_config_names_the_entry(cfg, msg):
    with pytest.raises(ConfigError, match=msg):
        parse_channels(cfg)


def test_channel_label_never_shows_the_secret_url():
    assert Channel(url="slack://tokenA/tokenB/tokenC").label == "slack://…"


def test_dedupe_per_pane_and_state_then_rate_limit():
    lim = Limiter(per_minute=60, burst=2, dedupe_window=300)
    assert lim.allow("c", "7", "blocked", 0)
    assert not lim.allow("c", "7", "blocked", 0)  # same pane+state: duplicate
    assert lim.allow("c", "7", "done", 0)  # other state: new news
    assert not lim.allow("c", "8", "blocked", 0)  # bucket empty (burst 2)
    assert lim.dropped == 1
    assert lim.allow("other", "8", "blocked", 0)  # buckets are per channel
    assert lim.allow("c", "8", "blocked", 1)  # refilled at 1/s
    assert lim.allow("c", "7", "blocked", 400)  # dedupe window over


@given(st.lists(st.floats(min_value=0, max_value=600), min_size=1, max_size=200))
def test_rate_limit_never_exceeds_burst_plus_rate(times):
    lim = Limiter(per_minute=6, burst=3, dedupe_window=0)
    sent = [t for i, t in enumerate(sorted(times)) if lim.allow("c", str(i), "blocked", t)]
    if sent:
        span = sent[-1] - sent[0]
        assert len(sent) <= 3 + span * 6 / 60 + 1e-9


def test_limiter_memory_is_bounded():
    lim = Limiter(per_minute=1e9, burst=1e9, max_keys=100)
    for i in range(1000):
        lim.allow("c", str(i), "blocked", float(i))
    assert len(lim._last) == 100


def test_watch_tracker_expires_tabs():
    w = WatchTracker(ttl=45)
    w.report("viewer:1", "tabA", True, 0)
    w.report("viewer:1", "tabB", False, 0)
    assert w.watching("viewer:1", 10)
    assert not w.watching("viewer:2", 10)
    assert not w.watching("viewer:1", 50)
    w.report("viewer:2", "tabC", True, 55)
    assert w.watchers(56) == {"viewer:2"}
    w.report("viewer:1", "tabA", False, 60)
    assert not w.watching("viewer:1", 61)


def test_error_is_routed_to_channels_by_default_and_pushed_urgently():
    from paneboard_server.notify.webpush import urgency_for

    [default, blocked_only] = parse_channels(
        {"channels": [{"url": "json://localhost/x"}, {"url": "json://localhost/y", "states": ["blocked"]}]}
    )
    assert default.wants(ch("error")) and default.wants(ch("blocked")) and default.wants(ch("done"))
    assert not blocked_only.wants(ch("error"))
    assert urgency_for("error") == "high" and urgency_for("done") == "normal"
