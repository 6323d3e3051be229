"""LookPipeline: looks under way at once, applied in the order they started."""

from __future__ import annotations

import asyncio

import pytest
from paneboard_agent.watch.overlap import LookPipeline


async def _look(name: str, gate: asyncio.Event, log: list[str]) -> str:
    log.append(f"start {name}")
    await gate.wait()
    log.append(f"back {name}")
    return name


def test_a_later_look_that_comes_back_first_is_applied_after_the_earlier() -> None:
    async def scenario() -> list[str]:
        log: list[str] = []
        woken: list[int] = []
        looks = LookPipeline(2, lambda: woken.append(1))
        a, b = asyncio.Event(), asyncio.Event()
        looks.start(_look("a", a, log), lambda got: log.append(f"apply {got}"))
        looks.start(_look("b", b, log), lambda got: log.append(f"apply {got}"))
        await asyncio.sleep(0)
        b.set()
        await asyncio.sleep(0.01)
        assert "apply b" not in log  # b is back, but a is not: b waits
        a.set()
        await looks.drain()
        assert not woken and len(looks) == 0
        return log

    log = asyncio.run(scenario())
    assert log == ["start a", "start b", "back b", "back a", "apply a", "apply b"]


def test_room_waits_for_the_oldest_when_depth_looks_are_under_way() -> None:
    async def scenario() -> None:
        log: list[str] = []
        looks = LookPipeline(2, lambda: None)
        gates = [asyncio.Event() for _ in range(2)]
        for i, gate in enumerate(gates):
            looks.start(_look(str(i), gate, log), lambda got: log.append(f"apply {got}"))
        room = asyncio.create_task(looks.room())
        await asyncio.sleep(0.01)
        assert not room.done()
        gates[0].set()
        await asyncio.wait_for(room, 1)
        assert log[-1] == "apply 0" and len(looks) == 1
        gates[1].set()
        await looks.drain()

    asyncio.run(scenario())


def test_a_failed_look_wakes_the_watcher_raises_once_and_stops_the_later_ones() -> None:
    async def failing() -> str:
        await asyncio.sleep(0.01)
        raise ConnectionError("link down")

    async def scenario() -> None:
        log: list[str] = []
        woken: list[int] = []
        looks = LookPipeline(2, lambda: woken.append(1))
        later = asyncio.Event()
        looks.start(failing(), lambda got: log.append(f"apply {got}"))
        looks.start(_look("b", later, log), lambda got: log.append(f"apply {got}"))
        later.set()
        await asyncio.sleep(0.05)
        assert woken == [1]
        assert "apply b" not in log  # after a failed look nothing more is applied
        with pytest.raises(ConnectionError):
            looks.check()
        looks.check()  # raised once
        assert len(looks) == 0

    asyncio.run(scenario())


def test_cancel_stops_the_looks_under_way() -> None:
    async def scenario() -> None:
        log: list[str] = []
        looks = LookPipeline(2, lambda: None)
        never = asyncio.Event()
        looks.start(_look("a", never, log), lambda got: log.append(f"apply {got}"))
        await asyncio.sleep(0)
        await looks.cancel()
        assert len(looks) == 0 and log == ["start a"]
        looks.check()

    asyncio.run(scenario())
