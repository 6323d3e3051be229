"""The typed API: `/openapi.json` describes a pane (and every view a read route answers)
field by field, as its msgspec class says, and what the routes answer fits it.

The server answers views encoded as they are (no validation on the way out), so these
tests are what holds the answers to the document: a real app and database, panes put in
through the writer as a collector's reports are, a pane whose report went stale behind
ssh (`last_known`), a host gone unreachable; each answer is validated against the
document's own schema for its route and status.
"""

from __future__ import annotations

import asyncio
import json
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import httpx
import jsonschema_rs
import msgspec
from fastapi import FastAPI
from paneboard_protocol import pane as d
from paneboard_protocol.contract import MAX_AGE
from paneboard_protocol.pane import PaneKey
from paneboard_protocol.views import LastKnown, PaneDetail, PaneView, StreamChange, StreamSnapshot
from paneboard_protocol.wire import AnswerChoice, Screen
from paneboard_server.api.views import Block, Blocks, HistoryEvent, HostView, Me, PaneEvents
from paneboard_server.app import create_app
from paneboard_server.config import Config
from paneboard_server.panes.core import HostsDown, Ingest
from paneboard_server.panes.model import Host, Pane
from paneboard_server.services import services_of
from paneboard_server.store.database import resolve_url
from pbserver import make_tokens, wait_until
from support.reports import pane_report
from test_server_staleness import T0, Clock, evidence_for, ingest

PASSWORD = "correct horse battery"
_JSON = {str: "string", int: "integer", float: "number", bool: "boolean"}


def expected(annotation: Any) -> set[str]:
    """What a field's schema must allow, read from its annotation alone: JSON type names,
    `enum:a,b` for a Literal, `ref:Name` for a nested view."""
    while hasattr(annotation, "__metadata__"):  # Annotated[...]
        annotation = get_args(annotation)[0]
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        return set().union(*(expected(a) for a in get_args(annotation)))
    if annotation is type(None):
        return {"null"}
    if origin is Literal:
        return {"enum:" + ",".join(sorted(get_args(annotation)))}
    if origin in (list, tuple):
        return {"array"}
    if origin is dict:
        return {"object"}
    if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct):
        return {"ref:" + annotation.__name__}
    return {_JSON[annotation]}


def described(schema: dict[str, Any]) -> set[str]:
    """The same, read from a property's schema in the document."""
    if "anyOf" in schema:
        return set().union(*(described(s) for s in schema["anyOf"]))
    if "$ref" in schema:
        return {"ref:" + schema["$ref"].rsplit("/", 1)[1]}
    if "enum" in schema:
        return {"enum:" + ",".join(sorted(schema["enum"]))}
    return {schema["type"]}


VIEWS = (PaneView, PaneDetail, LastKnown, HostView, HistoryEvent, PaneEvents, Block, Me)


