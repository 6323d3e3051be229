"""Alerts that escalate instead of nagging, against a real in-process server (SQLite
and PostgreSQL) with a fake clock and real Apprise `json://` receivers: a block past a
route's threshold is told to a second route once (also across a restart), a burst is
one message, "done" can be switched off per route, and every send is in the log with
its reason."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from ledger_helpers import T0, Clock, report, reports, update
from paneboard_server.app import create_app
from paneboard_server.config import ConfigError, parse_config
from paneboard_server.notify import store
from paneboard_server.notify.settings import parse_channels
from paneboard_server.services import services_of
from paneboard_server.store.database import resolve_url
from pbserver import make_tokens
from support.receiver import JsonReceiver


@pytest.fixture
def receivers():
    mine, team = JsonReceiver().start(), JsonReceiver().start()
    yield mine, team
    mine.stop()
    team.stop()


def notify_config(mine: JsonReceiver, team: JsonReceiver, **extra: Any) -> dict[str, Any]:
    return {
        "group_window": 0.05,
        "channels": [
            {
                "url": mine.url,
                "name": "me",
                "escalate_after": 600,
                "escalate_to": "team",
                "done": False,
                **extra,
            },
            {"url": team.url, "name": "team", "states": []},  # hears escalations only
        ],
    }


def served(db_url: str, clock: Clock, cfg: dict[str, Any], body: Any) -> None:
    async def go() -> None:
        app = create_app(parse_config({"notify": cfg}), resolve_url(db_url), clock=clock)
        async with app.router.lifespan_context(app):
            await body(services_of(app).core, services_of(app).notify, app)

    asyncio.run(go())


async def api(app: Any, token: str, path: str) -> Any:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        r = await c.get(path, headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 200, r.text
        return r.json()


def test_a_long_block_escalates_once_to_the_second_route_even_across_a_restart(db_url, receivers) -> None:
    mine, team = receivers
    tokens = asyncio.run(make_tokens(db_url))
    clock = Clock(T0)
    cfg = notify_config(mine, team)

    async def first(core: Any, svc: Any, app: Any) -> None:
        await report(core, "build1", "%1", "blocked", kind="permission", msg="Allow git push?")
        await svc.idle()
        assert [b["title"] for b in mine.bodies] == ["claude blocked (permission)"]
        clock.t = T0 + 300
        assert await svc.escalate() == 0  # not yet
        await report(core, "build1", "%2", "blocked", kind="question", msg="Which branch?")
        await svc.idle()
        clock.t = T0 + 601
        assert await svc.escalate() == 1
        msg = team.wait_for(1)[0]
        assert msg["title"] == "⏰ claude waiting 10 min (permission)"
        assert "has waited 10 min" in msg["message"] and "Allow git push?" in msg["message"]
        assert "build1 · main %1" in msg["message"] and "past 10 min on me" in msg["message"]
        assert await svc.escalate() == 0  # once
        assert len(team.bodies) == 1

    async def second(core: Any, svc: Any, app: Any) -> None:
        clock.t = T0 + 700
        assert await svc.escalate() == 0  # %1 was told before the restart; %2 waits 400 s
        clock.t = T0 + 901
        assert await svc.escalate() == 1
        assert "Which branch?" in team.wait_for(2)[1]["message"]
        clock.t = T0 + 950
        await report(core, "build1", "%3", "blocked", kind="auth", msg="Log in")
        await report(core, "build1", "%3", "working")  # answered before its threshold
        await svc.idle()
        clock.t = T0 + 5000
        assert await svc.escalate() == 0
        log = (await api(app, tokens["viewer"], "/api/notify/log"))["entries"]
        told = [(e["channel"], e["reason"], e["ok"]) for e in reversed(log)]
        assert told == [
            ("apprise:me", "block", True),
            ("apprise:me", "block", True),
            ("apprise:team", "escalation", True),
            ("apprise:team", "escalation", True),
            ("apprise:me", "block", True),  # %3: answered in time, never escalated
        ], told
        assert all(e["wait_id"] is not None for e in log if e["reason"] == "escalation")

    served(db_url, clock, cfg, first)
    served(db_url, clock, cfg, second)


def test_a_muted_host_is_not_escalated(db_url, receivers) -> None:
    mine, team = receivers
    asyncio.run(make_tokens(db_url))
    clock = Clock(T0)

    async def body(core: Any, svc: Any, app: Any) -> None:
        await store.add_mute(core.engine, "host", "build1", None)
        await report(core, "build1", "%1", "blocked", kind="question")
        await svc.idle()
        clock.t = T0 + 3600
        assert await svc.escalate() == 0 and team.bodies == [] and mine.bodies == []

    served(db_url, clock, notify_config(mine, team), body)


def test_a_burst_is_one_message_and_done_is_switched_off_per_route(db_url, receivers) -> None:
    mine, team = receivers
    asyncio.run(make_tokens(db_url))
    clock = Clock(T0)
    cfg = notify_config(mine, team)
    cfg["channels"][1]["states"] = ["done"]  # the team channel hears "done", "me" does not

    async def body(core: Any, svc: Any, app: Any) -> None:
        await reports(
            core,
            [update("gpu", f"%{i}", "blocked", kind="permission", msg=f"Run job {i}?") for i in range(15)],
        )
        await svc.idle()
        assert len(mine.bodies) == 1
        grouped = mine.bodies[0]
        assert grouped["title"] == "15 agents waiting"
        lines = grouped["message"].splitlines()
        assert len(lines) == 9 and lines[-1] == "… and 7 more"
        assert lines[0] == "claude blocked (permission) · gpu main:0: Run job 0?"
        clock.t = T0 + 10
        await report(core, "gpu", "%20", "blocked", kind="question", msg="Alone?")
        await svc.idle()
        assert mine.wait_for(2)[1]["title"] == "claude blocked (question)"
        await report(core, "gpu", "%20", "done")
        await svc.idle()
        assert [b["title"] for b in team.wait_for(1)] == ["claude done"]
        assert len(mine.bodies) == 2  # "done" is off on this route
        log = await store.recent_log(core.engine)
        told = [(e["channel"], e["reason"], e["detail"][:9]) for e in reversed(log)]
        assert told == [
            ("apprise:me", "grouped", "15 panes:"),
            ("apprise:me", "block", ""),
            ("apprise:team", "done", ""),
        ]

    served(db_url, clock, cfg, body)


@pytest.mark.parametrize(
    ("entry", "msg"),
    [
        ({"escalate_after": 600}, "go together"),
        ({"escalate_after": 0, "escalate_to": "team"}, "greater than 0"),
        ({"escalate_after": 60, "escalate_to": "nobody"}, "names no other channel"),
        ({"done": "no"}, r"channels\[0\]\.done: expected true or false"),
    ],
)
def test_bad_escalation_settings_are_one_clear_error(entry: dict[str, Any], msg: str) -> None:
    channels = [
        {"url": "json://127.0.0.1:9/x", "name": "me", **entry},
        {"url": "json://127.0.0.1:9/y", "name": "team"},
    ]
    with pytest.raises(ConfigError, match=msg):
        parse_channels({"channels": channels})
