"""What `transport/asyncssh_config.py` relies on in asyncssh below its documented API: these
fail when asyncssh changes under the adapter, before a collector meets it."""

from __future__ import annotations

import getpass
import inspect
from pathlib import Path

import pytest
from asyncssh.config import SSHClientConfig, SSHConfig
from paneboard_agent.transport.asyncssh_config import ConfigParseError, parse
from paneboard_agent.transport.ssh_config import UNSUPPORTED


def test_the_parser_table_is_still_a_class_attribute_of_name_and_handler() -> None:
    table = SSHClientConfig._handlers
    assert isinstance(table, dict)
    for key, (name, handler) in table.items():
        assert key == name.lower() and callable(handler)
    # what resolve reads through asyncssh's own handlers, and the conditionals it evaluates
    for name in ("Host", "Match", "Include", "Hostname", "Port", "User", "ProxyJump", "UserKnownHostsFile"):
        assert table[name.lower()][0] == name


def test_the_refused_options_are_still_unknown_to_asyncssh() -> None:
    """One asyncssh has come to handle is no longer refused (the adapter leaves it to
    asyncssh): take it out of UNSUPPORTED and check how asyncssh honours it."""
    assert [n for n in UNSUPPORTED if n.lower() in SSHClientConfig._handlers] == []


def test_load_still_takes_the_arguments_the_adapter_passes() -> None:
    load = list(inspect.signature(SSHConfig.load).parameters)
    assert load == ["last_config", "config_paths", "reload", "canonical", "final", "args"]
    init = list(inspect.signature(SSHClientConfig.__init__).parameters)[1:]
    assert init == ["last_config", "reload", "canonical", "final", "local_user", "user", "host", "port"]


def _write(tmp_path: Path, text: str) -> list[str]:
    cfg = tmp_path / "config"
    cfg.write_text(text)
    return [str(cfg)]


def test_a_noted_option_is_seen_only_where_host_and_match_apply(tmp_path: Path) -> None:
    paths = _write(
        tmp_path,
        "Host a\n  KnownHostsCommand /bin/true %h\n"
        "Match host b\n  ProxyUseFdpass=yes\n"
        "Host c\n  HostName 10.0.0.3\n  Port 2222\n"
        "Host *\n  SecurityKeyProvider x.so\n",
    )
    me = getpass.getuser()
    a, skipped = parse(paths, UNSUPPORTED, me, "a")
    assert skipped == ["KnownHostsCommand", "SecurityKeyProvider"]  # its arguments taken, in file order
    assert parse(paths, UNSUPPORTED, me, "b")[1] == ["ProxyUseFdpass", "SecurityKeyProvider"]
    c, skipped = parse(paths, ["KnownHostsCommand", "ProxyUseFdpass"], me, "c", "u", 22)
    assert skipped == []
    assert (c.get("Hostname"), c.get("Port"), c.get("User")) == ("10.0.0.3", 22, "u")
    assert a.get("Hostname") is None


def test_an_option_asyncssh_handles_is_left_to_it(tmp_path: Path) -> None:
    paths = _write(tmp_path, "Host h\n  Port 2201\n")
    config, skipped = parse(paths, ["Port"], getpass.getuser(), "h")
    assert skipped == [] and config.get("Port") == 2201


def test_errors_are_asyncssh_parse_errors(tmp_path: Path) -> None:
    paths = _write(tmp_path, "Host h\n  KnownHostsCommand\n")
    with pytest.raises(ConfigParseError, match="line 2: Missing KnownHostsCommand value"):
        parse(paths, UNSUPPORTED, getpass.getuser(), "h")
