"""Every outcome the wire carries has its sentence where people read it: the outcome
line of the page and the cards (web/js/screenwatch.js `OUTCOME_WORDS`) and the
follow-up notification (web/sw.js `WHY`, every outcome but `typed`). A new outcome
without one shows raw."""

from __future__ import annotations

import re
from pathlib import Path

from paneboard_protocol.wire import OUTCOMES

WEB = Path(__file__).resolve().parents[2] / "web"


def _keys(source: str, table: str) -> set[str]:
    body = re.search(table + r" = \{(.*?)\n\};", source, re.S)
    assert body is not None, table
    return set(re.findall(r'^\s+"?([a-z-]+)"?:', body.group(1), re.M))


def test_every_outcome_has_a_sentence() -> None:
    assert set(OUTCOMES) <= _keys((WEB / "js" / "screenwatch.js").read_text(), "export const OUTCOME_WORDS")
    assert set(OUTCOMES) - {"typed"} <= _keys((WEB / "sw.js").read_text(), "const WHY")
