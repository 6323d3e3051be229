"""A plausible, labelled sample of waits for `paneboard demo` (and the stats page's
browser test): a working day of eight agents on three hosts, so the stats page of a
throw-away database has something to show.

It is made the way real waits are: a history of state changes per sample pane, turned
into intervals by `ledger.derive`; only the history itself is not stored (the sample
panes never existed, so nothing of them reaches the board). Every sample host is named
`sample-…` and every session `sample day`: nobody can take them for real ones.
"""

from __future__ import annotations

import random
from typing import Any

from paneboard_protocol.pane import State
from sqlalchemy import delete, insert
from sqlalchemy.ext.asyncio import AsyncEngine

from ..store import schema as s
from .intervals import Event, derive

#: what an answered agent goes on to: mostly work, now and then nothing
_AFTER_ANSWER: tuple[State, ...] = ("working",) * 8 + ("idle",)

SAMPLE_SESSION = "sample day"
HOSTS = ("sample-build1", "sample-gpu2", "sample-laptop")
AGENTS = ("claude", "codex", "gemini", "aider")
PROMPTS = {
    "permission": (
        "Allow edit of 'src/{f}.py' ({n} lines)?",
        "Run `pytest -q tests/{f}`?",
        "Allow `git push origin {f}`?",
        "Run `npm install` in ./web?",
    ),
    "question": ("Which branch should I rebase onto?", "Keep the old API for {n} more release(s)?"),
    "auth": ("Log in to continue (token expired)",),
}
FILES = ("parser", "store", "api", "cli", "ledger", "feature-x")


def sample_history(now: float, days: int = 7, seed: int = 14) -> dict[tuple[str, str, str], list[Event]]:
    """(host, pane, agent) -> its history of the last `days` days (working hours in UTC)."""
    rng = random.Random(seed)
    out: dict[tuple[str, str, str], list[Event]] = {}
    day0 = now - now % 86400 - (days - 1) * 86400
    for i in range(8):
        host, agent = HOSTS[i % len(HOSTS)], AGENTS[i % len(AGENTS)]
        pane = f"%{10 + i}"
        events: list[Event] = []
        for d in range(days):
            t = day0 + d * 86400 + 8 * 3600 + rng.uniform(0, 3600)
            end = min(now, day0 + d * 86400 + 18 * 3600)
            events.append(Event(t, agent, "working"))
            while t < end:
                t += rng.expovariate(1 / 1500)  # about 25 minutes of work between waits
                if t >= end:
                    break
                r = rng.random()
                if r < 0.7:
                    kind = rng.choice(["permission"] * 6 + ["question"] * 3 + ["auth"])
                    msg = rng.choice(PROMPTS[kind]).format(f=rng.choice(FILES), n=rng.randint(1, 40))
                    events.append(Event(t, agent, "blocked", kind, msg))
                    # Answers: mostly quick, sometimes the person was away.
                    quick, slow, away = rng.uniform(5, 90), rng.uniform(120, 1500), rng.uniform(1800, 5400)
                    t += rng.choice([quick] * 5 + [slow, away])
                    if t >= now:
                        break  # still waiting: `seed_sample` ends it at `now`
                    events.append(Event(t, agent, rng.choice(_AFTER_ANSWER)))
                else:
                    events.append(Event(t, agent, "done", None, "finished"))
                    t += rng.uniform(30, 2400)
                    events.append(Event(min(t, now), agent, "idle", reason="seen"))
                    t += rng.uniform(5, 120)
                    events.append(Event(min(t, now), agent, "working"))
            if end < now:
                events.append(Event(end, agent, "idle"))
        out[(host, pane, agent)] = [e for e in events if e.t <= now]
    return out


async def seed_sample(engine: AsyncEngine, now: float, days: int = 7) -> int:
    """Replace any earlier sample with a fresh one ending at `now`; returns the intervals
    written."""
    rows: list[dict[str, Any]] = []
    for (host, pane, _agent), events in sample_history(now, days).items():
        for iv in derive(events):
            if iv.end_t is None:
                iv = iv.closed(Event(now, iv.agent, "idle"))  # a sample holds no one up
            rows.append(
                {
                    "pane_id": None,
                    "host": host,
                    "tmux": "default",
                    "pane": pane,
                    "session": SAMPLE_SESSION,
                    "agent": iv.agent,
                    "state": iv.state,
                    "kind": iv.kind,
                    "msg": iv.msg,
                    "start_t": iv.start_t,
                    "end_t": iv.end_t,
                    "ended": iv.ended,
                    "end_state": iv.end_state,
                }
            )
    async with engine.begin() as conn:
        old = delete(s.waits).where(s.waits.c.session == SAMPLE_SESSION, s.waits.c.pane_id.is_(None))
        await conn.execute(old)
        if rows:
            await conn.execute(insert(s.waits), rows)
    return len(rows)
