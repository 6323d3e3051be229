"""The OpenAPI document is true: `st run --checks all` (schemathesis's own runner, every
phase: examples, coverage, fuzzing and the stateful phase over the document's links)
against a real `paneboard serve` on SQLite, once with a viewer token and once with an
operator's login session and CSRF header (contract_auth.py gives each request its
credentials), must find no failure and no server error.

Each operation documents the statuses, bodies (one error shape, `{"detail": ...}`, see
api/errors.py) and content types it answers, and its limits are in its schema, so a
request the schema allows is never refused with 422 and one it forbids never accepted.
One exception, named below: a push subscription's key must be a point on the P-256
curve, which no JSON Schema can say. `/api/stream` never ends, so its body is not read
by schemathesis; `test_the_stream_answers_its_documented_content_type` checks what it
documents instead. Nothing here types into a pane: there is no collector, so every pane
id is unknown (404, documented).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import jsonschema_rs
import pytest
from pbserver import ServerProc, free_port
from support.proctier import spawns

PASSWORD = "correct horse battery staple"
EXAMPLES = 15  # per operation and phase: each run takes well under a minute on 2 cores
HERE = Path(__file__).resolve().parent

# Wrong passwords are what a fuzzer sends: the login throttle must not lock the test out.
CONFIG = """
[limits]
login_account_failures = 1000000
login_address_failures = 1000000
"""

# The one exception: a push subscription whose keys and endpoint match the schema may
# still be refused (422, documented) because `p256dh` is not a point on the P-256 curve
# or the endpoint's host does not resolve to public addresses; no schema can say either.
ST_CONFIG = """
[[operations]]
include-path = "/api/push/subscribe"
include-method = "POST"
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "409", "422", "429"]
"""


@dataclass
class Stack:
    server: ServerProc
    viewer: str  # a viewer token
    tmp: Path

    @property
    def url(self) -> str:
        return self.server.url


async def _accounts(db: str) -> str:
    from paneboard_server.auth import accounts
    from paneboard_server.store.database import create_engine, resolve_url

    engine = create_engine(resolve_url(db))
    try:
        await accounts.add_viewer(engine, "olga", PASSWORD, operator=True)
        return await accounts.create_token(engine, "wall", "viewer")
    finally:
        await engine.dispose()


@pytest.fixture(scope="module")
@spawns
def stack(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("contract")
    shutil.copy(sqlite_template, tmp / "paneboard.db")
    db = f"sqlite:///{tmp / 'paneboard.db'}"
    viewer = asyncio.run(_accounts(db))
    (tmp / "config.toml").write_text(CONFIG)
    server = ServerProc(db, free_port(), tmp / "config.toml", log=tmp / "server.log")
    server.start()
    try:
        yield Stack(server, viewer, tmp)
    finally:
        server.stop()
    log = (tmp / "server.log").read_text()
    assert "Traceback" not in log, log[-3000:]


@pytest.mark.parametrize("who", ["viewer", "operator"])
def test_schemathesis_finds_no_failure_with_every_check(stack: Stack, who: str) -> None:
    """`st run --checks all`, every phase (examples, coverage, fuzzing, stateful)."""
    (stack.tmp / "schemathesis.toml").write_text(ST_CONFIG)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "SCHEMATHESIS_HOOKS": "contract_auth",
        "PB_CONTRACT_URL": stack.url,
        "PB_CONTRACT_WHO": who,
        "PB_CONTRACT_TOKEN": stack.viewer,
        "PB_CONTRACT_NAME": "olga",
        "PB_CONTRACT_PASSWORD": PASSWORD,
    }
    st = Path(sys.executable).with_name("st")
    args = [str(st), "--no-color", "--config-file", str(stack.tmp / "schemathesis.toml"), "run",
            stack.url + "/openapi.json", "--checks", "all", "--phases", "examples,coverage,fuzzing,stateful",
            "--exclude-path", "/api/stream", "--max-examples", str(EXAMPLES), "--seed", "21",
            "--workers", "1", "--request-timeout", "30", "--max-failures", "100"]  # fmt: skip
    proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300, cwd=stack.tmp)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-20000:]
    assert "Server error" not in out and "failures" not in out.splitlines()[-1], out[-5000:]
    assert "Authentication failed" not in out or who == "viewer", out[-5000:]
    assert stack.server.proc is not None and stack.server.proc.poll() is None


def sse_event(lines: Iterator[str]) -> dict[str, str]:
    """The first event of a stream, as an EventSource reads it: its fields up to the
    blank line that ends it (comments, such as pings, skipped)."""
    event: dict[str, str] = {}
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                break
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        else:
            event[name] = value
    return {**event, "data": "\n".join(data)}


def test_the_stream_answers_its_documented_content_type(stack: Stack) -> None:
    doc = httpx.get(stack.url + "/openapi.json").json()
    op = doc["paths"]["/api/stream"]["get"]
    assert set(op["responses"]["200"]["content"]) == {"text/event-stream"}
    assert op["responses"]["401"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorBody"
    }
    headers = {"Authorization": f"Bearer {stack.viewer}"}
    with httpx.stream("GET", stack.url + "/api/stream", headers=headers, timeout=30) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].split(";")[0] == "text/event-stream"
        first = sse_event(r.iter_lines())
    # The schema of an event stream's content is each event's (OpenAPI 3.1, read as
    # schemathesis reads it: ST108 otherwise): the first event, as a parser reads it, fits.
    schema = op["responses"]["200"]["content"]["text/event-stream"]["schema"]
    jsonschema_rs.validate(schema, first)
    assert first["event"] == "snapshot" and isinstance(json.loads(first["data"]), dict)
    r = httpx.get(stack.url + "/api/stream", timeout=30)
    assert r.status_code == 401 and r.headers["content-type"] == "application/json"
    assert set(r.json()) == {"detail"} and isinstance(r.json()["detail"], str)


def test_an_unknown_path_is_a_page_for_a_browser_and_json_for_a_program(stack: Stack) -> None:
    page = httpx.get(stack.url + "/nope", headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    assert "does not exist" in page.text and 'href="/"' in page.text
    for accept in ("application/json", "*/*", "application/json, text/html"):
        r = httpx.get(stack.url + "/api/nope", headers={"Accept": accept})
        assert r.status_code == 404 and r.json() == {"detail": "Not Found"}
    # An API route's path with another method: 405 with the route's own methods.
    r = httpx.request("OPTIONS", stack.url + "/api/login")
    assert r.status_code == 405 and r.headers["allow"] == "POST"
    assert r.json() == {"detail": "Method Not Allowed"}


def test_a_422_is_the_one_error_body_with_its_fields(stack: Stack) -> None:
    """The dashboard shows `detail` when it is a string: a validation error's too."""
    auth = {"Authorization": f"Bearer {stack.viewer}"}
    r = httpx.get(stack.url + "/api/panes/1/events", params={"limit": 5000}, headers=auth)
    assert r.status_code == 422
    body = r.json()
    msg = "Input should be less than or equal to 1000"
    assert body["detail"] == f"query.limit: {msg}"
    assert body["errors"] == [{"loc": ["query", "limit"], "msg": msg, "type": "less_than_equal"}]
    r = httpx.post(stack.url + "/api/login", content=b"\x80", headers={"Content-Type": "application/json"})
    assert r.status_code in (400, 422) and isinstance(r.json()["detail"], str)
