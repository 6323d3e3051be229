"""A hung asyncio test fails with where every task waits, not a bare time-out.

pytest-timeout shows only the main thread, which sits in the event loop's `select`:
that says nothing about which `await` never returned. `within` bounds a coroutine and,
when it runs over, puts every task's stack in the failure.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


def task_stacks() -> str:
    out = io.StringIO()
    for task in asyncio.all_tasks():
        out.write(f"--- {task.get_name()}: {task.get_coro()!r}\n")
        task.print_stack(limit=12, file=out)
    return out.getvalue()


async def within(aw: Awaitable[T], seconds: float, what: str) -> T:
    task = asyncio.ensure_future(aw)
    done, _ = await asyncio.wait({task}, timeout=seconds)
    if not done:
        stacks = task_stacks()
        # printed too: if the tasks then hang on their way out, pytest-timeout's report
        # still carries this (captured output), where the exception below would be lost
        print(f"{what} ran over {seconds:g} s; every task's stack:\n{stacks}", flush=True)
        task.cancel()
        raise AssertionError(f"{what} did not finish within {seconds:g} s; every task's stack:\n{stacks}")
    return task.result()
