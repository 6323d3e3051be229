"""The collector honours the user's OpenSSH config, through real sshds on loopback.

`paneboard agent --ssh build-3 --ssh-config FILE` with FILE naming HostName, User,
Port, IdentityFile, UserKnownHostsFile and ProxyJump, the way a user's
`~/.ssh/config` does; the jump host is a second real sshd; a key held by a real
`ssh-agent` logs in when no key is named; wrong host keys (target's or jump's) and
options asyncssh cannot honour fail in one line.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import osc7501, reporter
from support.agentproc import AgentProcess
from support.sshd import Sshd
from support.tmux import TmuxServer
from support.wait import wait_for

pytestmark = [pytest.mark.tmux, pytest.mark.sshd]


def _block(alias: str, server: Sshd, *, key: Path | None = None, known: Path | None = None) -> str:
    lines = [f"Host {alias}", "  HostName 127.0.0.1", f"  Port {server.port}", f"  User {server.user}"]
    if key is not None:
        lines.append(f"  IdentityFile {key}")
    lines.append(f"  UserKnownHostsFile {known or server.known_hosts}")
    return "\n".join(lines) + "\n"


@pytest.fixture
def jump(tmp_path: Path) -> Iterator[Sshd]:
    # DEBUG1 makes the jump's sshd log each forwarding request it serves (direct-tcpip)
    server = Sshd(tmp_path / "jump", log_level="DEBUG1").start()
    try:
        yield server
    finally:
        server.stop()


def _agent(cfg: Path, *extra: str, env: dict[str, str] | None = None, tmux: TmuxServer) -> AgentProcess:
    return AgentProcess(
        "--ssh", "build-3", "--ssh-config", str(cfg), *extra, "--tmux-socket", tmux.name, env=env
    )


def _reports(proc: AgentProcess, tmux: TmuxServer) -> None:
    proc.wait_line(lambda o: o["pane"] == "%0", what="the first pane")
    pane = tmux.new_window("main", "w", reporter((0.5, osc7501("state=blocked:kind=question:app=builder"))))
    proc.wait_line(lambda o: o["pane"] == pane and o["kind"] == "question", what="a report through ssh")


def _error_lines(proc: AgentProcess) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.startswith("paneboard agent: ")]


def test_host_alias_with_hostname_user_port_identity(
    tmux_server: TmuxServer, sshd: Sshd, tmp_path: Path
) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text(_block("build-3", sshd, key=sshd.client_key))
    proc = _agent(cfg, tmux=tmux_server)
    try:
        _reports(proc, tmux_server)
        assert proc.lines[0]["host"] == "build-3"  # the name the user gave, not the address
    finally:
        proc.stop()


def test_proxyjump_goes_through_the_jump_host(
    tmux_server: TmuxServer, sshd: Sshd, jump: Sshd, tmp_path: Path
) -> None:
    cfg = tmp_path / "ssh_config"
    target = _block("build-3", sshd, key=sshd.client_key) + "  ProxyJump bastion\n"
    cfg.write_text(target + _block("bastion", jump, key=jump.client_key))
    proc = _agent(cfg, tmux=tmux_server)
    try:
        _reports(proc, tmux_server)
        # the jump's sshd forwarded the connection to the target's port
        log = jump.log.read_text()
        assert f"target 127.0.0.1 port {sshd.port}" in log, log[-2000:]
        # and the target's connection lives on the jump: kill the jump, the target is lost
        jump.stop()
        wait_for(lambda: "paneboard agent: build-3: lost" in proc.stderr, timeout=40, what="target lost")
        # back through the jump again once it returns (never straight to the target). The
        # report is written once the collector reads the session again: bytes written
        # while no control client reads the pane reach nobody (tmux keeps no copy). It
        # detaches stale clients before it says it is back, so a control client after
        # that line is its new one.
        jump.start()
        wait_for(lambda: "paneboard agent: build-3: connected again" in proc.stderr, timeout=60, what="back")
        control = ("list-clients", "-F", "#{client_control_mode}")
        wait_for(lambda: "1" in tmux_server.cmd(*control).split(), timeout=30, what="its control client")
        pane = tmux_server.new_window("main", "w2", reporter((3.0, osc7501("state=done:app=builder"))))
        proc.wait_line(lambda o: o["pane"] == pane and o["state"] == "done", timeout=40, what="after")
        forwarded = jump.log.read_text().count(f"target 127.0.0.1 port {sshd.port}")
        assert forwarded >= 2, forwarded
    finally:
        proc.stop()


def test_jump_host_key_is_verified(tmux_server: TmuxServer, sshd: Sshd, jump: Sshd, tmp_path: Path) -> None:
    cfg = tmp_path / "ssh_config"
    target = _block("build-3", sshd, key=sshd.client_key) + "  ProxyJump bastion\n"
    cfg.write_text(target + _block("bastion", jump, key=jump.client_key, known=jump.wrong_known_hosts))
    proc = _agent(cfg, tmux=tmux_server)
    wait_for(lambda: _error_lines(proc), what="the refusal's line")
    proc.stop()  # a refusal is retried (issue 43): it does not exit by itself
    [line] = _error_lines(proc)
    assert line.startswith(
        f"paneboard agent: build-3 via jump host bastion: host key verification failed against "
        f"{jump.wrong_known_hosts} (Host key is not trusted for host 127.0.0.1); "
    ), line
    # how to trust it: the jump's real address and port, into the file that was checked
    assert f"`ssh-keyscan -p {jump.port} 127.0.0.1 >> {jump.wrong_known_hosts}`" in line, line
    assert f"`ssh -F {cfg} bastion`" in line, line
    assert f"port {sshd.port}" not in jump.log.read_text()  # nothing was forwarded
    assert proc.lines == []


def test_wrong_host_key_from_user_known_hosts_file(
    tmux_server: TmuxServer, sshd: Sshd, tmp_path: Path
) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text(_block("build-3", sshd, key=sshd.client_key, known=sshd.wrong_known_hosts))
    proc = _agent(cfg, tmux=tmux_server)
    wait_for(lambda: _error_lines(proc), what="the refusal's line")
    proc.stop()  # a refusal is retried (issue 43): it does not exit by itself
    [line] = _error_lines(proc)
    assert line.startswith(
        f"paneboard agent: build-3: host key verification failed against {sshd.wrong_known_hosts} "
        "(Host key is not trusted for host 127.0.0.1); "
    ), line
    # Issue 24 item 9: the refusal says how to trust the key (after a look at it).
    assert f"trust it with `ssh-keyscan -p {sshd.port} 127.0.0.1 >> {sshd.wrong_known_hosts}`" in line, line
    assert f"or connect once with `ssh -F {cfg} build-3` and answer yes" in line, line
    assert "fingerprint" in line and line.count("\n") == 0


def test_a_mistyped_host_alias_is_named_as_not_in_the_ssh_config(
    tmux_server: TmuxServer, sshd: Sshd, tmp_path: Path
) -> None:
    """Issue 24 item 9: a mistyped Host alias was retried for ever with only the
    resolver's words; the line now says it is no Host of the config, and the close one."""
    cfg = tmp_path / "ssh_config"
    cfg.write_text(
        _block("build-3", sshd, key=sshd.client_key) + "Host nowhere\n  HostName nowhere.invalid\n"
    )
    proc = AgentProcess("--ssh", "buidl-3", "--ssh-config", str(cfg), "--tmux-socket", tmux_server.name)
    try:
        wait_for(lambda: "cannot resolve" in proc.stderr, timeout=30, what="the resolver's refusal")
        line = next(x for x in _error_lines(proc) if "cannot resolve" in x)
        assert line.startswith(
            "paneboard agent: buidl-3: cannot connect (cannot resolve host name 'buidl-3': "
        ), line
        assert f"; 'buidl-3' is not a Host alias in {cfg} either; did you mean build-3?" in line, line
    finally:
        proc.stop()
    # An alias that is in the config: its HostName is what did not resolve.
    proc = AgentProcess("--ssh", "nowhere", "--ssh-config", str(cfg), "--tmux-socket", tmux_server.name)
    try:
        wait_for(lambda: "cannot resolve" in proc.stderr, timeout=30, what="the resolver's refusal")
        line = next(x for x in _error_lines(proc) if "cannot resolve" in x)
        assert "cannot resolve host name 'nowhere.invalid': " in line, line
        assert f", the HostName of Host nowhere in {cfg})" in line and "not a Host" not in line, line
    finally:
        proc.stop()


