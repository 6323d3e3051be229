"""Every relative link in README.md and docs/*.md reaches an existing file and anchor."""

from __future__ import annotations

from pathlib import Path

import pytest
from doc_links import anchors, broken_links, broken_names, links, named_pages, slug

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# The docs cite the repository only: nothing is named as living outside it.
OUTSIDE: frozenset[str] = frozenset()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    assert broken_links(page) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_pages_named_in_prose_exist(page: Path) -> None:
    """A page mentioned as `name.md` without a link must exist too (a reader goes looking)."""
    assert broken_names(page, ROOT, OUTSIDE) == []


def test_named_pages_are_found(tmp_path: Path) -> None:
    text = "see `protocols.md` section 1a, docs/wire.md#hello, [x](y.md), https://h.test/z.md, `a<b>.md`"
    assert named_pages(text) == [("protocols.md", ""), ("docs/wire.md", "hello")]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "wire.md").write_text("# Hello\n")
    page = tmp_path / "docs" / "page.md"
    page.write_text(text)
    assert broken_names(page, tmp_path) == ["page.md: names protocols.md, which is not in the repository"]


def test_github_heading_anchors() -> None:
    assert slug("OSC 7501, the Program Status Protocol") == "osc-7501-the-program-status-protocol"
    assert (
        slug("Agent status: `THINKTERM_AGENT`, screen rules") == "agent-status-thinkterm_agent-screen-rules"
    )
    assert slug("A real deployment, by hand") == "a-real-deployment-by-hand"
    text = '# Usage\n\n## Usage\n\n```sh\n# not a heading\n```\n<a id="TA-7"></a>'
    assert anchors(text) == {"usage", "usage-1", "TA-7"}


def test_links_in_code_are_not_links() -> None:
    text = "see [a](a.md) and `[b](b.md)`\n\n```md\n[c](c.md)\n```\n[d](https://x.test/d)"
    assert links(text) == ["a.md", "https://x.test/d"]


def test_a_missing_page_or_anchor_is_reported(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text('# Title here\n<a id="RI-1"></a>\n')
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md) [ok](other.md#title-here) [ok](other.md#RI-1) [ok](#top)\n"
        "# Top\n[gone](missing.md) [bad](other.md#nope) [web](https://example.test/x.md)\n"
    )
    assert broken_links(page) == [
        "page.md: missing.md: no such file",
        "page.md: other.md#nope: no anchor #nope in other.md",
    ]
