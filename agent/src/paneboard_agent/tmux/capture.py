"""The collector's one way to read a pane's screen: `capture-pane`, bounded per tmux server.

Both readers go through `PaneCapture.read`: the pane's tracker (plain text for the
screen rules, `pane_tasks.py`) and the screens pages watch (`-e` colours, scroll-back,
and the pane's size and cursor in the same tmux run, `screens.py`). One semaphore
bounds them together (`captures_at_once`), so a board with pages open cannot starve
the classification of captures, nor the other way round. Captures run as one-shot
commands, never through a control client: screen text can never be read as
control-mode protocol.
"""

from __future__ import annotations

import asyncio

from paneboard_agent.transport import Transport

SIZE_FORMAT = "#{pane_width} #{pane_height} #{cursor_x} #{cursor_y}"


class PaneCapture:
    """`capture-pane` for one tmux server, at most `at_once` in flight."""

    def __init__(self, transport: Transport, base: list[str], at_once: int) -> None:
        self.t = transport
        self.base = base
        self._sem = asyncio.Semaphore(at_once)

    async def read(
        self, pane_id: str, *, colours: bool = False, scrollback: int = 0, size: bool = False
    ) -> str | None:
        """The pane's text (None: tmux refused, e.g. the pane went). `colours`: keep SGR
        escapes (`-e`); `scrollback`: that many lines of history first; `size`: a last
        line `WIDTH HEIGHT CURSOR_X CURSOR_Y` from the same tmux run. Raises
        `TransportError` when tmux could not be run at all."""
        argv = [*self.base, "capture-pane", "-p"]
        if colours:
            argv.append("-e")
        if scrollback:
            argv += ["-S", str(-scrollback)]
        argv += ["-t", pane_id]
        if size:
            argv += [";", "display-message", "-p", "-t", pane_id, SIZE_FORMAT]
        async with self._sem:
            res = await self.t.run(argv, timeout=10)
        if res.returncode != 0:
            return None
        return res.stdout.decode("utf-8", "replace")
