"""Finding rule IDs (P7501-n, TA-n, RI-n, F-n): where the code cites them, where docs/spec.md defines them.

Shared by the test that holds the two together and usable by hand:
`uv run python tests/docs/spec_ids.py` prints both directions.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "docs" / "spec.md"

FAMILIES = "P7501|TA|RI|F"
# `P7501-8` in prose, `P7501_8` in a test name (`test_P7501_8_…`), `P7501-6/8` as a
# shorthand for two rules of one family. The look-behind keeps `UTF-8` or `DATA-1`
# from reading as rules of the F or TA family.
_CITE = re.compile(rf"(?<![A-Za-z0-9])({FAMILIES})[-_](\d+)((?:/\d+)*)(?!\d)")
# `TA-8..TA-15` and `TA-8..15`: every rule in between is cited too.
_RANGE = re.compile(rf"(?<![A-Za-z0-9])({FAMILIES})-(\d+)\s*(?:\.\.|–)\s*(?:\1-)?(\d+)(?!\d)")
_ANCHOR = re.compile(r'<a id="([^"]+)"></a>\*\*([^*]+)\*\*')

SKIP_DIRS = {".git", ".venv", "node_modules", "__pycache__", ".pytest_cache", ".ruff_cache", ".hypothesis"}
MAX_BYTES = 2_000_000


def ids_in(text: str) -> set[str]:
    """Every rule ID a text cites, in its canonical `FAMILY-n` form."""
    found: set[str] = set()
    for fam, first, more in _CITE.findall(text):
        found.add(f"{fam}-{int(first)}")
        found.update(f"{fam}-{int(n)}" for n in more.split("/") if n)
    for fam, lo, hi in _RANGE.findall(text):
        found.update(f"{fam}-{n}" for n in range(int(lo), int(hi) + 1))
    return found


def source_files(root: Path = ROOT) -> Iterator[Path]:
    """Every text file of the checkout except the spec page itself."""
    spec = root / SPEC.relative_to(ROOT)
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part in SKIP_DIRS or part.startswith(".") for part in rel.parts[:-1]):
            continue
        if not path.is_file() or path == spec or path.stat().st_size > MAX_BYTES:
            continue
        yield path


def citations(root: Path = ROOT) -> dict[str, set[str]]:
    """rule ID -> the files (relative paths) that cite it."""
    cited: dict[str, set[str]] = {}
    for path in source_files(root):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary files (images, fixtures) cite nothing
        for rule in ids_in(text):
            cited.setdefault(rule, set()).add(str(path.relative_to(root)))
    return cited


def defined(spec_text: str) -> list[str]:
    """The IDs docs/spec.md defines, in page order: each `<a id="X"></a>**X**` entry."""
    out = []
    for anchor, label in _ANCHOR.findall(spec_text):
        if anchor != label:
            raise ValueError(f"docs/spec.md: anchor {anchor!r} is labelled {label!r}")
        out.append(anchor)
    return out


if __name__ == "__main__":
    cited = citations()
    have = set(defined(SPEC.read_text(encoding="utf-8")))
    for rule in sorted(set(cited) - have):
        print(f"cited but not in docs/spec.md: {rule} ({', '.join(sorted(cited[rule]))})")
    for rule in sorted(have - set(cited)):
        print(f"in docs/spec.md but cited nowhere: {rule}")
