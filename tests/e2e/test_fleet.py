"""A small fleet of real hosts (tests/support/fleet.py): four network namespaces, each
with its own sshd and tmux running scripted agents, one reached only through another
(`ProxyJump`), one behind a 40 ms link, all watched by one `paneboard agent` whose
configuration names them by the aliases of a private ssh config, feeding one server.

The link drop is real (`ip link set down` on the host's veth); the delay is the
harness's userspace relay (this kernel has no netem). Speed is bench/fleet.py's job:
the waits here are bounds loose enough for a loaded machine. How soon a dropped link
shows (the goal: within twice the SSH keepalive) is measured there (bench/README.md),
not asserted here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import netns
from support.fleet import Fleet, HostSpec, LinkClass
from support.fleetstack import FleetStack
from support.fleetwatch import StreamWatch
from support.tools import require_tool
from support.wait import wait_for

pytestmark = [pytest.mark.tmux, pytest.mark.sshd]

LAN = LinkClass("lan")
FAR = LinkClass("far", delay=0.04)
HOSTS = [
    HostSpec("lan1", LAN, panes=2),
    HostSpec("far1", FAR, panes=2),
    HostSpec("bastion", LAN, panes=1),
    HostSpec("hidden", LinkClass("behind", delay=0.01), panes=2, jump="bastion"),
]


def keepalive() -> float:
    from paneboard_agent.transport.ssh import SSHTarget

    f = {f.name: f for f in dataclasses.fields(SSHTarget)}["keepalive_interval"]
    return float(f.default)  # type: ignore[arg-type]


@pytest.fixture
def fleet_stack(tmp_path: Path, db_template: Path) -> Iterator[FleetStack]:
    why = netns.unavailable()
    if why:  # like any tool the suite needs: missing is a failure saying why, not a skip
        pytest.fail(f"the fleet tests need network namespaces (root, iproute2): {why}")
    require_tool("tmux", "sshd", "ssh-keygen")
    fleet = Fleet(tmp_path / "fleet", HOSTS, interval=1.0)
    stack = FleetStack(tmp_path / "stack", fleet, template=db_template)
    stack.tmp.mkdir(parents=True, exist_ok=True)
    try:
        fleet.start()
        yield stack.start_fleet()
    finally:
        try:
            stack.close()
        finally:
            fleet.close()
    assert not [ns for ns in netns.ours() if ns.startswith(netns.ns_name(""))], "namespaces left behind"


def wait_received(watch: StreamWatch, host: str, want: set[tuple[str, int, float]], what: str) -> None:
    """Every report in `want` reaches the live stream (bounded: 30 s), else fail naming
    the ones missing."""
    with contextlib.suppress(AssertionError):
        wait_for(lambda: want <= watch.keys(host), timeout=30, what=what, interval=0.5)
    missing = sorted(want - watch.keys(host))
    assert not missing, (
        f"{what}: {len(missing)} of {len(want)} reports of {host} never reached the stream: {missing[:5]}"
    )


def written(stack: FleetStack, host: str, lo: float = 0.0, hi: float = float("inf")) -> set:
    return {
        (label, seq, t)
        for label, rows in stack.fleet.written(host).items()
        for seq, t in rows
        if lo <= t < hi
    }


def test_every_host_reports_through_its_alias(fleet_stack: FleetStack) -> None:
    stack = fleet_stack
    watch = stack.watch()
    # the collector knows the hosts only by the aliases of the harness's ssh config
    config = stack.fleet.agent_config()[0].read_text()
    assert (
        "hidden" in config
        and "10.232" not in config
        and "ProxyJump bastion" in stack.fleet.ssh_config.read_text()
    )
    start = time.time()
    for spec in HOSTS:
        wait_for(
            lambda h=spec.name, n=spec.panes: len(written(stack, h, start)) >= 2 * n,
            timeout=30,
            what=f"{spec.name}'s agents writing",
        )
        wait_received(watch, spec.name, written(stack, spec.name, start), "every report written")
        status = stack.host_status(spec.name)
        assert status is not None and status["reachable"] and status["unreachable_since"] is None, status
    # from the board, the hidden host is reachable only through the bastion's sshd
    assert not netns.listening(stack.fleet.board_ns, stack.fleet.hosts["hidden"].addr, 22)


def test_link_dropped_host_unreachable_then_back_without_losing_reports(fleet_stack: FleetStack) -> None:
    stack = fleet_stack
    host = "far1"
    watch = stack.watch()
    since = time.time()  # the stream sees what changes from now on
    wait_for(lambda: written(stack, host, since + 2), timeout=30, what=f"{host}'s agents writing")
    down_at = time.time()
    stack.fleet.link(host, up=False)
    bound = 3 * keepalive()
    wait_for(
        lambda: (s := stack.host_status(host)) and not s["reachable"] and s["unreachable_since"],
        timeout=bound,
        what=f"{host} shown unreachable ({bound:g} s)\n{stack.log('collector1')}",
        interval=0.2,
    )
    panes = stack.host_panes(host)
    assert panes and all(not p["reachable"] and p["unreachable_since"] for p in panes), panes
    others = [p for p in stack.panes() if p["host"] != host]
    assert others and all(p["reachable"] for p in others), "only the dropped link's host is unreachable"

    stack.fleet.link(host, up=True)
    wait_for(
        lambda: (s := stack.host_status(host)) and s["reachable"] and s["reconnects"] >= 1,
        timeout=120,
        what=f"{host} back by itself after the link came up\n{stack.log('collector1')}",
        interval=0.5,
    )
    back_at = time.time()
    wait_for(lambda: written(stack, host, back_at + 2), timeout=30, what=f"{host} writing after it came back")
    # what was written while the link was up: before the drop (less what could still
    # be on the wire then: one round trip and a poll) and after the host was back
    margin = FAR.rtt + 1.0
    want = written(stack, host, since, down_at - margin) | written(stack, host, back_at, back_at + 2)
    wait_received(watch, host, want, "no report written while the link was up lost")
    assert all(p["reachable"] for p in stack.host_panes(host))
