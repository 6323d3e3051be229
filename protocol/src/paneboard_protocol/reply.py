"""Where the agent's last reply ends on a screen: the row a done pane's page opens at.

A phone opening a done pane wants the end of what the agent said, not the bottom of
the terminal: below the reply sit the agent's input box and its status lines. The
manifest says where that input is — its idle (or done) rules point at the input
prompt's line (Claude Code's `❯`, Codex's `›`, Aider's `>`, the rule above Pi's
editor and Qwen Code's input, the top of OpenCode's prompt box) — so the reply ends
at the last non-blank line above the block that line sits in (the box top or
horizontal rule drawn above it, as `prompt.py` reads a prompt's block), past the
hints drawn flush right just above that box (Claude Code's "tmux focus-events off …",
Gemini CLI's "? for shortcuts"). No manifest, or no such rule matching this screen (a
dialog in the input's place): the last non-blank line.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from paneboard_protocol.prompt import starts_block
from paneboard_protocol.rules import Manifest
from paneboard_protocol.rules.regions import _region_spec, _screen_of, _Texts
from paneboard_protocol.screen import plain

#: states whose rules point at the input prompt (a program ready for its next turn)
INPUT_STATES = frozenset({"idle", "done"})
#: rows above the input line that may still be its box (a frame, a rule, a hint line)
BLOCK_MAX = 4
#: a line indented this far is a hint drawn flush right, not the reply's text
HINT_INDENT = 16


def _row(lines: Sequence[str], region: str, index: int) -> int | None:
    """The row of `lines` that is the `index`-th line of `region`."""
    kind, n = _region_spec(region)
    if kind in ("bottom", "top"):
        rows = [i for i, ln in enumerate(lines) if ln.strip()]
        rows = rows[-n:] if kind == "bottom" else rows[:n]
        return rows[index] if index < len(rows) else None
    if kind == "after_last_rule":
        texts = _Texts(_screen_of("\n".join(lines), len(lines) or 1), "", "")
        return len(lines) - len(texts.lines(region)) + index
    if kind == "screen":
        return index
    return None


def _hint(line: str) -> bool:
    bare = line.lstrip()
    return bool(bare) and len(line) - len(bare) >= HINT_INDENT


def input_row(manifest: Manifest, visible: Sequence[str]) -> int | None:
    """The row of the agent's input prompt on these (plain) visible rows, as the first
    matching idle/done screen rule of the manifest points at it; None if none does."""
    lines = list(visible)
    while lines and not lines[-1].strip():
        lines.pop()
    sc = _screen_of("\n".join(lines), manifest.rows)
    cut = len(lines) - len(sc.lines)  # rows above the bottom `rows` the rules read
    texts = _Texts(sc, "", "")
    for rule in manifest.rules:
        if rule.state not in INPUT_STATES or rule.native or not rule.gate.matches_texts(texts):
            continue
        at = rule.gate.anchor(texts)
        row = _row(sc.lines, rule.gate.region, at) if at is not None else None
        if row is not None:
            return cut + row
    return None


def reply_end(lines: Sequence[str], height: int, manifest: Manifest | None) -> int | None:
    """The index in `lines` (scroll-back, then the `height` visible rows, with their
    colour escapes) of the last row of the agent's last reply; None: nothing drawn."""
    text = [plain(ln) for ln in lines]
    top = max(0, len(text) - max(0, height))
    end = len(text)
    if manifest is not None:
        at = input_row(manifest, text[top:])
        if at is not None:
            start = top + at
            for i in range(start - 1, max(top, start - BLOCK_MAX) - 1, -1):
                if starts_block(text[i]):
                    start = i
                    break
            while start > top and _hint(text[start - 1]):
                start -= 1
            end = start
    for i in range(end - 1, -1, -1):
        if text[i].strip():
            return i
    return None
