"""Every `type: ignore` in the packages names its error code and says why (issue #11, item 7).

mypy itself (`[tool.mypy]`, `warn_unused_ignores`) fails on one that is no longer needed;
this holds the rest to a reason a reader can check.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("protocol/src", "agent/src", "server/src", "src")
IGNORE = re.compile(r"#\s*type:\s*ignore(?P<code>\[[a-z0-9,\- ]+\])?(?P<rest>.*)$")


def ignores() -> list[tuple[str, int, str, str]]:
    """(file, line number, the line, the line before) of every `type: ignore`."""
    out = []
    for top in PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            lines = path.read_text(encoding="utf-8").splitlines()
            for i, line in enumerate(lines):
                if IGNORE.search(line):
                    out.append((str(path.relative_to(ROOT)), i + 1, line, lines[i - 1] if i else ""))
    return out


def test_the_scan_reads_the_forms() -> None:
    assert IGNORE.search("x = 1  # type: ignore[misc]  # why")["rest"].strip() == "# why"
    assert IGNORE.search("x = 1  # type: ignore")["code"] is None
    assert ignores(), "no type: ignore found at all: the scan is looking in the wrong place"


def test_every_type_ignore_has_a_code_and_a_reason() -> None:
    bad = []
    for path, n, line, before in ignores():
        m = IGNORE.search(line)
        assert m is not None
        has_reason = m["rest"].strip().startswith("#") or before.strip().startswith("#")
        if m["code"] is None or not has_reason:
            bad.append(f"{path}:{n}: {line.strip()}")
    why = "type: ignore without [code] and a reason (same line or the comment above):\n"
    assert bad == [], why + "\n".join(bad)
