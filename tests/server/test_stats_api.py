"""`GET /api/stats` and `GET /api/blocks` against figures worked out by hand, on SQLite
and PostgreSQL, from a history played into a real in-process server."""

from __future__ import annotations

import asyncio
import csv
import io
from typing import Any

import httpx
import msgspec
from ledger_helpers import Clock, report
from paneboard_server.app import create_app
from paneboard_server.config import Config
from paneboard_server.services import services_of
from paneboard_server.store.database import resolve_url
from pbserver import make_tokens

D = 1_899_936_000.0  # 2030-03-17 00:00 UTC
DAY = 86400.0
NOW = D + DAY + 6000


async def play(core: Any, clock: Clock) -> None:
    """Five blocks on day one (one over midnight), one still open on day two, one done."""
    steps: list[tuple[float, str, str, str | None, dict[str, Any]]] = [
        (3600, "h1", "%1", "blocked", {"kind": "permission", "msg": "Allow edit of 'a.py'?"}),
        (3660, "h1", "%1", "working", {}),  # answered in 60 s
        (7200, "h1", "%1", "blocked", {"kind": "permission", "msg": "Allow edit of 'b.py'?"}),
        (7320, "h1", "%1", "working", {}),  # 120 s
        (10000, "h2", "%2", "blocked", {"kind": "question", "msg": "Which branch?", "agent": "codex"}),
        (10600, "h2", "%2", "working", {"agent": "codex"}),  # 600 s
        (20000, "h2", "%2", "blocked", {"kind": "question", "msg": "Which  branch?", "agent": "codex"}),
        (20300, "h2", "%2", "idle", {"agent": "codex"}),  # cancelled after 300 s
        (DAY - 100, "h1", "%3", "blocked", {"kind": "permission", "msg": "Allow edit of 'c.py'?"}),
        (DAY + 200, "h1", "%3", "working", {}),  # 300 s: 100 on day one, 200 on day two
        (DAY + 1000, "h2", "%2", "blocked", {"kind": "auth", "msg": "Log in", "agent": "codex"}),  # open
        (DAY + 5000, "h1", "%1", "done", {}),
        (DAY + 5100, "h1", "%1", "idle", {}),
    ]
    for dt, host, pane, state, kw in steps:
        clock.t = D + dt
        await report(core, host, pane, state, **kw)
    clock.t = NOW


def served(db_url: str, body: Any) -> None:
    tokens = asyncio.run(make_tokens(db_url))
    clock = Clock(D)

    async def go() -> None:
        app = create_app(Config(), resolve_url(db_url), clock=clock)
        async with app.router.lifespan_context(app):
            await play(services_of(app).core, clock)
            transport = httpx.ASGITransport(app=app)
            headers = {"Authorization": f"Bearer {tokens['viewer']}"}
            async with httpx.AsyncClient(transport=transport, base_url="http://t", headers=headers) as c:
                await body(c)

    asyncio.run(go())


def series(out: dict[str, Any]) -> dict[str, list[float]]:
    return {x["name"]: x["values"] for x in out["per_day"]["series"]}


def test_stats_match_the_figures_worked_out_by_hand(db_url: str) -> None:
    async def body(c: httpx.AsyncClient) -> None:
        r = await c.get("/api/stats", params={"from": D, "to": D + 2 * DAY})
        assert r.status_code == 200, r.text
        out = r.json()
        assert out["totals"] == {
            "count": 6, "waited": 6380.0, "open": 1, "answered": 4, "ended": {"answered": 4, "cancelled": 1}
        }  # fmt: skip
        assert out["per_day"]["days"] == ["2030-03-17", "2030-03-18"]
        assert [x["name"] for x in out["per_day"]["series"]] == ["codex", "claude"]  # most first
        assert series(out) == {"claude": [280.0, 200.0], "codex": [900.0, 5000.0]}
        tta = out["time_to_answer"]
        assert tta["agent"] == [
            {"name": "claude", "count": 3, "p50": 120.0, "p90": 300.0, "max": 300.0},
            {"name": "codex", "count": 1, "p50": 600.0, "p90": 600.0, "max": 600.0},
        ]
        assert [(g["name"], g["p50"], g["max"]) for g in tta["host"]] == [
            ("h1", 120.0, 300.0),
            ("h2", 600, 600),
        ]
        assert [(g["name"], g["count"]) for g in tta["kind"]] == [("permission", 3), ("question", 1)]
        assert [(p["host"], p["pane"], p["count"], p["waited"]) for p in out["panes"]] == [
            ("h2", "%2", 3, 5900.0),
            ("h1", "%3", 1, 300.0),
            ("h1", "%1", 2, 180.0),
        ]
        assert [(p["kind"], p["text"], p["count"], p["waited"]) for p in out["prompts"]] == [
            ("permission", "allow edit of …?", 3, 480.0),
            ("question", "which branch?", 2, 900.0),
            ("auth", "log in", 1, 5000.0),
        ]
        assert out["options"] == {"hosts": ["h1", "h2"], "agents": ["claude", "codex"]}

        by_host = (await c.get("/api/stats", params={"from": D, "to": D + 2 * DAY, "by": "host"})).json()
        assert series(by_host) == {"h1": [280.0, 200.0], "h2": [900.0, 5000.0]}

    served(db_url, body)


