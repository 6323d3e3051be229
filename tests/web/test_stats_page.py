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
from support.wait import wait_for

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


def phone_context(browser, width: int = 390, height: int = 844):
    """A phone: touch, a small viewport, twice the pixels."""
    return browser.new_context(
        viewport={"width": width, "height": height}, device_scale_factor=2, is_mobile=True, has_touch=True
    )


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
    assert any("sample-" in t for t in texts(page, "#p-panes .rank-label"))
    assert all(re.fullmatch(r"\d.* · \d+×", t) for t in texts(page, "#p-panes .rank-value"))
    assert any("Allow edit of" in t for t in texts(page, "#p-prompts .rank-label"))
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
    assert texts(page, "#p-panes .rank-label") == [label]
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
    phone = phone_context(browser, 360, 740)
    try:
        p = phone.new_page()
        open_stats(p, seeded, "?range=7&tta=kind")
        assert p.locator("#s-tta").input_value() == "kind"  # the address bar's filters are applied
        p.screenshot(path=str(tmp_path / "phone-stats.png"), full_page=True)
        sw, cw = p.evaluate(OVERFLOW)
        assert sw <= cw, f"phone stats page overflows: {sw} > {cw}"
        widths = p.eval_on_selector_all("svg.plot", "els => els.map(e => e.getBoundingClientRect().right)")
        assert len(widths) == 2 and max(widths) <= cw, (widths, cw)
        sizes = p.eval_on_selector_all(
            "svg.plot text", "els => els.map(e => parseFloat(getComputedStyle(e).fontSize))"
        )
        assert min(sizes) >= 11  # drawn at the phone's width: the text is not scaled down
        # Labels stay inside their plot (long ones are cut, with an ellipsis; a tap shows all).
        inside = p.eval_on_selector_all(
            "svg.plot text.row-label, svg.plot text.row-figures, svg.plot text.row-value",
            "els => els.every(e => e.getBoundingClientRect().right"
            " <= e.ownerSVGElement.getBoundingClientRect().right + 1)",
        )
        assert inside
        rows = p.eval_on_selector_all(
            ".rank summary", "els => els.every(e => e.getBoundingClientRect().right <= innerWidth)"
        )
        assert rows
    finally:
        phone.close()
    print(f"screenshots in {tmp_path}")


LONG_HOST = "long-prompts"
LONG_PROMPT = (
    'Allow the migration script <img src=x onerror="window.__xss=1"> to rewrite every row of the '
    "orders table & drop the old index (it takes about twenty minutes and cannot be undone)?"
)


def add_waits(board, rows: list[dict]) -> None:
    """Intervals written straight into the ledger (as the seed does), for one host."""
    from paneboard_server.store import schema as s
    from paneboard_server.store.database import create_engine, resolve_url
    from sqlalchemy import insert

    async def go() -> None:
        engine = create_engine(resolve_url(str(board.db)))
        try:
            async with engine.begin() as conn:
                await conn.execute(insert(s.waits), rows)
        finally:
            await engine.dispose()

    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, go()).result(60)


@pytest.fixture(scope="module")
def long_prompts(seeded):
    now = time.time()
    base = {"pane_id": None, "host": LONG_HOST, "tmux": "default", "pane": "%90", "session": "long",
            "agent": "claude", "state": "blocked", "kind": "permission", "end_state": "working"}  # fmt: skip
    ends = ["answered", "answered", "cancelled", "gone"]
    rows = [
        {
            **base,
            "msg": LONG_PROMPT,
            "start_t": now - 7200 + 600 * i,
            "end_t": now - 7100 + 600 * i,
            "ended": e,
        }
        for i, e in enumerate(ends)
    ]
    rows.append({**base, "msg": LONG_PROMPT, "start_t": now - 300, "end_t": None, "ended": None})
    rows[-1]["end_state"] = None
    add_waits(seeded, rows)
    return seeded


