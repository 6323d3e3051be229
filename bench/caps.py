"""Rows one credential can make the server keep: a collector's flood of new pane keys,
and a read-only token's refused answers and viewer-link sign-ins. In process, on a
fresh migrated SQLite database, with whatever `paneboard_server` is importable (run it
once more with `PYTHONPATH` at another tree's `server/src` for a baseline).

    uv run python bench/caps.py flood          # 3,000 new blocked keys a snapshot, 60 snapshots
    uv run python bench/caps.py readonly       # 20 s of refused answers, then N sign-ins

Prints one JSON line: the rows in each table afterwards, the database's size on disk
(with its WAL), and the seconds the run took.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "server"))


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


async def _rows(core: Any) -> dict[str, int]:
    from paneboard_server.store import schema as s
    from sqlalchemy import func, select

    out = {}
    async with core.engine.connect() as conn:
        for t in (s.panes, s.history, s.waits, s.answers, s.web_sessions):
            out[t.name] = int((await conn.execute(select(func.count()).select_from(t))).scalar_one())
    return out


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


async def _submit(core: Any, op: Any) -> None:
    done = asyncio.get_running_loop().create_future()
    op.on_commit = lambda: done.done() or done.set_result(None)
    op.on_fail = lambda e: done.done() or done.set_exception(e)
    core.submit(op)
    await done


async def flood(db: Path, keys: int, snapshots: int) -> dict[str, Any]:
    from paneboard_server.app import create_app
    from paneboard_server.config import Config
    from paneboard_server.panes.core import Ingest
    from paneboard_server.services import services_of
    from pbserver import make_tokens
    from support.reports import pane_report

    url = f"sqlite:///{db}"
    await make_tokens(url)
    clock = Clock(1_900_000_000.0)
    app = create_app(Config(), f"sqlite+aiosqlite:///{db}", clock=clock)
    async with app.router.lifespan_context(app):
        core = services_of(app).core
        for r in range(snapshots):
            clock.t += 1
            ups = [
                pane_report(
                    f"%f{r}x{i}",
                    "blocked",
                    host="h",
                    t=clock.t,
                    session="main",
                    window="0",
                    agent="claude",
                    msg="?",
                    source="protocol",
                )
                for i in range(keys)
            ]
            await _submit(core, Ingest(1, "s", r + 1, snapshot_hosts={}, panes=ups))
        return await _rows(core)


async def readonly(db: Path, seconds: float, at_once: int, signins: int) -> dict[str, Any]:
    import httpx
    from paneboard_server.app import create_app
    from paneboard_server.config import Config
    from paneboard_server.panes.core import Ingest
    from paneboard_server.services import services_of
    from pbserver import make_tokens
    from support.reports import pane_report

    url = f"sqlite:///{db}"
    tokens = await make_tokens(url)
    app = create_app(Config(), f"sqlite+aiosqlite:///{db}")
    async with app.router.lifespan_context(app):
        core = services_of(app).core
        u = pane_report(
            "%1", "blocked", host="h", session="main", window="0", agent="claude", source="protocol"
        )
        await _submit(core, Ingest(1, "s", 1, panes=[u]))
        (pid,) = core.panes
        bearer = {"Authorization": f"Bearer {tokens['viewer']}"}
        body = {"fingerprint": "f" * 64, "text": "x" * 1000}
        refused = 0
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
            end = time.monotonic() + seconds

            async def one() -> None:
                nonlocal refused
                while time.monotonic() < end:
                    r = await c.post(f"/api/panes/{pid}/answer", json=body, headers=bearer)
                    refused += r.status_code == 403

            await asyncio.gather(*[one() for _ in range(at_once)])
            after_answers = await _rows(core)
            for _ in range(signins):
                c.cookies.clear()
                await c.get(f"/?token={tokens['viewer']}")
        rows = await _rows(core)
        return {
            "refused": refused,
            "answers": after_answers["answers"],
            "signins": signins,
            "web_sessions": rows["web_sessions"],
        }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["flood", "readonly"])
    ap.add_argument("--keys", type=int, default=3000)
    ap.add_argument("--snapshots", type=int, default=60)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--at-once", type=int, default=8)
    ap.add_argument("--signins", type=int, default=4000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "caps.db"
        from paneboard_server.store.migrate import upgrade

        upgrade(f"sqlite+aiosqlite:///{db}")
        t0 = time.monotonic()
        if args.what == "flood":
            out = asyncio.run(flood(db, args.keys, args.snapshots))
        else:
            out = asyncio.run(readonly(db, args.seconds, args.at_once, args.signins))
        out["db_bytes"] = _size(db)
        out["seconds"] = round(time.monotonic() - t0, 1)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
