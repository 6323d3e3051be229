"""The server's config file, read from disk as `serve --config` reads it: every mistake
is one line naming the file, the key and a fix, and the limits are where they were."""

from __future__ import annotations

from pathlib import Path

import pytest
from paneboard_server.config import Config, ConfigError, load_config
from paneboard_server.notify.settings import settings_and_routes


def _load(tmp_path: Path, text: str) -> Config:
    f = tmp_path / "server.toml"
    f.write_text(text)
    return load_config(f)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("[server]\nprot = 1", "server.prot: unknown key; did you mean port?"),
        ("[sever]\nport = 1", "sever: unknown key; did you mean server?"),
        (
            '[server]\nport = "8080"',
            'server.port: expected an integer from 1 to 65535, got the string "8080"; e.g. port = 8765',
        ),
        (
            "[server]\nport = 80.5",
            "server.port: expected an integer from 1 to 65535, got 80.5; e.g. port = 8765",
        ),
        (
            "[server]\nport = 70000",
            "server.port: expected an integer from 1 to 65535, got 70000; e.g. port = 8765",
        ),
        (
            "[retention]\nmax_age_days = 0",
            "retention.max_age_days: expected a number greater than 0, got 0; e.g. max_age_days = 30",
        ),
        (
            '[server]\ncookie_secure = "yes"',
            'server.cookie_secure: expected true or false, got the string "yes"; e.g. cookie_secure = false',
        ),
        (
            '[server]\npublic_url = "ftp://x"',
            "server.public_url: must be an http:// or https:// URL with a host, not 'ftp://x'; "
            'e.g. public_url = "https://board.example"',
        ),
        (
            '[server]\ntrusted_proxies = ["10.0.0.0/33"]',
            "server.trusted_proxies: '10.0.0.0/33' is not an IP address or network; give addresses",
        ),
        (
            "[limits]\nmax_body_bytes = 1024",
            "limits.max_body_bytes: expected an integer greater than 1024, got 1024; "
            "e.g. max_body_bytes = 65536",
        ),
        (
            '[notify]\nsubject = "me"',
            'notify.subject: must be a mailto: or https:// URL; e.g. subject = "mailto:you@example.com"',
        ),
        (
            "[notify]\npush_ttl = -1",
            "notify.push_ttl: expected an integer greater than 0, got -1; e.g. push_ttl = 3600",
        ),
        (
            '[[notify.channels]]\nurl = "json://x"\nstates = ["sleeping"]',
            'notify.channels[0].states[0]: expected one of "blocked", "done", "error", "idle", "working", '
            'got the string "sleeping"; e.g. states = ["blocked"]',
        ),
        (
            '[[notify.channels]]\nurl = "nosuchscheme://h/t"',
            "notify.channels[0].url: scheme 'nosuchscheme' is not one Apprise knows",
        ),
        (
            '[[notify.channels]]\nurl = "json://x"\nescalate_after = 60\nescalate_to = "nobody"',
            'notify.channels[0].escalate_to: "nobody" names no other channel; '
            "give the name of another [[notify.channels]] entry",
        ),
    ],
)
def test_each_error_names_the_file_the_key_and_the_fix(tmp_path: Path, text: str, want: str) -> None:
    with pytest.raises(ConfigError) as e:
        _load(tmp_path, text)
    assert str(e.value).startswith(f"{tmp_path / 'server.toml'}: {want}"), str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("section", "key", "good", "bad"),
    [
        ("server", "port", "65535", "65536"),
        ("server", "port", "1", "0"),
        ("server", "grace_period", "0", "-0.5"),
        ("server", "answer_ttl", "3600", "3600.5"),
        ("limits", "max_message_bytes", "1025", "1024"),
        ("limits", "max_header_bytes", "1025", "1024"),
        ("limits", "gone_in_memory", "0", "-1"),
        ("retention", "batch", "1", "0"),
        ("notify", "group_window", "0.1", "0"),
    ],
)
def test_the_limits_stay_where_they_were(tmp_path: Path, section: str, key: str, good: str, bad: str) -> None:
    cfg = _load(tmp_path, f"[{section}]\n{key} = {good}\n")
    assert getattr(getattr(cfg, section), key) == float(good)
    with pytest.raises(ConfigError, match=rf"{section}\.{key}: expected"):
        _load(tmp_path, f"[{section}]\n{key} = {bad}\n")


def test_a_good_file_keeps_every_default_it_does_not_set(tmp_path: Path) -> None:
    cfg = _load(
        tmp_path,
        '[server]\nport = 9000\npublic_url = "https://board.example/pb/"\n'
        '[notify]\npush_ttl = 60\n[[notify.channels]]\nurl = "json://127.0.0.1:9/x"\n'
        'states = "blocked"\ndone = false\n',
    )
    assert (cfg.server.port, cfg.server.public_url, cfg.notify.push_ttl) == (
        9000,
        "https://board.example/pb",
        60,
    )
    default = Config()
    assert (cfg.server.host, cfg.retention, cfg.limits) == (
        default.server.host,
        default.retention,
        default.limits,
    )
    assert cfg.notify.subject == default.notify.subject
    [route] = settings_and_routes(cfg.notify)[1]
    assert route.states == frozenset({"blocked"}) and route.hosts == ()
    assert load_config(None) == default


def test_an_unreadable_or_broken_file_says_which_and_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.toml: cannot read: .*; check the path$"):
        load_config(tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match=r"server\.toml: not valid TOML: .*; fix the syntax there$"):
        _load(tmp_path, "[server\n")