def test_openapi_describes_a_pane_field_by_field(db_url: str) -> None:
    async def go() -> dict[str, Any]:
        app = create_app(Config(), resolve_url(db_url))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
            return (await c.get("/openapi.json")).json()

    doc = asyncio.run(go())
    schemas = doc["components"]["schemas"]
    for view in VIEWS:
        got = schemas[view.__name__]
        names = [f.name for f in msgspec.structs.fields(view)]
        required = [f.name for f in msgspec.structs.fields(view) if f.required]
        assert list(got["properties"]) == names and got["required"] == required, view
        hints = get_type_hints(view, include_extras=True)
        for name in names:
            assert described(got["properties"][name]) == expected(hints[name]), (view, name)
    pane = schemas["PaneView"]["properties"]
    # the pane definition's limits reach the document
    assert {"type": "string", "maxLength": d.TEXT_MAX} in pane["msg"]["anyOf"]
    assert pane["records"]["maxItems"] == d.RECORDS_MAX
    assert {"enum": sorted(d.STATES)} in pane["state"]["anyOf"]
    ops = doc["paths"]

    def ok(path: str, method: str = "get") -> dict[str, Any]:
        answer = ops[path][method]["responses"]["200"]["content"]
        assert list(answer) == ["application/json"], path
        schema: dict[str, Any] = answer["application/json"]["schema"]
        return schema

    ref = "#/components/schemas/"
    assert ok("/api/panes") == {"type": "array", "items": {"$ref": ref + "PaneView"}}
    assert ok("/api/panes/{pane_id}") == {"$ref": ref + "PaneDetail"}  # the view and its `why`
    assert ok("/api/hosts") == {"type": "array", "items": {"$ref": ref + "HostView"}}
    assert ok("/api/panes/{pane_id}/events") == {"$ref": ref + "PaneEvents"}
    assert ok("/api/panes/{pane_id}/seen", "post") == {"$ref": ref + "SeenAnswer"}
    blocks = ops["/api/blocks"]["get"]["responses"]["200"]["content"]
    assert blocks["application/json"]["schema"] == {"$ref": ref + "Blocks"}
    assert list(schemas["Blocks"]["properties"]) == [
        "from",
        "to",
        "now",
        "blocks",
    ]  # `from`: a keyword in Python
    assert [f.encode_name for f in msgspec.structs.fields(Blocks)] == ["from", "to", "now", "blocks"]
    # the stream's events: each event's data is one of the stream's views
    data = ops["/api/stream"]["get"]["responses"]["200"]["content"]["text/event-stream"]["schema"]
    shapes = data["properties"]["data"]["contentSchema"]["anyOf"]
    assert shapes == [{"$ref": ref + v} for v in ("StreamSnapshot", "StreamChange", "StreamEnd")]
    assert list(schemas["StreamChange"]["properties"]) == [
        f.name for f in msgspec.structs.fields(StreamChange)
    ]


def _validator(doc: dict[str, Any], schema: dict[str, Any]) -> Any:
    """A validator of `schema`, its `$ref`s resolved in the document's components."""
    return jsonschema_rs.Draft202012Validator({**schema, "components": doc["components"]})


def _fits(doc: dict[str, Any], r: httpx.Response, path: str, method: str = "get") -> Any:
    assert r.status_code == 200, (path, r.text)
    schema = doc["paths"][path][method]["responses"]["200"]["content"]["application/json"]["schema"]
    body = r.json()
    _validator(doc, schema).validate(body)
    # The bytes are compact JSON, UTF-8 unescaped, keys in the view's order: what the
    # page and clients got before the answers were typed (pydantic's and orjson's).
    assert r.content == json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode(), path
    assert r.headers["content-type"] == "application/json"
    return body


