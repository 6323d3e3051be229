"""Reading the OpenSSH client config for one host, and choosing which file: pure, no sshd."""

from __future__ import annotations

from pathlib import Path

import pytest
from paneboard_agent.cli import ssh_config_for
from paneboard_agent.config import ConfigError, HostConfig, parse_config
from paneboard_agent.transport import FatalTransportError
from paneboard_agent.transport.ssh import SSHTarget
from paneboard_agent.transport.ssh_config import Hop, parse_jumps, resolve

CONFIG = """\
Host build-3
  HostName 10.0.0.3
  Port 2222
  User ci
  ProxyJump bastion,u@[fe80::1]:2200
  UserKnownHostsFile ~/kh /etc/kh2
Host *
  User fallback
  Port 2200
"""


def test_resolve_alias(tmp_path: Path) -> None:
    cfg = tmp_path / "config"
    cfg.write_text(CONFIG)
    r = resolve("build-3", [str(cfg)], "build-3")
    assert (r.host, r.port, r.user) == ("10.0.0.3", 2222, "ci")
    assert r.jumps == (Hop("bastion"), Hop("fe80::1", "u", 2200))
    assert r.known_hosts == (str(Path("~/kh").expanduser()), "/etc/kh2")
    # what the command line names wins over the file, as with ssh -p / user@
    r = resolve("x", [str(cfg)], "build-3", "me", 22)
    assert (r.port, r.user) == (22, "me")
    other = resolve("x", [str(cfg)], "elsewhere")
    assert (other.host, other.port, other.user, other.jumps, other.known_hosts) == (
        "elsewhere",
        2200,
        "fallback",
        (),
        None,
    )


@pytest.mark.parametrize(
    "option", ["KnownHostsCommand /bin/true", "ProxyUseFdpass yes", "SecurityKeyProvider x.so"]
)
def test_unsupported_option_is_named(tmp_path: Path, option: str) -> None:
    cfg = tmp_path / "config"
    cfg.write_text(f"Host h\n  {option}\nHost other\n  Port 1\n")
    name = option.split()[0]
    with pytest.raises(
        FatalTransportError, match=rf"^h: .*: {name} is not supported by paneboard's SSH client"
    ):
        resolve("h", [str(cfg)], "h")
    assert resolve("o", [str(cfg)], "other").port == 1  # only the host it applies to fails


def test_options_asyncssh_ignores_harmlessly_do_not_fail(tmp_path: Path) -> None:
    cfg = tmp_path / "config"
    cfg.write_text("Host *\n  ControlMaster auto\n  ControlPath ~/.ssh/cm-%r@%h:%p\n  AddKeysToAgent yes\n")
    assert resolve("h", [str(cfg)], "h").host == "h"


def test_known_hosts_none_and_parse_errors(tmp_path: Path) -> None:
    cfg = tmp_path / "config"
    cfg.write_text("Host h\n  UserKnownHostsFile none\n")
    with pytest.raises(
        FatalTransportError, match="UserKnownHostsFile none would switch host key checking off"
    ):
        resolve("h", [str(cfg)], "h")
    cfg.write_text("Host h\n  Port notanumber\n")
    with pytest.raises(FatalTransportError, match=r"^h: ssh config: .* line 2: "):
        resolve("h", [str(cfg)], "h")
    with pytest.raises(FatalTransportError, match=r"^h: file not found: /nonexistent/config$"):
        resolve("h", ["/nonexistent/config"], "h")


def test_parse_jumps() -> None:
    assert parse_jumps("w", "none") == ()
    assert parse_jumps("w", "a, b@c:22,ssh://d@e:2") == (Hop("a"), Hop("c", "b", 22), Hop("e", "d", 2))
    for bad in ("a:x", "-oProxyCommand=x", "", "[::1]x"):
        with pytest.raises(FatalTransportError, match=r"^w: ProxyJump: "):
            parse_jumps("w", bad)


def test_which_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    h = HostConfig(host="b")
    assert ssh_config_for(h, None) is None  # no ~/.ssh/config: none
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "config").write_text("")
    assert ssh_config_for(h, None) == str(tmp_path / ".ssh" / "config")
    assert ssh_config_for(h, "none") is None
    assert ssh_config_for(h, "/x") == "/x"
    assert ssh_config_for(HostConfig(host="b", ssh_config="/own"), "/x") == "/own"
    assert ssh_config_for(HostConfig(host="b", ssh_config="none"), "/x") is None


def test_toml_keys() -> None:
    cfg = parse_config({"ssh_config": "~/cfg", "hosts": [{"host": "build-3", "ssh_config": "none"}]})
    assert cfg.ssh_config == "~/cfg"
    assert (cfg.hosts[0].ssh_config, cfg.hosts[0].port) == ("none", None)
    with pytest.raises(ConfigError, match=r"hosts\[0\].ssh_config: only meaningful for an SSH host"):
        parse_config({"hosts": [{"local": True, "ssh_config": "x"}]})
    with pytest.raises(ConfigError, match="ssh_config: expected a non-empty string"):
        parse_config({"ssh_config": 3})


def test_label_without_port() -> None:
    assert SSHTarget("build-3").label == "build-3"
    assert SSHTarget("h", 2222, "u").label == "u@h:2222"
