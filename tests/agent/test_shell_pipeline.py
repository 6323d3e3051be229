"""Commands pipelined through one long-lived shell (transport/shell.py), on a real `sh`,
and through the SSH transport's two shells on a real sshd.

A command asked for while another is still running is written at once, so on a far
link it does not wait a round trip for the earlier answer; the answers are still kept
apart, in order, and a caller that gives up or a command that hangs never leaves the
shell out of step with the commands after it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from paneboard_agent.transport import Channel, LocalTransport, RunResult, TransportError
from paneboard_agent.transport.shell import ShellRunner
from support.sshd import Sshd
from test_collector_inprocess import _until


class WritesSeen(Channel):
    """A real shell's channel, counting the scripts written to it (what the host was
    asked, and when), everything else passed through."""

    def __init__(self, chan: Channel) -> None:
        self.chan = chan
        self.writes = 0

    async def read(self, n: int = 65536) -> bytes:
        return await self.chan.read(n)

    async def write(self, data: bytes) -> None:
        self.writes += 1
        await self.chan.write(data)

    async def close(self) -> None:
        await self.chan.close()

    async def wait(self) -> int | None:
        return await self.chan.wait()

    async def stderr_text(self) -> str:
        return await self.chan.stderr_text()


async def _shell() -> tuple[LocalTransport, ShellRunner, WritesSeen]:
    t = LocalTransport()
    chan = await t.open_process(["sh"])
    # the local channel drains stderr itself; give the runner a reader of its own
    proc_stderr = chan._proc.stderr  # type: ignore[attr-defined]
    chan._stderr_task.cancel()  # type: ignore[attr-defined]
    seen = WritesSeen(chan)
    return t, ShellRunner(seen, proc_stderr), seen


def _waits_for(flag: Path, then: str) -> list[str]:
    """A command that runs until `flag` exists (at most 20 s: a failed test leaves nothing)."""
    loop = f'i=0; while [ ! -e "$1" ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done; echo {then}'
    return ["sh", "-c", loop, "sh", str(flag)]


@pytest.mark.proc
def test_a_command_is_written_while_the_one_before_still_runs(tmp_path: Path) -> None:
    async def scenario() -> tuple[RunResult, RunResult, int]:
        t, runner, seen = await _shell()
        flag = tmp_path / "go"
        first = asyncio.create_task(runner.run(_waits_for(flag, "one"), 10, 1 << 20))
        second = asyncio.create_task(runner.run(["echo", "two"], 10, 1 << 20))
        # The first cannot finish before `go` exists: the second's script must reach the
        # shell before then (a runner that waited for each answer wrote it only after).
        await _until(lambda: seen.writes == 2, 5, "the second command written while the first runs")
        queued = runner.queued
        flag.touch()
        results = await asyncio.gather(first, second)
        await t.close()
        return results[0], results[1], queued

    one, two, queued = asyncio.run(scenario())
    assert queued == 2
    assert (one.returncode, one.stdout, one.stderr) == (0, b"one\n", b"")
    assert (two.returncode, two.stdout, two.stderr) == (0, b"two\n", b"")


@pytest.mark.proc
def test_answers_stay_apart_and_in_order_under_many_at_once() -> None:
    async def scenario() -> list[RunResult]:
        t, runner, _ = await _shell()
        runs = [
            runner.run(["sh", "-c", f"printf 'out {i}'; printf 'err {i}' >&2; exit {i % 5}"], 10, 1 << 20)
            for i in range(40)
        ]
        got = await asyncio.gather(*runs)
        await t.close()
        return list(got)

    for i, r in enumerate(asyncio.run(scenario())):
        assert (r.returncode, r.stdout, r.stderr) == (i % 5, f"out {i}".encode(), f"err {i}".encode())


@pytest.mark.proc
def test_a_caller_that_gives_up_leaves_the_shell_in_step(tmp_path: Path) -> None:
    async def scenario() -> tuple[RunResult, RunResult]:
        t, runner, seen = await _shell()
        flag = tmp_path / "go"
        given_up = asyncio.create_task(runner.run(_waits_for(flag, "late"), 10, 1 << 20))
        await _until(lambda: seen.writes == 1, 5, "the first command written")
        given_up.cancel()
        next_one = asyncio.create_task(runner.run(["echo", "next"], 10, 1 << 20))
        await _until(lambda: seen.writes == 2, 5, "the next command written")
        flag.touch()  # the abandoned command's answer arrives now, before the next one's
        after = await next_one
        again = await runner.run(["echo", "again"], 10, 1 << 20)
        with pytest.raises(asyncio.CancelledError):
            await given_up
        await t.close()
        return after, again

    after, again = asyncio.run(scenario())
    assert (after.returncode, after.stdout) == (0, b"next\n")
    assert (again.returncode, again.stdout) == (0, b"again\n")


@pytest.mark.proc
def test_a_command_that_hangs_fails_the_ones_behind_it_and_the_shell(tmp_path: Path) -> None:
    async def scenario() -> tuple[list[BaseException | RunResult], bool, str]:
        t, runner, _ = await _shell()
        flag = tmp_path / "go"
        hung = asyncio.create_task(runner.run(_waits_for(flag, "late"), 0.3, 1 << 20))
        behind = asyncio.create_task(runner.run(["echo", "never"], 10, 1 << 20))
        got = await asyncio.wait_for(asyncio.gather(hung, behind, return_exceptions=True), 10)
        flag.touch()  # let the shell, now closed, end without being killed
        try:
            await runner.run(["echo", "later"], 10, 1 << 20)
            later = "ran"
        except TransportError as exc:
            later = str(exc)
        await t.close()
        return list(got), runner.broken, later

    (hung, behind), broken, later = asyncio.run(scenario())
    assert isinstance(hung, TransportError) and "sh did not finish within 0.3s" in str(hung)
    assert isinstance(behind, TransportError) and "did not finish" in str(behind)
    assert broken and later == "command shell closed"


@pytest.mark.sshd
def test_ssh_commands_share_two_shells_and_queue_without_waiting(sshd: Sshd, tmp_path: Path) -> None:
    """Five commands at once over SSH: two shells are opened (not five channels, not
    more than RUNNERS), and the three that find both busy are written to them at once."""
    from paneboard_agent.transport.ssh import RUNNERS, SSHTarget, SSHTransport

    async def scenario() -> tuple[int, int, list[RunResult]]:
        target = SSHTarget("127.0.0.1", sshd.port, sshd.user, (str(sshd.client_key),), str(sshd.known_hosts))
        t = SSHTransport(target)
        flag = tmp_path / "go"
        try:
            runs = [asyncio.create_task(t.run(_waits_for(flag, f"r{i}"), 20)) for i in range(5)]
            await _until(lambda: sum(r.queued for r in t._runners) == 5, 20, "five commands queued")
            shells = len(t._runners)
            most = max(r.queued for r in t._runners)
            flag.touch()
            return shells, most, list(await asyncio.gather(*runs))
        finally:
            await t.close()

    shells, most, results = asyncio.run(scenario())
    assert shells == RUNNERS == 2 and most == 3
    assert [r.stdout for r in results] == [f"r{i}\n".encode() for i in range(5)]


@pytest.mark.proc
def test_a_shell_that_dies_fails_every_command_due_never_leaves_one_waiting() -> None:
    """The link or the shell goes away with commands written: each one fails at once (a
    look left waiting forever once held a whole host's watch after a dropped link)."""

    async def scenario() -> tuple[list[BaseException | RunResult], bool]:
        t, runner, _ = await _shell()
        runs = [
            runner.run(["sh", "-c", 'kill -KILL "$PPID"'], 10, 1 << 20),  # the runner's shell
            runner.run(["echo", "behind"], 10, 1 << 20),
        ]
        got = await asyncio.wait_for(asyncio.gather(*runs, return_exceptions=True), 10)
        await t.close()
        return list(got), runner.broken

    got, broken = asyncio.run(scenario())
    assert broken
    assert [type(g) for g in got] == [TransportError, TransportError], got
    assert all("command shell closed" in str(g) for g in got)