def test_every_typed_answer_fits_its_documented_schema(db_url: str) -> None:
    clock = Clock(T0)

    async def go() -> None:
        await make_tokens(db_url, viewer_password=PASSWORD)
        app = create_app(Config(), resolve_url(db_url), clock=clock)
        async with app.router.lifespan_context(app):
            core = services_of(app).core
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
                doc = (await c.get("/openapi.json")).json()
                # a pane whose report will go stale where it cannot be seen: last_known
                ev, cls = evidence_for("blocked", observable=False, ts=int(T0))
                far = await ingest(core, "%1", ev, cls)
                done = asyncio.get_running_loop().create_future()
                record = {
                    "id": "r1",
                    "state": "done",
                    "app": "clàude ✓",
                    "updated": T0,
                    "n": 2**62,
                    "deep": [[{}]],
                }
                near = pane_report(
                    "%2", "blocked", host="near", t=T0, kind="question", msg="Proceed? — sí", agent="claude",
                    source="protocol", title="✳ Claude", progress=40, since=T0 - 3.5, process="claude",
                    records=(record,),
                )  # fmt: skip
                core.submit(Ingest(1, "s", 2, panes=[near], on_commit=lambda: done.set_result(None)))
                await asyncio.wait_for(done, 10)
                clock.t = T0 + MAX_AGE + 2  # past the report's ts: it goes stale
                core.deadlines.poke()
                await wait_until(lambda: core.panes[far].last_known is not None, what="staleness expiry")
                login = (await c.post("/api/login", json={"name": "ana", "password": PASSWORD})).json()
                me = _fits(doc, await c.get("/api/me"), "/api/me")
                assert (me["name"], me["kind"], me["csrf"]) == ("ana", "viewer", login["csrf"])
                panes = _fits(doc, await c.get("/api/panes"), "/api/panes")
                assert [p["id"] for p in panes] == sorted(p.id for p in core.panes.values())
                assert [list(p) for p in panes] == [[f.name for f in msgspec.structs.fields(PaneView)]] * 2
                by_pane = {p["pane"]: p for p in panes}
                assert by_pane["%1"]["last_known"]["state"] == "blocked" and by_pane["%1"]["state"] is None
                assert by_pane["%2"]["records"] == [record] and by_pane["%2"]["msg"] == "Proceed? — sí"
                nid = by_pane["%2"]["id"]
                one = _fits(doc, await c.get(f"/api/panes/{nid}"), "/api/panes/{pane_id}")
                # one pane is its view and what decided its state (none: no evidence here)
                assert one.pop("why") is None and one == by_pane["%2"]
                events = _fits(doc, await c.get(f"/api/panes/{far}/events"), "/api/panes/{pane_id}/events")
                assert events["pane_id"] == far and events["events"][0]["reason"] == "stale"
                headers = {"X-CSRF-Token": login["csrf"]}
                seen = await c.post(f"/api/panes/{nid}/seen", headers=headers)
                assert _fits(doc, seen, "/api/panes/{pane_id}/seen", "post")["pane"]["id"] == nid
                done = asyncio.get_running_loop().create_future()
                core.submit(HostsDown(1, on_commit=lambda: done.set_result(None)))
                await asyncio.wait_for(done, 10)
                hosts = _fits(doc, await c.get("/api/hosts"), "/api/hosts")
                assert {h["name"] for h in hosts} == {"far", "near"} and not any(
                    h["reachable"] for h in hosts
                )
                assert all(h["error"] and h["unreachable_since"] == clock.t for h in hosts)
                waits = _fits(doc, await c.get("/api/blocks"), "/api/blocks")["blocks"]
                assert sorted(b["pane"] for b in waits) == ["%1", "%2"]  # both were blocked
                stale = _fits(doc, await c.get("/api/panes"), "/api/panes")
                assert all(p["stale"] and p["unreachable_since"] == clock.t for p in stale)
                await _the_other_answers_fit(doc, c, app, nid, headers)
            # The stream's first event carries a snapshot the document describes.
            frame = services_of(app).snapshots.frames()[0]
            data = json.loads(frame.split(b"data: ", 1)[1])
            _validator(doc, {"$ref": "#/components/schemas/StreamSnapshot"}).validate(data)
            assert data["panes"] == stale

    asyncio.run(go())


async def _the_other_answers_fit(
    doc: dict[str, Any], c: httpx.AsyncClient, app: Any, nid: int, headers: dict[str, str]
) -> None:
    """The screen, answer, stats and notification routes answer what the document says."""
    svc = services_of(app)
    path = "/api/panes/{pane_id}/screen"
    # no screen yet (no collector): the short shape
    bare = _fits(doc, await c.get(f"/api/panes/{nid}/screen"), path)
    assert bare["online"] is False and "width" not in bare and bare["operator"] is False
    offers = _fits(doc, await c.get("/api/offers", params={"pane": [nid, 999]}), "/api/offers")
    assert [o["pane_id"] for o in offers["offers"]] == [nid] and offers["offers"][0]["why"]
    key = PaneKey("near", "default", "%2")
    shown = Screen(key, T0, ["\x1b[1mProceed?\x1b[0m", "1. Yes"], 80, 2, [0, 1], "a" * 64, state="blocked",
                   prompt="Proceed?", answers=[AnswerChoice("yes", "Yes")], process="42")  # fmt: skip
    svc.screens.store(nid, shown)
    full = _fits(doc, await c.get(f"/api/panes/{nid}/screen"), path)
    assert (
        full["answers"] == [{"id": "yes", "label": "Yes"}] and full["rev"] == 1 and full["cursor"] == [0, 1]
    )
    # a login without the operator role is refused, and the refusal audited
    body = {"fingerprint": "a" * 64, "answer": "yes"}
    assert (await c.post(f"/api/panes/{nid}/answer", json=body, headers=headers)).status_code == 403
    audit = _fits(doc, await c.get(f"/api/panes/{nid}/answers"), "/api/panes/{pane_id}/answers")
    assert [a["outcome"] for a in audit["answers"]] == ["forbidden"]
    stats = _fits(doc, await c.get("/api/stats", params={"from": T0 - 60}), "/api/stats")
    assert stats["totals"]["count"] == 2 and stats["options"]["hosts"] == ["far", "near"]
    _fits(doc, await c.get("/api/push/vapid-public-key"), "/api/push/vapid-public-key")
    assert _fits(doc, await c.get("/api/push/devices"), "/api/push/devices") == {"devices": []}
    mute = {"scope": "host", "value": "far", "minutes": 5}
    added = _fits(
        doc, await c.post("/api/notify/mutes", json=mute, headers=headers), "/api/notify/mutes", "post"
    )
    quiet = _fits(doc, await c.get("/api/notify/quiet"), "/api/notify/quiet")
    assert [m["id"] for m in quiet["mutes"]] == [added["id"]]
    tested = _fits(doc, await c.post("/api/notify/test", headers=headers), "/api/notify/test", "post")
    assert tested == {"sent": 0, "failed": 0, "push": 0, "devices": []}
    _fits(doc, await c.get("/api/notify/log"), "/api/notify/log")
    assert _fits(doc, await c.post("/api/logout", headers=headers), "/api/logout", "post") == {"ok": True}


