"""Hostile input on every external surface of a running stack, fuzzed with hypothesis
(and schemathesis over the server's own OpenAPI): pane bytes through tmux and sshd
into the collector, ingest WebSocket messages, HTTP bodies, headers and cookies.

For each: nothing crashes (collector and server keep running and keep working), no
response is a 5xx, no ingest socket is closed as an internal error (1011), and what
is stored keeps the wire limits and the state vocabulary. Example counts are modest
so the area stays fast; each surface gets one module-wide stack.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import h11
import httpx
import pytest
import websockets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paneboard_protocol.pane import STATES as PANE_STATES
from support.tools import require_tool
from support.wait import wait_for

from .stack import HOST, Stack

pytestmark = [pytest.mark.tmux, pytest.mark.sshd]

FUZZ = settings(
    max_examples=int(os.environ.get("PANEBOARD_E2E_FUZZ", "40")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=False,
)
STATES = {*PANE_STATES, None}  # what a pane may show: a state or none


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, db_template):
    require_tool("tmux", "sshd")
    # The fuzz sends every hostile message with one collector token; the server delays a
    # token it keeps refusing (tests/server/test_server_poison.py), which here would make
    # each example wait longer than the last, so this server lets that token be refused.
    stack = Stack(
        tmp_path_factory.mktemp("hostile"),
        template=db_template,
        limits={"collector_refusals_free": 1_000_000},
    )
    try:
        yield stack.start()
    finally:
        stack.close()


def check_stored(stack: Stack) -> list[dict[str, Any]]:
    """The server is up and every stored pane keeps the wire's limits."""
    assert stack.server.poll() is None, stack.log("server")
    rows = stack.panes()
    for p in rows:
        assert p["state"] in STATES, p
        assert 0 < len(p["host"]) <= 255 and 0 < len(p["tmux"]) <= 255 and 0 < len(p["pane"]) <= 64, p
        for k in ("msg", "title", "session", "window", "process"):
            assert p.get(k) is None or len(p[k]) <= 4096, (k, p)
        assert p.get("kind") is None or len(p["kind"]) <= 32, p
        assert p.get("progress") is None or 0 <= p["progress"] <= 100, p
    return rows


def still_works(stack: Stack, msg: str) -> None:
    """A fresh, honest report still travels the whole path."""
    pane = stack.tmux.new_window("work", f"ok{time.monotonic_ns() % 10_000}")
    wait_for(lambda: stack.pane_row(pane), timeout=30, what="a new pane after the fuzz")
    stack.report(pane, state="blocked", kind="question", msg=msg)
    wait_for(
        lambda: (r := stack.pane_row(pane)) and r["msg"] == msg and r["state"] == "blocked",
        timeout=30,
        what=f"an honest report after the fuzz: {stack.pane_row(pane)}\n{stack.log('collector1')}\n"
        f"{stack.log('server')}",
    )


# -- pane bytes ------------------------------------------------------------------------

PIECES = [
    b"\x1b]7501;",
    b"\x1b]7501;?",
    b"state=",
    b"blocked",
    b"working",
    b"bogus",
    b"kind=",
    b"msg=",
    b"title=",
    b"app=",
    b"id=",
    b":",
    b"=",
    b";",
    b"\x1b\\",
    b"\x07",
    b"\x1b",
    b"\x9c",
    b"\x9d",
    b"\x1b]1337;SetUserVar=THINKTERM_AGENT=",
    b"eyJuYW1lIjoieCJ9",
    b"\x1b]9;4;1;50\x07",
    b"\x1b]9;4;9;999\x07",
    b"\x1b]2;",
    b"\x1b]0;\xe2\xa0\x8b spin",
    b"\x1b[",
    b"\x1bP",
    b"\x1bc",
    b"\x1b]133;A\x07",
    b"\xff\xfe",
    b"\xc3",
    b"%output %0 ",
    b"\r\n%exit\r\n",
    b"\n%begin 1 2 3\n",
    b"<script>alert(1)</script>",
]
pane_bytes = st.one_of(
    st.binary(max_size=3000),
    st.lists(st.one_of(st.sampled_from(PIECES), st.binary(max_size=16)), max_size=60).map(b"".join),
)