def colour_table(page) -> dict[str, dict[str, set[str]]]:
    """name -> {where: computed colours} for the daily stacks, their legend and the
    time-to-answer bars."""
    return page.evaluate(
        """() => {
      const out = {};
      const add = (name, where, c) => ((out[name] ??= {})[where] ??= new Set()).add(c);
      for (const r of document.querySelectorAll('#p-days rect.bar'))
        add(r.dataset.name, 'days', getComputedStyle(r).fill);
      for (const li of document.querySelectorAll('#p-days .legend li'))
        add(li.dataset.name, 'legend', getComputedStyle(li.querySelector('.swatch')).backgroundColor);
      for (const r of document.querySelectorAll('#p-tta rect.bar'))
        add(r.dataset.name, 'tta', getComputedStyle(r).fill);
      return Object.fromEntries(Object.entries(out).map(([n, w]) =>
        [n, Object.fromEntries(Object.entries(w).map(([k, v]) => [k, [...v]]))]));
    }"""
    )


def reload_with(page, sel: str, value: str) -> None:
    loaded = page.evaluate("document.documentElement.dataset.loaded")
    page.select_option(sel, value)
    page.wait_for_function("n => document.documentElement.dataset.loaded !== n", arg=loaded)


def test_one_colour_per_agent_and_host_on_every_plot_and_neutral_ranks(page, seeded):
    """Issue 24 item 7: an agent had one colour in the daily stacks and another in the
    time-to-answer plot (both were coloured by position), and rank bars were coloured
    by rank, which meant nothing."""
    open_stats(page, seeded)
    for by in ("agent", "host"):
        if by == "host":
            reload_with(page, "#s-by", "host")
            page.select_option("#s-tta", "host")
        table = colour_table(page)
        names = [n for n in table if n != "other"]
        assert len(names) >= 3, table
        seen: dict[str, str] = {}
        for name in names:
            where = table[name]
            assert {"days", "legend", "tta"} <= set(where), (name, where)
            cs = {c for v in where.values() for c in v}
            assert len(cs) == 1, f"{by} {name} has colours {where}"
            seen[name] = cs.pop()
        assert len(set(seen.values())) == len(seen), f"two {by}s share a colour: {seen}"
        ranks = page.eval_on_selector_all(
            ".rank-bar span", "els => [...new Set(els.map(e => getComputedStyle(e).backgroundColor))]"
        )
        assert len(ranks) == 1 and ranks[0] not in seen.values(), (ranks, seen)
    # The colour stays with the name when the filters change what is shown.
    host = next(iter(seen))
    reload_with(page, "#s-host", host)
    assert {c for v in colour_table(page)[host].values() for c in v} == {seen[host]}


def test_totals_add_up_and_say_how_the_waits_ended(page, long_prompts):
    """Issue 24 item 7: the headline left out cancelled waits, so its parts did not make
    its total."""
    open_stats(page, long_prompts, f"?host={LONG_HOST}")
    box = page.locator("#s-totals")
    text = box.inner_text()
    parts = page.eval_on_selector_all(
        "#s-totals .part", "els => Object.fromEntries(els.map(e => [e.dataset.part, Number(e.dataset.n)]))"
    )
    assert parts == {"answered": 2, "cancelled": 1, "gone": 1, "open": 1}, (parts, text)
    assert text.startswith("5 waits,") and text.endswith("= 5."), text
    assert "2 answered + 1 cancelled + 1 pane closed + 1 still waiting = 5" in text, text
    # Over the seeded week too, with every host: the parts make the total.
    open_stats(page, long_prompts)
    parts = page.eval_on_selector_all("#s-totals .part", "els => els.map(e => Number(e.dataset.n))")
    assert sum(parts) == int(page.get_attribute("#s-totals", "data-total")) > 100


def test_whole_prompt_on_a_tap_on_a_phone_escaped(browser, long_prompts):
    """Issue 24 item 7: on a phone a prompt was cut to ~25 characters, the rest only in
    a hover tooltip a phone cannot show."""
    phone = phone_context(browser)
    try:
        p = phone.new_page()
        open_stats(p, long_prompts, f"?host={LONG_HOST}")
        row = p.locator("#p-prompts .rank details").first
        label = row.locator(".rank-label")
        assert label.evaluate("e => e.scrollWidth > e.clientWidth")  # cut on one line ...
        full = row.locator(".rank-full")
        assert not full.is_visible()
        row.locator("summary").tap()  # ... and whole after a tap
        full.wait_for(state="visible")
        assert full.inner_text() == LONG_PROMPT
        box, vw = full.bounding_box(), p.viewport_size["width"]
        assert box["x"] >= 0 and box["x"] + box["width"] <= vw
        # The prompt is text, never markup.
        assert p.locator("#stats img").count() == 0 and p.evaluate("window.__xss") is None
        assert "<img src=x" in label.text_content()
    finally:
        phone.close()