def _free_form(doc: dict[str, Any], schema: dict[str, Any]) -> bool:
    """Is this answer's schema an object whose fields the document does not name?"""
    while "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    if "anyOf" in schema or "oneOf" in schema:
        return any(_free_form(doc, s) for s in schema.get("anyOf", schema.get("oneOf")))
    if schema.get("type") == "array":
        return _free_form(doc, schema.get("items", {}))
    if schema.get("type") in ("string", "integer", "number", "boolean", "null"):
        return False
    return not schema.get("properties")  # `{}`, or an object of anything


def _free_form_answers(doc: dict[str, Any]) -> list[str]:
    return [
        f"{method.upper()} {path} {code}"
        for path, ops in doc["paths"].items()
        if path.startswith("/api/")
        for method, op in ops.items()
        for code, r in op["responses"].items()
        if "application/json" in r.get("content", {})
        and _free_form(doc, r["content"]["application/json"].get("schema", {}))
    ]


def test_no_api_route_answers_a_free_form_object(tmp_path: Path) -> None:
    """Every JSON answer of every /api route is described field by field: a route that
    returns a plain dict (FastAPI's `additionalProperties: true`) fails here."""
    doc = create_app(Config(), f"sqlite:///{tmp_path / 'unused.db'}").openapi()
    assert _free_form_answers(doc) == []
    # the check sees what a route answering a dict looks like in a document
    loose = FastAPI()

    @loose.get("/api/loose")
    async def loose_route() -> dict[str, Any]:
        return {}

    assert _free_form_answers(loose.openapi()) == ["GET /api/loose 200"]


def test_a_view_that_breaks_its_schema_is_caught(tmp_path: Path) -> None:
    """The validation above can fail: an answer with a field its schema forbids, or
    without one it requires, is refused."""
    doc = create_app(Config(), f"sqlite:///{tmp_path / 'unused.db'}").openapi()
    pane = Pane.heard_of(1, 2, "default", "%1", state="done", rev=3).view(Host(2, 1, "h"))
    for view in (pane, StreamSnapshot(3, [pane])):
        good = json.loads(msgspec.json.encode(view))
        check = _validator(doc, {"$ref": f"#/components/schemas/{type(view).__name__}"})
        check.validate(good)
        assert not check.is_valid({**good, "rev": "3"})
        assert not check.is_valid({k: v for k, v in good.items() if k != "rev"})
    good = json.loads(msgspec.json.encode(pane))
    check = _validator(doc, {"$ref": "#/components/schemas/PaneView"})
    assert not check.is_valid({**good, "state": "asleep"})
    assert not check.is_valid({**good, "msg": "x" * (d.TEXT_MAX + 1)})
    assert not check.is_valid({**good, "last_known": {"state": "done"}})