def test_hostile_pane_bytes_leave_collector_and_server_working(hostile: Stack) -> None:
    fifo = hostile.tmp / "fuzz.fifo"
    os.mkfifo(fifo)
    hostile.new_pane("fuzz", f"exec cat {fifo}")
    with open(fifo, "wb", buffering=0) as w:

        @FUZZ
        @given(data=pane_bytes)
        def feed(data: bytes) -> None:
            w.write(data)
            assert hostile.collector.poll() is None, hostile.log("collector1")

        feed()
        w.write(b"\x1b\\\x07\x1bc")  # end whatever sequence the fuzz left open
        time.sleep(1)
        assert hostile.collector.poll() is None, hostile.log("collector1")
        check_stored(hostile)
    still_works(hostile, "after pane fuzz")


# -- ingest messages -------------------------------------------------------------------

json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False), st.text(max_size=40)
)
json_value = st.recursive(
    json_leaf,
    lambda kids: st.one_of(
        st.lists(kids, max_size=5), st.dictionaries(st.text(max_size=12), kids, max_size=5)
    ),
    max_leaves=30,
)
text_or_junk = st.one_of(st.text(max_size=300), json_value, st.sampled_from(["", "x" * 5000, "\x00", "%0"]))
key = st.fixed_dictionaries(
    {
        "host": st.one_of(st.just("fuzz"), text_or_junk),
        "tmux": st.one_of(st.just("default"), text_or_junk),
        "pane": st.one_of(st.just("%1"), text_or_junk),
    }
)
pane_in = st.fixed_dictionaries(
    {"key": st.one_of(key, json_value), "t": st.one_of(st.just(1.7e9), json_value)},
    optional={
        "state": st.one_of(st.sampled_from(sorted(s for s in STATES if s)), text_or_junk),
        "msg": text_or_junk,
        "kind": text_or_junk,
        "title": text_or_junk,
        "progress": st.one_of(st.integers(-5, 200), json_value),
        "records": st.one_of(
            st.lists(st.dictionaries(st.text(max_size=8), json_value, max_size=4), max_size=70), json_value
        ),
        "evidence": st.one_of(st.dictionaries(st.text(max_size=12), json_value, max_size=6), json_value),
        "source": text_or_junk,
        "since": json_value,
    },
)
op = st.one_of(
    st.fixed_dictionaries({"op": st.just("pane"), "update": pane_in}),
    st.fixed_dictionaries({"op": st.just("gone"), "key": key, "t": json_value}),
    st.fixed_dictionaries({"op": st.just("host"), "host": text_or_junk, "reachable": json_value}),
    json_value,
)
# well-formed panes whose free-form parts (evidence, records, texts) are hostile: these
# pass validation and reach the server's re-classification and storage
valid_pane = st.fixed_dictionaries(
    {
        "key": st.fixed_dictionaries(
            {"host": st.just("fuzz"), "tmux": st.just("default"), "pane": st.sampled_from(["%1", "%2", "%3"])}
        ),
        "t": st.floats(0, 1e11),
    },
    optional={
        "state": st.sampled_from(sorted(s for s in STATES if s)),
        "msg": st.text(max_size=300),
        "title": st.text(max_size=100),
        "agent": st.text(max_size=30),
        "records": st.lists(st.dictionaries(st.text(max_size=8), json_value, max_size=4), max_size=5),
        "evidence": st.dictionaries(
            st.sampled_from(["records", "contract", "process", "screen", "native", "seen", "x", ""]),
            json_value,
            max_size=6,
        ),
    },
)
message = st.one_of(
    st.fixed_dictionaries(
        {
            "type": st.just("snapshot"),
            "seq": st.integers(1, 5),
            "t": st.just(1.7e9),
            "panes": st.lists(valid_pane, max_size=3),
        }
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("snapshot"),
            "seq": st.integers(-3, 2**40),
            "t": st.just(1.7e9),
            "panes": st.lists(pane_in, max_size=4),
        },
        optional={
            "hosts": st.dictionaries(
                text_or_junk.filter(lambda x: isinstance(x, str)), json_value, max_size=3
            )
        },
    ),
    st.fixed_dictionaries(
        {"type": st.just("delta"), "seq": st.integers(-3, 2**40), "ops": st.lists(op, max_size=4)}
    ),
    st.fixed_dictionaries({"type": st.sampled_from(["hello", "ack", "seen", "x"]), "stream": text_or_junk}),
    json_value,
)
valid_snapshot = st.fixed_dictionaries(
    {
        "type": st.just("snapshot"),
        "seq": st.integers(1, 5),
        "t": st.just(1.7e9),
        "panes": st.lists(valid_pane, max_size=3),
    }
).map(json.dumps)
frame = st.one_of(
    valid_snapshot, valid_snapshot, message.map(json.dumps), st.text(max_size=200), st.binary(max_size=200)
)


