"""docs/architecture.md names modules and files that exist (so a rename or split shows).

Paths are read in the page's shorthand (`agent/watch/tracker.py` is
agent/src/paneboard_agent/watch/tracker.py; `protocol/`, `server/` likewise; `web/` and
`migrations/` as they are); a bare `name.py` must be a module of one of the packages;
a dotted `paneboard_x.module.Name` must import.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
SHORT = {
    "protocol": "protocol/src/paneboard_protocol",
    "agent": "agent/src/paneboard_agent",
    "server": "server/src/paneboard_server",
}
SOURCES = [ROOT / d for d in (*SHORT.values(), "src/paneboard")]
PATH = re.compile(r"(?<![\w./-])((?:protocol|agent|server|web|migrations|src|tests|bench|scripts)/[\w./-]*)")
BARE = re.compile(r"(?<![\w./-])([a-z_][a-z0-9_]*\.py)\b")
DOTTED = re.compile(r"\b(paneboard(?:_protocol|_agent|_server)?(?:\.[A-Za-z_]\w*)+)")


def resolve(path: str) -> Path:
    top, _, rest = path.partition("/")
    if top in SHORT and not rest.startswith("src/"):
        return ROOT / SHORT[top] / rest
    return ROOT / path


def test_paths_it_names_exist() -> None:
    paths = {m.rstrip(".,") for m in PATH.findall(PAGE)}
    assert {"agent/watch/tracker.py", "server/panes/writer.py", "web/js/model.js"} <= paths
    missing = sorted(p for p in paths if not resolve(p).exists())
    assert missing == []


def test_modules_it_names_exist() -> None:
    named = set(BARE.findall(PAGE))
    assert {"core.py", "flush.py", "relay.py"} <= named
    modules = {p.name for src in SOURCES for p in src.rglob("*.py")}
    assert sorted(named - modules) == []


def test_dotted_names_import() -> None:
    missing = []
    for name in sorted(set(DOTTED.findall(PAGE))):
        parts = name.split(".")
        for i in range(len(parts), 0, -1):  # the longest importable module, then attributes
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                continue
            for attr in parts[i:]:
                obj = getattr(obj, attr, None)
            if obj is None:
                missing.append(name)
            break
        else:
            missing.append(name)
    assert missing == []


def test_every_module_is_named() -> None:
    """The page is the map: a module it does not name is a part a reader cannot find."""
    unnamed = []
    for src in SOURCES:
        for p in sorted(src.rglob("*.py")):
            rel = p.relative_to(src)
            if p.name != "__init__.py" and p.name not in PAGE and str(rel) not in PAGE:
                unnamed.append(str(p.relative_to(ROOT)))
    assert unnamed == []
