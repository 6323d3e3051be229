"""Regions: which part of a reading (screen slice, title, progress) a condition reads.

A screen is split into lines once per capture and every region is a slice of those
lines, joined and case-folded at most once: a spinner title re-reads the same screen
~10 times a second.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from paneboard_protocol.rules.errors import ManifestError

SCREEN_ROWS = 64
"""RI-9: rules read the bottom 64 rows of the live screen."""

_REGION_ALIASES = {
    "whole_recent": "screen",
    "osc_title": "title",
    "osc_progress": "progress",
    "after_last_horizontal_rule": "after_last_rule",
}
_REGION_RE = re.compile(r"^(bottom_lines|top_lines|bottom_non_empty_lines|top_non_empty_lines)\((\d{1,3})\)$")
_PLAIN_REGIONS = frozenset({"screen", "title", "progress", "after_last_rule"})
_RULE_LINE = re.compile(r"^\s*[─━═—-]{8,}\s*$")


def region_text(region: str, screen: str, title: str, progress: str) -> str:
    """The text a condition reads: a named region of the screen, the title or the progress."""
    if region == "title":
        return title
    if region == "progress":
        return progress
    if region == "screen":
        return screen
    if region == "after_last_rule":
        lines = screen.split("\n")
        for i in range(len(lines) - 1, -1, -1):
            if _RULE_LINE.match(lines[i]):
                return "\n".join(lines[i + 1 :])
        return screen
    m = _REGION_RE.match(region)
    assert m is not None
    name, n = m.group(1), int(m.group(2))
    lines = [ln for ln in screen.split("\n") if ln.strip()]
    picked = lines[-n:] if name.startswith("bottom") else lines[:n]
    return "\n".join(picked)


def _normalise_region(value: Any) -> str:
    if not isinstance(value, str):
        raise ManifestError(f"region must be a string, not {type(value).__name__}")
    region = _REGION_ALIASES.get(value, value)
    m = _REGION_RE.match(region)
    if m:
        short = "bottom_lines" if m.group(1).startswith("bottom") else "top_lines"
        if int(m.group(2)) < 1:
            raise ManifestError(f"region {value!r} needs at least one line")
        return f"{short}({int(m.group(2))})"
    if region not in _PLAIN_REGIONS:
        raise ManifestError(
            f"unknown region {value!r} "
            "(screen, title, progress, after_last_rule, bottom_lines(N), top_lines(N))"
        )
    return region


@functools.lru_cache(maxsize=256)
def _region_spec(region: str) -> tuple[str, int]:
    """A normalised region name as (`screen`/`title`/`progress`/`after_last_rule`, 0) or
    (`bottom`/`top`, N): parsed once, not per condition per reading."""
    m = _REGION_RE.match(region)
    if m:
        return ("bottom" if m.group(1).startswith("bottom") else "top", int(m.group(2)))
    return (region, 0)


class _Screen:
    """The screen of one reading, split into lines once; every region is a slice of
    those lines, computed (and joined, and case-folded) at most once per screen."""

    __slots__ = ("_folded", "_lines", "_non_empty", "_text", "lines", "skipped")

    def __init__(self, lines: list[str], skipped: int = 0) -> None:
        self.lines = lines
        self.skipped = skipped  # captured rows above the ones read (RI-9 reads the bottom ones)
        self._non_empty: list[str] | None = None
        self._lines: dict[str, list[str]] = {}
        self._text: dict[str, str] = {}
        self._folded: dict[str, str] = {}

    def region_lines(self, region: str) -> list[str]:
        """The lines of `region`, as splitting `region_text(...)` at newlines gives them."""
        got = self._lines.get(region)
        if got is None:
            kind, n = _region_spec(region)
            if kind in ("bottom", "top"):
                if self._non_empty is None:
                    self._non_empty = list(filter(str.strip, self.lines))  # C loop, not a listcomp
                got = self._non_empty[-n:] if kind == "bottom" else self._non_empty[:n]
            elif kind == "after_last_rule":
                got = self.lines
                for i in range(len(self.lines) - 1, -1, -1):
                    if _RULE_LINE.match(self.lines[i]):
                        got = self.lines[i + 1 :]
                        break
            else:
                got = self.lines
            got = got or [""]  # "".split("\n") is [""]: an empty region has one empty line
            self._lines[region] = got
        return got

    def text(self, region: str) -> str:
        text = self._text.get(region)
        if text is None:
            text = self._text[region] = "\n".join(self.region_lines(region))
        return text

    def folded(self, region: str) -> str:
        low = self._folded.get(region)
        if low is None:
            low = self._folded[region] = self.text(region).casefold()
        return low


@functools.lru_cache(maxsize=1)
def _screen_of(screen: str | None, rows: int) -> _Screen:
    """The bottom `rows` rows of a captured screen, trailing empty rows dropped (RI-9).

    One entry: the same screen is read again whenever the title, progress, process or
    identity changes (a spinner title changes ~10 times a second), so its regions are
    kept until a different screen comes."""
    lines = (screen or "").replace("\r\n", "\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    kept = lines[-rows:]
    return _Screen(kept, len(lines) - len(kept))


class _Texts:
    """Region texts of one reading: the screen's (shared per screen), the title, the progress."""

    __slots__ = ("_folded", "_screen", "progress", "title")

    def __init__(self, screen: _Screen, title: str, progress: str) -> None:
        self._screen = screen
        self.title, self.progress = title, progress
        self._folded: dict[str, str] = {}

    def get(self, region: str) -> str:
        if region == "title":
            return self.title
        if region == "progress":
            return self.progress
        return self._screen.text(region)

    def folded(self, region: str) -> str:
        if region == "title" or region == "progress":
            low = self._folded.get(region)
            if low is None:
                low = self._folded[region] = self.get(region).casefold()
            return low
        return self._screen.folded(region)

    def lines(self, region: str) -> list[str]:
        if region == "title" or region == "progress":
            return self.get(region).split("\n")
        return self._screen.region_lines(region)

    def row(self, region: str, index: int) -> int:
        """1-based number, among the rows read, of the `index`-th line of screen `region`."""
        lines = self._screen.lines
        kind, n = _region_spec(region)
        if kind in ("bottom", "top"):
            non_empty = [i for i, ln in enumerate(lines) if ln.strip()]
            picked = non_empty[-n:] if kind == "bottom" else non_empty[:n]
            return picked[index] + 1 if index < len(picked) else index + 1
        if kind == "after_last_rule":
            return len(lines) - len(self.lines(region)) + index + 1
        return index + 1

    def captured_row(self, region: str, index: int) -> int:
        """The same line's row on the captured screen, counted from its top: the number a
        person finds it under on the pane's screen page."""
        return self._screen.skipped + self.row(region, index)