async def ingest_once(url: str, token: str, payload: str | bytes) -> int | None:
    """hello, then the hostile frame; returns the close code (None: still open and acked)."""
    ws = await websockets.connect(
        url.replace("http://", "ws://") + "/api/ingest",
        additional_headers={"Authorization": f"Bearer {token}"},
    )
    try:
        stream = os.urandom(8).hex()  # a new stream: the server wants a snapshot first
        await ws.send(json.dumps({"type": "hello", "protocol": 1, "stream": stream, "hosts": ["fuzz"]}))
        await asyncio.wait_for(ws.recv(), 10)
        await ws.send(payload)
        try:
            while True:
                m = json.loads(await asyncio.wait_for(ws.recv(), 2))
                if m.get("type") in ("ack", "resync"):
                    return None
        except TimeoutError:
            return None
    except websockets.ConnectionClosed as exc:
        return exc.rcvd.code if exc.rcvd else 1006
    finally:
        await ws.close()


def test_hostile_ingest_messages_never_break_the_server(hostile: Stack) -> None:
    codes: dict[int | None, int] = {}

    @FUZZ
    @given(payload=frame)
    def send(payload: str | bytes) -> None:
        with ThreadPoolExecutor(1) as pool:
            code = pool.submit(asyncio.run, ingest_once(hostile.url, hostile.second_token, payload)).result(
                60
            )
        codes[code] = codes.get(code, 0) + 1
        assert code != 1011, f"internal error on {payload!r:.300}\n{hostile.log('server')}"
        assert hostile.server.poll() is None, hostile.log("server")

    send()
    rows = check_stored(hostile)
    assert all(r["host"] in (HOST, "fuzz") or r["host"] for r in rows)
    assert httpx.get(hostile.url + "/healthz", timeout=10).status_code == 200
    print(f"\ningest close codes: {codes}")
    still_works(hostile, "after ingest fuzz")


def test_an_invalid_message_stores_none_of_its_valid_parts(hostile: Stack) -> None:
    # every field a pane object must carry (docs/wire.md), so the refusal is about `state`
    fields = {"session": "", "window": "", "agent": None, "kind": None, "msg": None, "source": None}
    fields |= {"observable": True, "t": 1.7e9}
    good = {"key": {"host": "partial", "tmux": "default", "pane": "%1"}, **fields, "state": "blocked"}
    bad = {"key": {"host": "partial", "tmux": "default", "pane": "%2"}, **fields, "state": "pwned"}
    msg = json.dumps({"type": "snapshot", "seq": 1, "t": 1.7e9, "panes": [good, bad]})
    with ThreadPoolExecutor(1) as pool:
        code = pool.submit(asyncio.run, ingest_once(hostile.url, hostile.second_token, msg)).result(60)
    assert code == 1007
    assert not [p for p in hostile.panes() if p["host"] == "partial"]
    # and a pane with a field missing is refused too, naming it
    missing = {k: v for k, v in good.items() if k != "session"}
    msg = json.dumps({"type": "snapshot", "seq": 1, "t": 1.7e9, "panes": [missing]})
    with ThreadPoolExecutor(1) as pool:
        assert (
            pool.submit(asyncio.run, ingest_once(hostile.url, hostile.second_token, msg)).result(60) == 1007
        )
    # the same message without the bad pane is stored: the refusal was about the bad part
    ok = json.dumps({"type": "snapshot", "seq": 1, "t": 1.7e9, "panes": [good]})
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(asyncio.run, ingest_once(hostile.url, hostile.second_token, ok)).result(60) is None
    wait_for(lambda: [p for p in hostile.panes() if p["host"] == "partial"], timeout=10, what="the good pane")


# -- HTTP: headers, cookies, bodies ------------------------------------------------------

header_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=200)
PATHS = [
    "/api/panes",
    "/api/panes/1",
    "/api/panes/1/events",
    "/api/panes/1/seen",
    "/api/login",
    "/api/logout",
    "/api/me",
    "/",
    "/login",
    "/metrics",
    "/api/stream",
    "/healthz",
    "/api/panes/x",
]


