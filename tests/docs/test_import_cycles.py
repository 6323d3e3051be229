"""No import circle in any package: every module's imports, read from its syntax tree.

Every `import` and `from … import` counts, wherever it is written: at the top, inside a
function, or behind `if TYPE_CHECKING:` — a circle hidden from the interpreter is still
two modules that each need the other to be understood. `from pkg import name` counts as
an import of `pkg.name` when that is a module, else of `pkg` (its `__init__`).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "paneboard_protocol": ROOT / "protocol" / "src",
    "paneboard_agent": ROOT / "agent" / "src",
    "paneboard_server": ROOT / "server" / "src",
    "paneboard": ROOT / "src",
}
# No package has a circle: the collector's screens became one component the watcher
# owns (capture.PaneCapture), which ended the last one (screens <-> watcher).
KNOWN: dict[str, list[list[str]]] = {}


def modules(src: Path, top: str) -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, is a package's `__init__`) for every module under `src/top`."""
    found = {}
    for path in (src / top).rglob("*.py"):
        parts = path.relative_to(src).with_suffix("").parts
        is_init = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_init else parts)] = (path, is_init)
    return found


def _owner(name: str, mods: dict[str, tuple[Path, bool]]) -> str | None:
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(src: Path, top: str) -> dict[str, set[str]]:
    """Each module of `top` -> the modules of `top` it imports."""
    mods = modules(src, top)
    graph: dict[str, set[str]] = {}
    for name, (path, is_init) in mods.items():
        package = name if is_init else name.rpartition(".")[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                deps.update(d for a in node.names if (d := _owner(a.name, mods)))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                else:
                    base = node.module or ""
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    dep = sub if sub in mods else _owner(base, mods)
                    if dep:
                        deps.add(dep)
        deps.discard(name)
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


@pytest.mark.parametrize("top", sorted(PACKAGES))
def test_no_import_cycle(top: str) -> None:
    graph = import_graph(PACKAGES[top], top)
    assert len(graph) > 1
    assert cycles(graph) == KNOWN.get(top, [])


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / "pkg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_finds_a_cycle_hidden_behind_type_checking(tmp_path: Path) -> None:
    src = _package(
        tmp_path,
        {
            "__init__.py": "",
            "sub/__init__.py": "",
            "sub/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..b import B\n",
            "b.py": "def f():\n    from pkg.sub import a\n",
            "c.py": "from . import b\n",
        },
    )
    assert cycles(import_graph(src, "pkg")) == [["pkg.b", "pkg.sub.a"]]


def test_finds_a_cycle_through_a_package_init(tmp_path: Path) -> None:
    src = _package(tmp_path, {"__init__.py": "from .a import X\n", "a.py": "from . import VERSION\n"})
    assert cycles(import_graph(src, "pkg")) == [["pkg", "pkg.a"]]


def test_a_downward_chain_is_no_cycle(tmp_path: Path) -> None:
    src = _package(
        tmp_path,
        {"__init__.py": "", "a.py": "from . import b\n", "b.py": "from .c import C\n", "c.py": "import os\n"},
    )
    graph = import_graph(src, "pkg")
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.c"}
    assert cycles(graph) == []
