"""Which text of a captured line is drawn highlighted: the selected choice of a menu
that shows its selection only in colour.

OpenCode's permission dialog draws "Allow once   Allow always   Reject" as the same
text whichever is selected; only the selected one sits on another background, and
Enter takes the selected one. Read as plain text, the screen cannot say what Enter
would do, so no answer could be offered safely. Here a line's runs are read from its
SGR escapes (`capture-pane -e`): text on a background other than the one under most
of the line, or in reverse video, is highlighted. A manifest answer can then be
offered only while its choice is the highlighted one (`selected` in
`rules/answers.py`), and a moved selection changes what is offered, hence the prompt's
fingerprint.

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections import Counter

_SGR = re.compile(r"\x1b\[([0-9;:]*)m")
#: colour parameters that take more: 38/48/58 then 5;n (palette) or 2;r;g;b (direct)
_EXTENDED = {"5": 2, "2": 4}

_Style = tuple[str | None, bool]  # (background, reverse video)


def _apply(params: str, style: _Style) -> _Style:
    """The style after one SGR sequence's parameters (only background and reverse)."""
    bg, reverse = style
    items = params.split(";") if params else ["0"]
    i = 0
    while i < len(items):
        item = items[i]
        if ":" in item:  # 48:5:n or 48:2::r:g:b, sub-parameters in one item
            if item.split(":", 1)[0] == "48":
                bg = item.replace(":", ";")
            i += 1
            continue
        n = int(item) if item.isdigit() else 0
        if n == 0:
            bg, reverse = None, False
        elif n == 7:
            reverse = True
        elif n == 27:
            reverse = False
        elif 40 <= n <= 47 or 100 <= n <= 107:
            bg = str(n)
        elif n == 49:
            bg = None
        elif n in (38, 48, 58):
            more = _EXTENDED.get(items[i + 1] if i + 1 < len(items) else "", 0)
            if n == 48:
                bg = ";".join(items[i : i + 2 + more])
            i += 1 + more
        i += 1
    return bg, reverse


def runs(line: str) -> list[tuple[str, _Style]]:
    """The line's text in runs of one style, in order."""
    out: list[tuple[str, _Style]] = []
    style: _Style = (None, False)
    pos = 0
    for m in _SGR.finditer(line):
        if m.start() > pos:
            out.append((line[pos : m.start()], style))
        style = _apply(m.group(1), style)
        pos = m.end()
    if pos < len(line):
        out.append((line[pos:], style))
    return out


def highlighted(line: str) -> list[str]:
    """The texts of the line drawn highlighted (stripped, non-empty), in order.

    The line's own background is the style under most of its characters; a run in
    another style stands out. One highlighted choice among plain ones is what a menu
    drawn in colour shows."""
    parts = runs(line)
    weight: Counter[_Style] = Counter()
    for text, style in parts:
        weight[style] += len(text)
    if not weight:
        return []
    ground = weight.most_common(1)[0][0]
    out: list[str] = []
    current: list[str] = []
    last: _Style | None = None
    for text, style in [*parts, ("", ground)]:
        if style != last and current:
            joined = "".join(current).strip()
            if joined:
                out.append(joined)
            current = []
        if style != ground:
            current.append(text)
        last = style
    return out
