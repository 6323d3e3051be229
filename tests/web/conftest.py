"""Fixtures for the dashboard's browser tests: one real paneboard (server, tmux,
collector) per module, one Chromium for the session, a logged-in page per test."""

from __future__ import annotations

import os

import pytest
from support.proctier import spawns
from support.receiver import JsonReceiver
from support.stack import CHROMIUM_ARGS, PASSWORD, USER, Paneboard
from support.tools import CHROMIUM, require_tool

os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")


def _need_browser() -> None:
    require_tool("chromium", "tmux")


@pytest.fixture(scope="module")
@spawns
def browser():
    """Per module: Playwright's sync API holds an event loop in this thread while it
    runs, which the asyncio-based tests in the other modules need free."""
    _need_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture(scope="module")
def receiver():
    r = JsonReceiver().start()
    yield r
    r.stop()


@pytest.fixture(scope="module")
@spawns
def board(tmp_path_factory, receiver):
    _need_browser()
    pb = Paneboard(
        tmp_path_factory.mktemp("pb"),
        notify={
            "subject": "mailto:test@example.org",
            "push_allow_local": True,  # the test push service listens on loopback
            "channels": [{"url": receiver.url, "states": ["blocked"]}],
        },
    )
    try:
        pb.start()
        yield pb
    finally:
        pb.close()


def login(page, pb: Paneboard) -> None:
    page.goto(pb.url + "/")
    if page.url.endswith("/login"):  # no session cookie in this context yet
        page.fill("#login-user", USER)
        page.fill("#login-pass", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(pb.url + "/")
    page.wait_for_selector("html[data-ready='1']")
    page.wait_for_selector("html[data-stream='live']")


@pytest.fixture
def context(browser, board):
    ctx = browser.new_context(base_url=board.url)
    ctx.grant_permissions(["notifications"], origin=board.url)
    yield ctx
    ctx.close()


RECORD_NOTIFICATIONS = """
(() => {
  const Real = window.Notification;
  window.__notes = [];
  window.__noteObjs = [];
  class Recording extends Real {
    constructor(title, opts) {
      super(title, opts);
      window.__notes.push({title, tag: opts && opts.tag, body: opts && opts.body, at: Date.now()});
      window.__noteObjs.push(this);
    }
  }
  Object.defineProperty(Recording, 'permission', {get: () => Real.permission});
  Recording.requestPermission = Real.requestPermission.bind(Real);
  window.Notification = Recording;
})();
"""


@pytest.fixture
def page(context, board):
    context.add_init_script(RECORD_NOTIFICATIONS)
    p = context.new_page()
    errors: list[str] = []
    p.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    p.on("console", lambda m: errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
    p.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
    p.on(
        "response",
        lambda r: errors.append(f"http {r.status} {r.request.method} {r.url}") if r.status >= 400 else None,
    )
    p.errors = errors  # type: ignore[attr-defined]
    p.watch_posts = []
    p.on("request", lambda r: r.url.endswith("/api/watch") and p.watch_posts.append(r.post_data))
    login(p, board)
    yield p
