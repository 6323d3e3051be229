"""The stats page (web/stats.html, plots drawn as SVG by web/js/plots.js) in a real
Chromium against a real server: a seeded sample week plus a block made for real in
tmux; the plots are present and labelled, the filters ask the API again, and nothing
overflows at phone width."""

from __future__ import annotations

import asyncio
import csv
import io
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from .conftest import login
from .test_board_browser import new_pane, wait_card_state

pytestmark = [pytest.mark.browser, pytest.mark.tmux]

OVERFLOW = "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"


def seed(board) -> int:
    from paneboard_server.ledger.seed import seed_sample
    from paneboard_server.store.database import create_engine, resolve_url

    async def go() -> int:
        engine = create_engine(resolve_url(str(board.db)))
        try:
            return await seed_sample(engine, time.time())
        finally:
            await engine.dispose()

    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API holds this thread's loop
        return pool.submit(asyncio.run, go()).result(60)


@pytest.fixture(scope="module")
def seeded(board):
    assert seed(board) > 100
    return board


def open_stats(page, pb, query: str = "") -> None:
    login(page, pb)
    page.goto(pb.url + "/stats.html" + query)
    page.wait_for_selector("html[data-ready='1']")


def texts(page, selector: str) -> list[str]:
    return page.eval_on_selector_all(selector, "els => els.map(e => e.textContent)")


def test_plots_are_drawn_labelled_and_filterable(page, seeded):
    board = seeded
    pane, pid = new_pane(board)
    board.report(pane, state="blocked", kind="permission", msg="Allow the real block?")
    board.wait_state("blocked", pane)
    board.report(pane, state="working")
    row = board.wait_state("working", pane)
    host, agent = row["host"], row["agent"]

    open_stats(page, board)
    days = page.locator("#p-days svg.plot")
    assert "per day" in days.get_attribute("aria-label")
    assert page.locator("#p-days svg rect.bar").count() >= 7  # a week of stacked bars
    assert page.locator("#p-days svg rect.bar title").first.text_content().count("·") == 1
    axis = texts(page, "#p-days svg text.axis")
    assert any(t.endswith(("min", "h")) for t in axis) and any("-" in t for t in axis)  # durations, dates
    assert set(texts(page, "#p-days .legend li")) >= {"claude", "codex", "gemini", "aider"}
    tta = texts(page, "#p-tta svg text.row-figures")
    assert tta and all(re.fullmatch(r"p50 .+ · p90 .+ · max .+", t) for t in tta), tta
    assert page.locator("#p-tta svg circle.maxdot").count() == len(tta)
    assert all(" answered" in t for t in texts(page, "#p-tta svg text.row-label"))
    assert any("sample-" in t for t in texts(page, "#p-panes svg text.row-label"))
    assert all(re.fullmatch(r"\d.* · \d+×", t) for t in texts(page, "#p-panes svg text.row-value"))
    assert any("Allow edit of" in t for t in texts(page, "#p-prompts svg text.row-label"))
    assert "waits" in page.locator("#s-totals").inner_text()

    # Per host instead of per agent: the legend follows; per kind for the answers.
    loaded = page.evaluate("document.documentElement.dataset.loaded")
    page.select_option("#s-by", "host")
    page.wait_for_function("n => document.documentElement.dataset.loaded !== n", arg=loaded)
    assert host in texts(page, "#p-days .legend li")
    page.select_option("#s-tta", "kind")
    assert {t.split(" ·")[0] for t in texts(page, "#p-tta svg text.row-label")} >= {"permission", "question"}

    # Only the real host (the collector's): one wait, the real one, and the address bar keeps the filter.
    loaded = page.evaluate("document.documentElement.dataset.loaded")
    page.select_option("#s-host", host)
    page.wait_for_function("n => document.documentElement.dataset.loaded !== n", arg=loaded)
    assert page.locator("#s-totals").inner_text().startswith("1 waits")
    assert f"host={host}" in page.url
    label = f"{host} {pane}" + (f" · {agent}" if agent else "") + " · work"
    assert [t.split(" — ")[0] for t in texts(page, "#p-panes svg text.row-label title")] == [label]
    href = page.get_attribute("#s-csv", "href")
    assert "format=csv" in href and f"host={host}" in href
    body = page.evaluate("url => fetch(url).then(r => r.text())", href)
    rows = list(csv.DictReader(io.StringIO(body)))
    assert [(r["pane"], r["msg"], r["ended"]) for r in rows] == [(pane, "Allow the real block?", "answered")]

    # The board links here.
    page.goto(board.url + "/")
    page.wait_for_selector("html[data-ready='1']")
    wait_card_state(page, pid, "working")
    assert page.get_attribute("#stats-link", "href") == "/stats.html"


def test_stats_page_fits_a_phone(browser, seeded, tmp_path):
    """Screenshots go to tmp_path (or $PANEBOARD_SCREENSHOTS, to keep them for a look)."""
    if os.environ.get("PANEBOARD_SCREENSHOTS"):
        tmp_path = Path(os.environ["PANEBOARD_SCREENSHOTS"])
        tmp_path.mkdir(parents=True, exist_ok=True)
    phone = browser.new_context(
        viewport={"width": 360, "height": 740}, device_scale_factor=2, is_mobile=True, has_touch=True
    )
    try:
        p = phone.new_page()
        open_stats(p, seeded, "?range=7&tta=kind")
        assert p.locator("#s-tta").input_value() == "kind"  # the address bar's filters are applied
        p.screenshot(path=str(tmp_path / "phone-stats.png"), full_page=True)
        sw, cw = p.evaluate(OVERFLOW)
        assert sw <= cw, f"phone stats page overflows: {sw} > {cw}"
        widths = p.eval_on_selector_all("svg.plot", "els => els.map(e => e.getBoundingClientRect().right)")
        assert len(widths) == 4 and max(widths) <= cw, (widths, cw)
        sizes = p.eval_on_selector_all(
            "svg.plot text", "els => els.map(e => parseFloat(getComputedStyle(e).fontSize))"
        )
        assert min(sizes) >= 11  # drawn at the phone's width: the text is not scaled down
        # Labels of the bars stay inside their plot (long prompts are cut, with an ellipsis).
        inside = p.eval_on_selector_all(
            "svg.plot text.row-label, svg.plot text.row-figures, svg.plot text.row-value",
            "els => els.every(e => e.getBoundingClientRect().right"
            " <= e.ownerSVGElement.getBoundingClientRect().right + 1)",
        )
        assert inside
    finally:
        phone.close()
    print(f"screenshots in {tmp_path}")
