"""The collector's config file, read from disk as `agent --config` reads it: every
mistake is one line naming the file, the key and a fix, and the ranges stay."""

from __future__ import annotations

from pathlib import Path

import pytest
from paneboard_agent.config import Config, ConfigError, load_config


def _load(tmp_path: Path, text: str) -> Config:
    f = tmp_path / "agent.toml"
    f.write_text(text)
    return load_config(f)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ('[[hosts]]\nhost = "b"\nprot = 22', "hosts[0].prot: unknown key; did you mean port?"),
        ("pol_interval = 1", "pol_interval: unknown key; did you mean poll_interval?"),
        (
            '[[hosts]]\nhost = "b"\nport = 0',
            "hosts[0].port: expected an integer from 1 to 65535, got 0; e.g. port = 22",
        ),
        (
            'poll_interval = "fast"',
            'poll_interval: expected a number from 0.1 to 60, got the string "fast"; e.g. poll_interval = 1',
        ),
        (
            "screen_reread = 11",
            "screen_reread: expected a number from 0 to 10, got 11; e.g. screen_reread = 0.4",
        ),
        (
            '[[hosts]]\nlocal = true\nallow_input = "yes"',
            'hosts[0].allow_input: expected true or false, got the string "yes"; e.g. allow_input = false',
        ),
        (
            '[[hosts]]\nhost = "b"\nidentity = ["~/.ssh/k", ""]',
            'hosts[0].identity[1]: expected a non-empty string on one line, got the string ""; '
            'e.g. identity = ["..."]',
        ),
        (
            "[[hosts]]\nport = 22",
            'hosts[0].host: missing; give host = "NAME" (or an ssh config alias), or local = true',
        ),
        (
            '[[hosts]]\nlocal = true\nuser = "u"',
            "hosts[0].user: only meaningful for an SSH host; remove user, or give host instead of local",
        ),
        (
            '[[hosts]]\nlocal = true\ntmux_socket = "/tmp/x"',
            'hosts[0].tmux_socket: a name (tmux -L), not a path; use tmux_socket_path = "/tmp/x" for a path',
        ),
        (
            '[hosts]\nhost = "b"',
            "hosts: expected an array of tables ([[hosts]]), got a table; "
            "write each entry as a [[hosts]] table",
        ),
    ],
)
def test_each_error_names_the_file_the_key_and_the_fix(tmp_path: Path, text: str, want: str) -> None:
    with pytest.raises(ConfigError) as e:
        _load(tmp_path, text)
    assert str(e.value) == f"{tmp_path / 'agent.toml'}: {want}"


def test_a_good_file_is_read_as_before(tmp_path: Path) -> None:
    cfg = _load(
        tmp_path,
        'poll_interval = 60\nscreen_reread = 0\ntransports = "ssh"\n'
        '[[hosts]]\nlocal = true\ntmux_socket = "w"\n'
        '[[hosts]]\nhost = "b"\nport = 65535\nidentity = "~/.ssh/k"\n'
        "connect_timeout = 0.5\nscreens = false\n",
    )
    assert (cfg.poll_interval, cfg.screen_reread, cfg.transports) == (60, 0, ("ssh",))
    local, ssh = cfg.hosts
    assert local.local and local.tmux_socket == "w" and local.identity == () and local.port is None
    assert (ssh.host, ssh.port, ssh.identity, ssh.connect_timeout, ssh.screens) == (
        "b",
        65535,
        ("~/.ssh/k",),
        0.5,
        False,
    )
    assert ssh.allow_input is False and ssh.include == () and ssh.user is None
    assert _load(tmp_path, "").transports == Config().transports