@pytest.fixture
def ssh_agent(tmp_path: Path) -> Iterator[str]:
    if shutil.which("ssh-agent") is None or shutil.which("ssh-add") is None:
        pytest.fail("ssh-agent/ssh-add are not installed (apt-get install openssh-client)")
    sock = str(tmp_path / "agent.sock")
    proc = subprocess.Popen(
        ["ssh-agent", "-D", "-a", sock], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(sock):
            assert proc.poll() is None and time.monotonic() < deadline, "ssh-agent did not start"
            time.sleep(0.05)
        yield sock
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)


def test_key_from_a_running_ssh_agent(
    tmux_server: TmuxServer, sshd: Sshd, ssh_agent: str, tmp_path: Path
) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text(_block("build-3", sshd))  # no IdentityFile, no --identity
    home = tmp_path / "home"  # no ~/.ssh/id_*: the only key is the agent's
    home.mkdir()
    env = {"HOME": str(home), "SSH_AUTH_SOCK": ssh_agent}
    # before the key is added, the login is refused: the agent is what makes it work
    proc = _agent(cfg, env=env, tmux=tmux_server)
    wait_for(lambda: _error_lines(proc), what="the refusal's line")
    proc.stop()  # a refusal is retried (issue 43): it does not exit by itself
    assert _error_lines(proc) == [
        "paneboard agent: build-3: authentication refused for the offered key(s) "
        "(default keys: the ssh config's IdentityFile, ~/.ssh/id_*, ssh-agent); "
        "trying again with back-off, no restart needed once fixed"
    ]
    subprocess.run(
        ["ssh-add", str(sshd.client_key)],
        check=True,
        capture_output=True,
        env={**os.environ, "SSH_AUTH_SOCK": ssh_agent},
    )
    proc = _agent(cfg, env=env, tmux=tmux_server)
    try:
        _reports(proc, tmux_server)
    finally:
        proc.stop()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "KnownHostsCommand /bin/true",
            "KnownHostsCommand is not supported by paneboard's SSH client (asyncssh); "
            "remove it for this host or give it a Host block of its own",
        ),
        ("UserKnownHostsFile none", "UserKnownHostsFile none would switch host key checking off; refused"),
    ],
)
def test_options_that_cannot_be_honoured_fail_in_one_line(
    tmux_server: TmuxServer, sshd: Sshd, tmp_path: Path, line: str, message: str
) -> None:
    cfg = tmp_path / "ssh_config"
    # the option comes first: OpenSSH (and asyncssh) take the first value given
    cfg.write_text(f"Host build-3\n  {line}\n" + _block("build-3", sshd, key=sshd.client_key))
    proc = _agent(cfg, tmux=tmux_server)
    assert proc.wait_exit(30) == 1
    assert _error_lines(proc) == [f"paneboard agent: build-3: {cfg}: {message}"]


def test_request_tty_force_in_the_config_does_not_reach_control_mode(
    tmux_server: TmuxServer, sshd: Sshd, tmp_path: Path
) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text(_block("build-3", sshd, key=sshd.client_key) + "  RequestTTY force\n")
    proc = _agent(cfg, tmux=tmux_server)
    try:
        _reports(proc, tmux_server)
    finally:
        proc.stop()


def test_forward_agent_in_the_config_is_not_honoured(
    tmux_server: TmuxServer, ssh_agent: str, tmp_path: Path
) -> None:
    # the remote host gets no way to use the local agent's keys, whatever the config says
    target = Sshd(tmp_path / "target", log_level="DEBUG1").start()
    try:
        cfg = tmp_path / "ssh_config"
        cfg.write_text(_block("build-3", target, key=target.client_key) + "  ForwardAgent yes\n")
        proc = _agent(cfg, env={"SSH_AUTH_SOCK": ssh_agent}, tmux=tmux_server)
        try:
            _reports(proc, tmux_server)
        finally:
            proc.stop()
        log = target.log.read_text()
        assert "request exec" in log, log[-2000:]  # the log does show channel requests
        assert "auth-agent-req" not in log
    finally:
        target.stop()