def test_stats_filters_range_host_agent_and_time_zone(db_url: str) -> None:
    async def body(c: httpx.AsyncClient) -> None:
        async def get(**params: Any) -> dict[str, Any]:
            r = await c.get("/api/stats", params={"from": D, "to": D + 2 * DAY, **params})
            assert r.status_code == 200, r.text
            return r.json()

        h1 = await get(host="h1")
        assert h1["totals"]["count"] == 3 and h1["totals"]["waited"] == 480.0
        codex = await get(agent="codex")
        assert codex["totals"] == {
            "count": 3, "waited": 5900.0, "open": 1, "answered": 1, "ended": {"answered": 1, "cancelled": 1}
        }  # fmt: skip
        # Day two only: the block over midnight counts its 200 s there, but its answer
        # time (it began on day one) and its prompt belong to day one.
        day2 = await get(**{"from": D + DAY})
        assert series(day2) == {"claude": [200.0], "codex": [5000.0]}
        assert day2["time_to_answer"]["agent"] == []
        assert [p["kind"] for p in day2["prompts"]] == ["auth"]
        # The totals add up: the block answered on day two is among the day's answered
        # waits (it was left out, so the headline's parts did not make its total).
        t2 = day2["totals"]
        assert (t2["count"], t2["open"], t2["answered"], t2["ended"]) == (2, 1, 1, {"answered": 1})
        # An hour east of UTC the midnight block lies wholly on the second local day.
        east = await get(tz=60)
        assert east["per_day"]["days"] == ["2030-03-17", "2030-03-18", "2030-03-19"]
        assert series(east) == {"claude": [180.0, 300.0, 0.0], "codex": [900.0, 5000.0, 0.0]}
        done = await get(state="done")
        assert done["totals"]["count"] == 1 and done["totals"]["waited"] == 100.0
        # Default range: the last seven days up to now.
        assert (await c.get("/api/stats")).json()["totals"]["count"] == 6
        for bad in ({"tz": 10_000}, {"by": "x"}, {"from": -1}, {"to": 1e12}):
            r = await c.get("/api/stats", params=bad)
            assert r.status_code == 422 and isinstance(r.json()["detail"], str), (bad, r.text)
        # Ranges the schema allows are answered (the OpenAPI contract): `to` not after
        # `from` is an empty range, and one over 366 days is cut to the 366 days before `to`.
        for empty in ({"from": D + DAY, "to": D + DAY}, {"from": D + DAY, "to": D}):
            out = await get(**empty)
            assert out["totals"] == {"count": 0, "waited": 0.0, "open": 0, "answered": 0, "ended": {}}, empty
            assert out["from"] == out["to"] == empty["to"] and out["panes"] == [] and out["prompts"] == []
            blocks = (await c.get("/api/blocks", params=empty)).json()
            assert blocks["blocks"] == [] and blocks["from"] == blocks["to"] == empty["to"]
        long = await get(**{"from": D - 400 * DAY, "to": D + 2 * DAY})
        assert long["to"] - long["from"] == 366 * DAY and long["totals"]["count"] == 6
        blocks = (await c.get("/api/blocks", params={"from": 0, "to": D + 2 * DAY})).json()
        assert blocks["from"] == D - 364 * DAY and len(blocks["blocks"]) == 6

    served(db_url, body)


def test_blocks_lists_the_intervals_as_json_and_csv(db_url: str) -> None:
    async def body(c: httpx.AsyncClient) -> None:
        out = (await c.get("/api/blocks", params={"from": D, "to": D + 2 * DAY})).json()
        rows = out["blocks"]
        assert [(b["pane"], b["kind"], b["waited"], b["ended"]) for b in rows] == [
            ("%2", "auth", 5000.0, None),
            ("%3", "permission", 300.0, "answered"),
            ("%2", "question", 300.0, "cancelled"),
            ("%2", "question", 600.0, "answered"),
            ("%1", "permission", 120.0, "answered"),
            ("%1", "permission", 60.0, "answered"),
        ]
        assert rows[0]["end_t"] is None and rows[0]["answered_by"] is None and rows[0]["session"] == "main"
        two = (
            await c.get("/api/blocks", params={"from": D, "to": D + 2 * DAY, "limit": 2, "host": "h1"})
        ).json()
        assert [b["pane"] for b in two["blocks"]] == ["%3", "%1"]
        r = await c.get("/api/blocks", params={"from": D, "to": D + 2 * DAY, "format": "csv"})
        assert r.headers["content-type"].startswith("text/csv")
        table = list(csv.DictReader(io.StringIO(r.text)))
        assert len(table) == 6 and table[0]["kind"] == "auth" and table[0]["end_t"] == ""
        assert table[1]["start"] == "2030-03-17T23:58:20+00:00" and table[1]["waited"] == "300.0"
        anon = await httpx.AsyncClient(transport=c._transport, base_url="http://t").get("/api/blocks")
        assert anon.status_code == 401

    served(db_url, body)


def test_csv_cells_that_would_be_formulas_are_quoted() -> None:
    from paneboard_server.api.stats import FIELDS, to_csv
    from paneboard_server.api.views import Block

    row = Block(**dict.fromkeys(FIELDS))  # type: ignore[arg-type]  # None where the test reads nothing
    row = msgspec.structs.replace(
        row, start_t=D, msg='=HYPERLINK("http://x")', host="+h", agent="@a", session="fine"
    )
    got = next(csv.DictReader(io.StringIO(to_csv([row]))))
    assert (got["msg"], got["host"], got["agent"], got["session"]) == (
        '\'=HYPERLINK("http://x")',
        "'+h",
        "'@a",
        "fine",
    )
