"""The collector through a real OpenSSH sshd on loopback: same scenarios, and faults.

`paneboard agent --stdout --ssh root@127.0.0.1:PORT --identity K --known-hosts F
--tmux-socket NAME` runs as a subprocess; tmux runs on this machine, reached only
through sshd.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from pathlib import Path

import pytest
from helpers import b64, osc7501, reporter, thinkterm
from support.agentproc import AgentProcess
from support.sshd import Sshd
from support.tmux import TmuxServer
from support.wait import wait_for

pytestmark = [pytest.mark.tmux, pytest.mark.sshd]


def _control_clients(tmux: TmuxServer) -> list[str]:
    out = tmux.cmd("list-clients", "-F", "#{client_pid} #{client_control_mode}", check=False)
    return [line.split()[0] for line in out.splitlines() if line.endswith(" 1")]


def test_reports_through_ssh(tmux_server: TmuxServer, sshd: Sshd) -> None:
    proc = AgentProcess(*sshd.ssh_args(), "--tmux-socket", tmux_server.name)
    try:
        proc.wait_line(lambda o: o["pane"] == "%0", what="the first pane")
        assert proc.lines[0]["host"] == "127.0.0.1"
        msg = "Apply 3 to add, 1 to change, 0 to destroy?"
        report = osc7501(f"state=blocked:kind=permission:app=terraform:msg={b64(msg)}")
        p1 = tmux_server.new_window("main", "tf", reporter((0.5, report)))
        # a new session gets its own control client (a channel and a login shell over SSH):
        # output written before it attached is not seen, so the program reports late
        p2 = tmux_server.new_session("other", reporter((3.0, thinkterm("my-agent", "idle"))))
        line = proc.wait_line(lambda o: o["pane"] == p1 and o["state"] == "blocked", what="blocked report")
        assert (line["kind"], line["msg"], line["agent"]) == ("permission", msg, "terraform")
        line = proc.wait_line(lambda o: o["pane"] == p2 and o["agent"] == "my-agent", what="contract")
        assert line["state"] == "idle" and line["session"] == "other"
        tmux_server.cmd("kill-session", "-t", "other")
        proc.wait_line(lambda o: o["pane"] == p2 and o.get("gone"), what="session gone")
    finally:
        proc.stop()


def _refusals(proc: AgentProcess) -> list[str]:
    return [line for line in proc.stderr.splitlines() if "127.0.0.1" in line]


def test_wrong_host_key_is_said_once_and_a_fixed_known_hosts_brings_the_host_back(
    tmux_server: TmuxServer, sshd: Sshd, tmp_path: Path
) -> None:
    # a copy: the fixture's wrong file is shared by other tests
    known = tmp_path / "known_hosts"
    known.write_text(sshd.wrong_known_hosts.read_text())
    args = ["--ssh", sshd.spec, "--identity", str(sshd.client_key), "--known-hosts", str(known)]
    proc = AgentProcess(*args, "--tmux-socket", tmux_server.name)
    try:
        wait_for(lambda: _refusals(proc), what=f"the refusal's line\n{proc.stderr}")
        [line] = _refusals(proc)
        assert line.startswith(
            f"paneboard agent: {sshd.spec}: host key verification failed against {known} "
            "(Host key is not trusted for host 127.0.0.1); "
        ), line
        # Issue 24 item 9: how to trust it, into the --known-hosts file that was checked
        assert f"trust it with `ssh-keyscan -p {sshd.port} 127.0.0.1 >> {known}`; " in line, line
        assert "connect once" not in line  # `ssh` would write to ~/.ssh/known_hosts, not that file
        assert line.endswith("trying again with back-off, no restart needed once fixed"), line
        assert proc.lines == []
        # issue 43: the collector tries again; the fixed file is read at the next connect
        known.write_text(sshd.known_hosts.read_text())
        proc.wait_line(lambda o: o["pane"] == "%0", timeout=60, what="the first pane after the fix")
        assert proc.stderr.count("verification failed") == 1, proc.stderr  # not a line per retry
    finally:
        proc.stop()


def test_wrong_client_key_is_said_once_and_retried(tmux_server: TmuxServer, sshd: Sshd) -> None:
    args = [
        "--ssh",
        sshd.spec,
        "--identity",
        str(sshd.wrong_client_key),
        "--known-hosts",
        str(sshd.known_hosts),
    ]
    proc = AgentProcess(*args, "--tmux-socket", tmux_server.name)
    key = sshd.wrong_client_key
    try:
        wait_for(lambda: _refusals(proc), what=f"the refusal's line\n{proc.stderr}")
        assert _refusals(proc) == [
            f"paneboard agent: {sshd.spec}: authentication refused for the offered key(s) ({key}); "
            "trying again with back-off, no restart needed once fixed"
        ]
        # not given up: once the key is authorised, the next try gets in
        with sshd.authorized_keys.open("a") as f:
            f.write(Path(f"{key}.pub").read_text())
        proc.wait_line(lambda o: o["pane"] == "%0", timeout=60, what="the first pane after the fix")
    finally:
        proc.stop()


def test_missing_identity_file_is_fatal(tmux_server: TmuxServer, sshd: Sshd) -> None:
    args = ["--ssh", sshd.spec, "--identity", "/nonexistent/key", "--known-hosts", str(sshd.known_hosts)]
    proc = AgentProcess(*args, "--tmux-socket", tmux_server.name)
    assert proc.wait_exit(30) == 1
    assert f"paneboard agent: {sshd.spec}: file not found: /nonexistent/key" in proc.stderr.splitlines()


def test_sshd_killed_and_restarted_is_survived(tmux_server: TmuxServer, sshd: Sshd) -> None:
    proc = AgentProcess(*sshd.ssh_args(), "--tmux-socket", tmux_server.name)
    try:
        proc.wait_line(lambda o: o["pane"] == "%0", what="the first pane")  # attached: output flows
        p1 = tmux_server.new_window("main", "w1", reporter((0.5, osc7501("state=working:app=builder"))))
        proc.wait_line(
            lambda o: o["pane"] == p1 and o["state"] == "working", what="working before the outage"
        )
        wait_for(lambda: len(_control_clients(tmux_server)) == 1, what="one control client")
        before = len(proc.lines)
        sshd.stop()  # listener and every connection it served, without a goodbye
        # during the outage a window opens; its report is written while nobody listens
        p2 = tmux_server.new_window("main", "w2", reporter((0.2, osc7501("state=done:app=builder"))))
        time.sleep(1.0)
        sshd.start()
        # the pane itself comes back with the re-list once the collector reconnected
        proc.wait_line(lambda o: o["pane"] == p2, timeout=40, what="the pane opened during the outage")
        # the pane that was working before still is: its state came back with the re-list
        assert proc.latest(p1)["state"] == "working"
        # a report written after the reconnect is decoded
        tmux_server.new_window(
            "main", "w3", reporter((0.5, osc7501("state=blocked:kind=question:app=builder")))
        )
        proc.wait_line(
            lambda o: o["state"] == "blocked" and o["kind"] == "question", what="report after reconnect"
        )
        # no stale control client left behind: one per session
        wait_for(
            lambda: len(_control_clients(tmux_server)) == 1, timeout=10, what="exactly one control client"
        )
        assert len(proc.lines) > before
    finally:
        proc.stop()


def test_more_sessions_than_one_connection_carries(tmux_server: TmuxServer, sshd: Sshd) -> None:
    # 12 sessions = 12 control clients > MaxSessions 10: a second connection must open
    panes = [tmux_server.new_session(f"s{i}") for i in range(11)]
    proc = AgentProcess(*sshd.ssh_args(), "--tmux-socket", tmux_server.name)
    try:
        for p in panes:
            proc.wait_line(lambda o, p=p: o["pane"] == p, timeout=30, what=f"pane {p}")
        wait_for(lambda: len(_control_clients(tmux_server)) == 12, timeout=20, what="12 control clients")
        # output still flows in the last session attached
        last = tmux_server.new_window("s10", "rep", reporter((0.5, osc7501("state=error:app=builder"))))
        proc.wait_line(
            lambda o: o["pane"] == last and o["state"] == "error", what="report in the 12th session"
        )
    finally:
        proc.stop()


def test_stale_control_client_is_detached_after_reconnect(
    tmux_server: TmuxServer, sshd: Sshd, caplog: pytest.LogCaptureFixture
) -> None:
    """The link drops while the remote control client cannot react (it is stopped):
    tmux still lists it. After reconnecting the collector detaches it, and only it."""
    from paneboard_agent.collector import Collector, Options, TmuxTarget
    from paneboard_agent.transport.ssh import SSHTarget, SSHTransport

    class Quiet:
        async def pane_changed(self, update: object) -> None: ...
        async def pane_gone(self, key: object, t: float) -> None: ...
        async def host_status(self, host: str, reachable: bool, t: float, error: str | None) -> None: ...
        async def host_health(self, host: str, health: object) -> None: ...

    async def scenario() -> tuple[list[str], list[str]]:
        target = SSHTarget("127.0.0.1", sshd.port, sshd.user, (str(sshd.client_key),), str(sshd.known_hosts))
        transport = SSHTransport(target)
        collector = Collector(
            [TmuxTarget(transport, socket=tmux_server.name)], Quiet(), Options(backoff_min=0.2)
        )
        task = asyncio.create_task(collector.run())
        stopped: list[str] = []
        try:
            watcher = collector.watchers[0]
            for _ in range(200):
                old = _control_clients(tmux_server)
                # tmux lists the client before the collector has learnt its pid; a link
                # lost in between leaves nothing recorded to detach, so wait for both
                if old and {int(p) for p in old} <= watcher.clients.ours:
                    break
                await asyncio.sleep(0.05)
            assert len(old) == 1
            os.kill(int(old[0]), signal.SIGSTOP)
            stopped = old
            for entry in transport._conns:  # the link drops; the far side cannot react
                entry.conn.abort()
            for _ in range(300):
                now = _control_clients(tmux_server)
                if any(p not in old for p in now):
                    break
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)
        finally:
            for pid in stopped:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGCONT)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        return old, now

    with caplog.at_level(logging.INFO, logger="paneboard.agent"):
        old, now = asyncio.run(scenario())
    assert f"detaching our stale control client client-{old[0]}" in caplog.text
    assert [p for p in now if p not in old], "a new control client attached"
    wait_for(lambda: old[0] not in _control_clients(tmux_server), what="the stale client gone")


def test_channel_refusals_open_more_connections(tmux_server: TmuxServer, tmp_path) -> None:
    # MaxSessions 3 is below the collector's own cap of 8 channels per connection: the
    # server refuses a channel, and the collector opens another connection instead
    small = Sshd(tmp_path / "small", max_sessions=3).start()
    try:
        panes = [tmux_server.new_session(f"x{i}") for i in range(4)]
        proc = AgentProcess(*small.ssh_args(), "--tmux-socket", tmux_server.name)
        try:
            for p in panes:
                proc.wait_line(lambda o, p=p: o["pane"] == p, timeout=30, what=f"pane {p}")
            wait_for(lambda: len(_control_clients(tmux_server)) == 5, timeout=20, what="5 control clients")
            pane = tmux_server.new_window("x3", "rep", reporter((0.5, osc7501("state=idle:app=builder"))))
            proc.wait_line(
                lambda o: o["pane"] == pane and o["state"] == "idle", what="report via a later connection"
            )
            assert "refused" not in proc.stderr
        finally:
            proc.stop()
    finally:
        small.stop()