@pytest.mark.parametrize("seed", [0])
def test_hostile_http_headers_cookies_and_bodies_get_no_5xx(hostile: Stack, seed: int) -> None:
    before = check_stored(hostile)

    @FUZZ
    @given(
        method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH"]),
        path=st.sampled_from(PATHS),
        query=st.dictionaries(
            st.sampled_from(["token", "limit", "before", "last_event_id"]), header_text, max_size=2
        ),
        auth=st.one_of(
            st.none(),
            header_text,
            st.just(f"Bearer {hostile.viewer_token}"),
            header_text.map("Bearer ".__add__),
        ),
        cookies=st.dictionaries(st.sampled_from(["pb_session", "pb_csrf", "x"]), header_text, max_size=3),
        extra=st.dictionaries(
            st.sampled_from(
                ["X-CSRF-Token", "Origin", "Last-Event-ID", "Content-Type", "Content-Length", "Host"]
            ),
            header_text,
            max_size=3,
        ),
        body=st.one_of(
            st.binary(max_size=2000), json_value.map(lambda v: json.dumps(v).encode()), st.just(b"{" * 70000)
        ),
    )
    def hit(method, path, query, auth, cookies, extra, body) -> None:
        headers = dict(extra)
        if auth is not None:
            headers["Authorization"] = auth
        if cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        try:
            with (
                httpx.Client(base_url=hostile.url, timeout=10) as c,
                c.stream(
                    method, path, params=query, headers=headers, content=body if method != "GET" else None
                ) as r,
            ):
                status = r.status_code
                if "text/event-stream" not in r.headers.get("content-type", ""):
                    r.read()
        except (httpx.RemoteProtocolError, httpx.LocalProtocolError, h11.LocalProtocolError):
            # refused at the protocol level: a bad Host, or a body over max_body_bytes
            # answered with 413 before it was all sent (the client then trips on it)
            assert httpx.get(hostile.url + "/healthz", timeout=10).status_code == 200
            return
        assert status < 500, (method, path, headers, body[:200])

    hit()
    after = check_stored(hostile)
    assert [(p["id"], p["rev"]) for p in after] == [(p["id"], p["rev"]) for p in before]  # nothing changed


@pytest.mark.parametrize(
    "head, body",
    [
        ("Content-Length: 10", b"{}"),  # promises more than it sends, then hangs up
        ("Content-Length: -1", b"{}"),
        ("Content-Length: 99999999999999999999", b"{}"),
        ("Content-Length: 12abc", b"{}"),
        ("Transfer-Encoding: chunked", b"ffffffff\r\n{}"),
        ("Content-Length: 2\r\nContent-Length: 3", b"{}x"),
    ],
)
def test_lying_request_framing_gets_a_4xx_or_a_close(hostile: Stack, head: str, body: bytes) -> None:
    """What an HTTP client library refuses to send, sent over a raw socket."""
    import socket

    with socket.create_connection(("127.0.0.1", hostile.port), timeout=10) as sock:
        req = (
            f"POST /api/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{head}\r\n\r\n"
        )
        sock.sendall(req.encode() + body)
        sock.shutdown(socket.SHUT_WR)
        reply = b""
        with contextlib.suppress(TimeoutError, ConnectionResetError):
            while chunk := sock.recv(65536):
                reply += chunk
    status = reply.split(b" ", 2)[1] if reply.startswith(b"HTTP/1.1 ") else b""
    assert not status.startswith(b"5"), reply[:300]
    assert hostile.server.poll() is None
    assert httpx.get(hostile.url + "/healthz", timeout=10).status_code == 200


@pytest.mark.parametrize("ctype", [None, "application/json", "text/plain"])
@pytest.mark.parametrize("body", [b"\x80", b'{"name": "\xff", "password": 1}', b"\xc3"])
def test_a_body_that_is_not_utf8_gets_4xx_not_500(hostile: Stack, body: bytes, ctype: str | None) -> None:
    """Found by the fuzz above: without a JSON content type FastAPI's default handler
    echoed such a body in its 422 and died on it (500)."""
    headers = {"Content-Type": ctype} if ctype else {}
    r = httpx.post(hostile.url + "/api/login", content=body, headers=headers)
    assert r.status_code in (400, 422), r.text
    assert "detail" in r.json()


def test_schemathesis_against_the_openapi_gets_no_5xx(hostile: Stack) -> None:
    import schemathesis
    from schemathesis.checks import not_a_server_error

    schema = schemathesis.openapi.from_url(hostile.url + "/openapi.json")
    auth = {"Authorization": f"Bearer {hostile.viewer_token}"}
    ran = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.path == "/api/stream":
            continue  # an endless stream; its parameters are fuzzed in the header test above

        @settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy())
        def run(case) -> None:
            for headers in (auth, {}):
                resp = case.call(base_url=hostile.url, headers=headers, timeout=10)
                case.validate_response(resp, checks=[not_a_server_error])

        run()
        ran += 1
    assert ran >= 5
    check_stored(hostile)
    assert hostile.server.poll() is None
