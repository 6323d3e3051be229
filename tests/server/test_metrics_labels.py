"""`/metrics` by agent and host, with bounded labels, and the longest wait: a real server,
a raw collector, and the Prometheus text parsed by prometheus_client's own parser."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest
from paneboard_server.api.metrics import HOST_LABELS
from pbserver import bearer, connect_collector, make_tokens, wait_until
from prometheus_client.parser import text_string_to_metric_families
from support.reports import pane_report

HOSTS = HOST_LABELS + 5  # more hosts than get a label of their own


def _snapshot(now: float) -> str:
    panes = [
        pane_report(
            "%1", "working", host=f"build{n:03d}", t=now, agent="claude", source="protocol"
        ).wire_json()
        for n in range(HOSTS)
    ]
    panes += [
        pane_report("%2", "blocked", host="build000", t=now, agent="codex", since=now - 300).wire_json(),
        pane_report("%3", "blocked", host="build001", t=now, agent="codex", since=now - 30).wire_json(),
        # A name only the program's own report gave, and one with no agent at all.
        pane_report("%4", "done", host="build002", t=now, agent="my-own-agent-7f3a").wire_json(),
        pane_report("%5", None, host="build003", t=now).wire_json(),
    ]
    return json.dumps({"type": "snapshot", "seq": 1, "t": now, "panes": panes})


def _samples(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    for family in text_string_to_metric_families(text):
        if family.name == name:
            return {tuple(sorted(s.labels.items())): s.value for s in family.samples}
    raise AssertionError(f"{name} missing from /metrics")


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_panes_by_agent_and_host_have_bounded_labels_and_the_longest_wait_shows(
    db_url: str, server_factory: Any
) -> None:
    tokens = asyncio.run(make_tokens(db_url))
    server = server_factory(db_url)

    async def go() -> str:
        ws = await connect_collector(server.url, tokens["collector"], "m1")
        try:
            await ws.send(_snapshot(time.time()))
            async with httpx.AsyncClient() as c:

                async def scraped() -> str | None:
                    text = (await c.get(server.url + "/metrics", headers=bearer(tokens["viewer"]))).text
                    return text if 'paneboard_panes{state="blocked"} 2.0' in text else None

                return await wait_until(scraped, 30, "the snapshot on /metrics")
        finally:
            await ws.close()

    text = asyncio.run(go())
    by_agent = _samples(text, "paneboard_agent_panes")
    assert by_agent[(("agent", "claude"), ("state", "working"))] == HOSTS
    assert by_agent[(("agent", "codex"), ("state", "blocked"))] == 2
    assert by_agent[(("agent", "other"), ("state", "done"))] == 1
    assert by_agent[(("agent", "none"), ("state", "none"))] == 1
    assert not any("my-own-agent" in v for labels in by_agent for _, v in labels)

    by_host = _samples(text, "paneboard_host_panes")
    hosts = {dict(labels)["host"] for labels in by_host}
    assert len(hosts) == HOST_LABELS + 1 and "other" in hosts
    assert by_host[(("host", "other"), ("state", "working"))] == HOSTS - HOST_LABELS
    assert by_host[(("host", "build000"), ("state", "blocked"))] == 1
    assert sum(by_host.values()) == HOSTS + 4

    [wait] = _samples(text, "paneboard_longest_wait_seconds").values()
    assert 300 <= wait < 3600


@pytest.mark.proc
def test_the_alert_rules_in_the_operations_doc_pass_promtool(tmp_path) -> None:
    """docs/operations.md's rules, as written, through Prometheus's own checker (Debian's
    `prometheus` package, installed by ./scripts/test)."""
    import re
    import subprocess
    from pathlib import Path

    from support.tools import require_tool

    promtool = require_tool("promtool")
    doc = (Path(__file__).parents[2] / "docs" / "operations.md").read_text()
    [rules] = re.findall(r"^```yaml\n(groups:.*?)^```", doc, re.S | re.M)
    assert "paneboard_longest_wait_seconds" in rules
    path = tmp_path / "paneboard-rules.yml"
    path.write_text(rules)
    done = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 3 rules found" in done.stdout + done.stderr
