"""Apprise's json:// channel against a real local HTTP receiver."""

from __future__ import annotations

import asyncio

import pytest
from paneboard_server.notify import apprise_send
from paneboard_server.notify_config import valid_url
from support.receiver import JsonReceiver


@pytest.fixture
def receiver():
    r = JsonReceiver().start()
    yield r
    r.stop()


def test_json_channel_delivers_title_body_and_type(receiver):
    ok = asyncio.run(apprise_send.send(receiver.url, "claude blocked", "Apply?\nbuild-1 · s:0", "blocked"))
    assert ok
    [body] = receiver.wait_for(1)
    assert body["title"] == "claude blocked"
    assert body["message"].startswith("Apply?")
    assert body["type"] == "warning"


def test_unreachable_channel_reports_failure():
    assert asyncio.run(apprise_send.send("json://127.0.0.1:9/x", "t", "b")) is False


def test_unknown_scheme_is_invalid():
    assert valid_url("json://127.0.0.1:1/")
    assert not valid_url("nosuchscheme://x")