def test_an_opened_row_stays_open_when_the_phone_resizes(browser, long_prompts):
    """A phone fires "resize" when its address bar slides away on a scroll: the page
    redrew everything and the row just opened closed under the reader (seen as a
    flaky test: the opened prompt vanished between two looks). A height change no
    longer redraws; a width change redraws and keeps the row open."""
    phone = phone_context(browser)
    try:
        p = phone.new_page()
        open_stats(p, long_prompts, f"?host={LONG_HOST}")
        row = p.locator("#p-prompts .rank details").first
        row.locator("summary").tap()
        row.locator(".rank-full").wait_for(state="visible")
        p.evaluate("document.querySelector('#p-prompts .rank details').dataset.mark = 'opened'")
        p.set_viewport_size({"width": 390, "height": 700})  # the address bar went away
        p.wait_for_timeout(600)  # past the page's 150 ms redraw delay
        assert p.evaluate("document.querySelector('#p-prompts .rank details').dataset.mark") == "opened"
        p.set_viewport_size({"width": 430, "height": 700})  # turned, or another phone: redrawn
        mark = "document.querySelector('#p-prompts .rank details').dataset.mark"
        wait_for(lambda: p.evaluate(mark) is None, timeout=10, what="the redraw after the width changed")
        assert row.evaluate("e => e.open") and row.locator(".rank-full").is_visible()
    finally:
        phone.close()


# A select's width as shown, and as wide as its chosen option wants (not cut).
NATURAL_WIDTH = (
    "e => { const w = e.getBoundingClientRect().width; e.style.maxWidth = 'none';"
    " e.style.width = 'max-content'; const n = e.getBoundingClientRect().width;"
    " e.style.maxWidth = e.style.width = ''; return [w, n]; }"
)


def shots_dir(tmp_path: Path) -> Path:
    """$PANEBOARD_SCREENSHOTS keeps the screenshots (docs/img/stats-*.png come from here)."""
    d = Path(os.environ.get("PANEBOARD_SCREENSHOTS") or tmp_path)
    d.mkdir(parents=True, exist_ok=True)
    return d


def test_desktop_uses_the_width_with_readable_text_and_a_way_back(browser, seeded, tmp_path):
    """Issue 24 item 7: on a desktop the plots used half the width, the "Waiting" select
    was cut off, and the page had no link back to the board."""
    desk = browser.new_context(viewport={"width": 1600, "height": 1000})
    try:
        p = desk.new_page()
        open_stats(p, seeded)
        p.screenshot(path=str(shots_dir(tmp_path) / "stats-desktop.png"), full_page=True)
        widths = p.eval_on_selector_all("svg.plot", "els => els.map(e => e.getBoundingClientRect().width)")
        assert widths and min(widths) >= 0.9 * 1600 - 60, widths
        sizes = p.eval_on_selector_all(
            "svg.plot text, .rank-label, .rank-value",
            "els => els.map(e => parseFloat(getComputedStyle(e).fontSize))",
        )
        assert min(sizes) >= 13, sorted(set(sizes))
        # Every select shows its chosen option whole: as wide as it would be unbounded.
        for sel in ("#s-state", "#s-range", "#s-by"):
            cut = p.eval_on_selector(sel, NATURAL_WIDTH)
            assert cut[0] >= cut[1] - 0.5, (sel, cut)
        back = p.locator("#board-link")
        assert back.is_visible() and back.inner_text().strip() == "← Board"
        back.click()
        p.wait_for_url(seeded.url + "/")
    finally:
        desk.close()


def test_phone_select_not_cut_and_board_link(browser, seeded, tmp_path):
    phone = phone_context(browser)
    try:
        p = phone.new_page()
        open_stats(p, seeded)
        p.locator("#p-prompts summary").first.tap()  # one prompt opened, as a reader would
        p.screenshot(path=str(shots_dir(tmp_path) / "stats-phone.png"), full_page=True)
        w, n = p.eval_on_selector("#s-state", NATURAL_WIDTH)
        assert w >= n - 0.5, (w, n)
        assert p.locator("#board-link").is_visible()
        sw, cw = p.evaluate(OVERFLOW)
        assert sw <= cw
    finally:
        phone.close()
