"""`GET /api/panes/{id}` says what decided the pane's state (`why`), from the evidence the
collector sent — and the text of the screen rows a rule matched on goes nowhere: not in
`why`, the pane list, the stream, the history or the stored rows (only the screen
endpoint shows a screen, to those with screen rights).

The real app, lifespan and database; the evidence is a real classifier's."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from paneboard_protocol.classifier import PaneClassifier
from paneboard_protocol.events import StatusReport
from paneboard_protocol.rules import RuleSet, parse_manifest
from paneboard_server.app import create_app
from paneboard_server.config import Config
from paneboard_server.panes.core import Ingest
from paneboard_server.services import services_of
from paneboard_server.store import schema as s
from paneboard_server.store.database import create_engine, resolve_url
from pbserver import bearer, make_tokens
from sqlalchemy import select
from support.reports import pane_report
from test_stream_first_frames import first_event

MANIFEST = r"""
id = "boxed"
agent = "boxed"
process = ["boxed"]

[[rules]]
id = "permission_prompt"
state = "blocked"
kind = "permission"
priority = 100
line_regex = ['^│ Allow .* to run', '^│ ❯ 1\. Yes']
"""

ROW_TEXT = "Yes, and zebra-quokka"  # on a row the rule matched, in no question
SCREEN = "\n".join(
    [f"output {i}" for i in range(1, 31)]
    + [
        "╭──────────────────────────────────╮",
        "│ Allow boxed to run `make`?       │",  # row 32
        "│                                  │",
        f"│ ❯ 1. {ROW_TEXT}        │",  # row 34
        "│   2. No                          │",
        "╰──────────────────────────────────╯",
    ]
)


def _updates() -> list[Any]:
    """Two panes as a collector reports them: a prompt a screen rule reads, and a
    shell's report held while its command (`rsync`) runs."""
    out = []
    c = PaneClassifier(RuleSet.from_manifests([parse_manifest(MANIFEST)]))
    c.set_process(1.0, "boxed", 700, chain=(42, 1))
    c.set_screen(2.0, SCREEN)
    sh = PaneClassifier()
    sh.set_process(1.0, None, 4242, chain=(1,), shell="bash")
    sh.feed(3.0, [StatusReport(0, None, "working", msg="Syncing photos")])
    sh.set_process(4.0, "rsync", 4300, chain=(4242, 1))
    for pane, proc, cl in (("%1", "boxed", c), ("%2", "rsync", sh)):
        got = cl.classification(5.0)
        assert got.state in ("blocked", "working")
        out.append(
            pane_report(
                pane,
                got.state,
                t=5.0,
                process=proc,
                agent=got.agent,
                kind=got.kind,
                msg=got.msg,
                source=got.source,
                records=got.records,
                evidence=cl.evidence(),
            )
        )
    return out


def test_the_pane_says_why_and_no_row_text_travels(db_url: str) -> None:
    async def go() -> None:
        tokens = await make_tokens(db_url)
        app = create_app(Config(), resolve_url(db_url))
        async with app.router.lifespan_context(app):
            core = services_of(app).core
            done = asyncio.get_running_loop().create_future()
            core.submit(Ingest(1, "s", 1, panes=_updates(), on_commit=lambda: done.set_result(None)))
            await asyncio.wait_for(done, 30)
            ids = {p.pane: p.id for p in core.panes.values()}
            head = bearer(tokens["viewer"])
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
                boxed = (await client.get(f"/api/panes/{ids['%1']}", headers=head)).json()
                shell = (await client.get(f"/api/panes/{ids['%2']}", headers=head)).json()
                listed = (await client.get("/api/panes", headers=head)).text
                history = [
                    (await client.get(f"/api/panes/{i}/events", headers=head)).text for i in ids.values()
                ]
            stream = b"".join(await first_event(app, tokens["viewer"])).decode()
            engine = create_engine(resolve_url(db_url))
            try:
                async with engine.connect() as conn:
                    rows = [r._mapping for r in (await conn.execute(select(s.panes))).all()]
                    rows += [r._mapping for r in (await conn.execute(select(s.history))).all()]
            finally:
                await engine.dispose()

        assert boxed["state"] == "blocked"
        assert boxed["why"] == {
            "source": "screen",
            "text": "screen rule `boxed.permission_prompt` matched lines 32–34",
            "state": "blocked",
            "rule": "boxed.permission_prompt",
            "lines": [32, 34],
        }
        assert shell["why"] == {
            "source": "report",
            "text": "reported by `bash` (pid 4242), the parent of `rsync`",
            "state": "working",
            "writer": "bash",
            "pid": 4242,
            "relation": "parent",
            "front": "rsync",
            "at": 3.0,
        }
        # the page's own, on request: the board's list and stream do without it
        assert all("why" not in p for p in json.loads(listed))
        assert "matched lines" not in stream and "reported by" not in stream
        for where, text in [
            ("the pane", json.dumps(boxed)),
            ("the list", listed),
            ("the stream", stream),
            *[("the history", h) for h in history],
            ("the stored rows", json.dumps([dict(r) for r in rows], default=str)),
        ]:
            assert ROW_TEXT not in text, where
        assert "make`?" in boxed["msg"]  # the question the prompt asks is the pane's message, as before

    asyncio.run(go())
