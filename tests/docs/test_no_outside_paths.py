"""The repository cites itself only: no code, doc or test names a path outside it
(the design notes and corpus this project started from live outside, and a clean
clone elsewhere must not depend on them)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# built up so this file does not name them itself
OUTSIDE = ("../" + "shared", "/work/" + "shared", "/check/" + "work")


#: what the project writes (a clean clone's tree, less what tools make inside it)
TOPS = ("agent", "server", "protocol", "src", "tests", "docs", "web", "bench", "scripts", "migrations")
SKIP = {".venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}


def _files() -> list[Path]:
    out = [ROOT / n for n in ("README.md", "pyproject.toml", ".ci/run") if (ROOT / n).is_file()]
    for top in TOPS:
        out += [
            p
            for p in (ROOT / top).rglob("*")
            if p.is_file() and not SKIP & set(p.relative_to(ROOT).parts) and p.suffix not in {".png", ".ico"}
        ]
    return out


def test_no_file_names_a_path_outside_the_repository() -> None:
    files = _files()
    assert len(files) > 300
    hits = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        hits += [f"{path.relative_to(ROOT)}: {needle}" for needle in OUTSIDE if needle in text]
    assert hits == []
