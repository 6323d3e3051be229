"""The server's layout holds (issue 22): its parts reach one typed `Services`, never
`app.state`; `create_app` only puts the parts together, declaring no route itself; and
each part (a sub-package) is reached only through its entry point, its `__init__`.

Read from the syntax trees, so a new `request.app.state.x` fails here rather than as
an untyped read mypy cannot see.
"""

from __future__ import annotations

import ast
from pathlib import Path

from paneboard_server.app import ROUTERS, create_app
from paneboard_server.config import Config

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "server" / "src" / "paneboard_server"
# The one module that stores the services on the app and reads them back.
KEEPER = PACKAGE / "services.py"
SEARCHED = (PACKAGE, ROOT / "tests" / "server", ROOT / "bench")


def _is_app(node: ast.expr) -> bool:
    """`app`, `app2`, `request.app`, `ws.app`, `self.app`: something's ASGI app."""
    if isinstance(node, ast.Name):
        return node.id.startswith("app")
    return isinstance(node, ast.Attribute) and node.attr == "app"


def app_state_lines(source: str) -> list[int]:
    """The lines of `source` that touch an app's `.state`."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and node.attr == "state" and _is_app(node.value)
    ]


def test_app_state_is_reached_only_through_services() -> None:
    found = [
        f"{p.relative_to(ROOT)}:{line}"
        for top in SEARCHED
        for p in sorted(top.rglob("*.py"))
        if p != KEEPER
        for line in app_state_lines(p.read_text(encoding="utf-8"))
    ]
    assert found == []
    assert app_state_lines(KEEPER.read_text(encoding="utf-8"))  # the check sees it where it is


def test_the_check_sees_every_spelling() -> None:
    source = (
        "a = request.app.state.core\nb = ws.app.state.registry\nc = app.state.x\n"
        "d = getattr(app2.state, 'y', None)\ne = self.state.turns\nf = request.state.who\n"
    )
    assert app_state_lines(source) == [1, 2, 3, 4]


def test_create_app_declares_no_route() -> None:
    """Routes live in their parts' routers; `create_app` holds only its lifespan."""
    tree = ast.parse((PACKAGE / "app.py").read_text(encoding="utf-8"))
    (create,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "create_app"]
    inner = [n.name for n in ast.walk(create) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    assert inner == ["create_app", "lifespan"]


def test_each_part_declares_its_own_routes() -> None:
    """Every route of a part's router has its endpoint in that part's module."""
    elsewhere = [
        f"{make.__module__}: {getattr(route, 'path', route)}"
        for make in ROUTERS
        for route in make().routes
        if getattr(route, "endpoint", make).__module__ != make.__module__
    ]
    assert elsewhere == []
    # ... and the routers are all there is: every operation of the OpenAPI document.
    routed = {
        (r.path, m.lower()) for make in ROUTERS for r in make().routes for m in getattr(r, "methods", ())
    }
    app = create_app(Config(), "sqlite+aiosqlite:///:memory:")
    documented = {(path, method) for path, ops in app.openapi()["paths"].items() for method in ops}
    assert len(documented) > 20 and documented <= routed


def _exports(init: Path) -> set[str] | None:
    """The names an `__init__.py` lists in `__all__`, or None when it has none."""
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return set(ast.literal_eval(node.value))
    return None


def reaches_in(src: Path, top: str) -> list[str]:
    """Every import in package `top` (under `src`) that crosses into one of its
    sub-packages other than the importer's own, other than by that sub-package's entry
    point: an inner module (`from ..panes.core import Core`, `import top.panes.core`), or
    a name the sub-package's `__init__` does not list in `__all__`.

    Read from the syntax tree, so an import inside a function or behind
    `if TYPE_CHECKING:` counts. Top-level modules (`app.py`, `config.py`, ...) are no
    part: any part may import them, and they reach the parts by their entry points too.
    """
    root = src / top
    parts = {p.parent.name: _exports(p) or set() for p in sorted(root.glob("*/__init__.py"))}
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(src).with_suffix("").parts
        package = rel[:-1]  # the package a relative import starts from
        own = rel[1] if len(rel) > 2 else None  # the importer's part, if it is in one
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                wanted = [(a.name.split("."), None) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = list(package[: len(package) - node.level + 1]) if node.level else []
                base += node.module.split(".") if node.module else []
                wanted = [(base, a.name) for a in node.names]
            else:
                continue
            for base, name in wanted:
                if base[0] != top:
                    continue
                # `from top import part` names the part itself: its entry point.
                full = base if name is None or len(base) > 1 else [*base, name]
                if len(full) < 2 or full[1] not in parts or full[1] == own:
                    continue
                where = f"{path.relative_to(src)}:{node.lineno}"
                if len(full) > 2:
                    found.append(f"{where} {'.'.join(full)} (an inner module)")
                elif name is not None and len(base) == 2 and name not in parts[full[1]]:
                    found.append(f"{where} {full[1]}.{name} (not in its __all__)")
    return list(dict.fromkeys(found))


def test_parts_meet_only_at_their_entry_points() -> None:
    assert reaches_in(PACKAGE.parent, "paneboard_server") == []


def test_every_part_states_its_entry_point() -> None:
    """Each sub-package's `__init__` says what the part is for and lists what it offers."""
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), init
        exported = _exports(init)
        assert exported, init
        bound = {
            a.asname or a.name.partition(".")[0]
            for n in tree.body
            if isinstance(n, ast.Import | ast.ImportFrom)
            for a in n.names
        }
        assert sorted(exported - bound) == [], init  # every listed name is re-exported


def test_the_entry_point_check_sees_every_spelling(tmp_path: Path) -> None:
    files = {
        "a/__init__.py": '"""A."""\nfrom .inner import X, Y\n__all__ = ["X"]\n',
        "a/inner.py": "X = Y = 1\n",
        "a/own.py": "from .inner import Y\nfrom ..a.inner import X\n",  # its own part: fine
        "b/__init__.py": "",
        "b/m.py": (
            "from ..a.inner import X\n"  # 1: relative, into an inner module
            "from pkg.a.inner import X\n"  # 2: absolute, likewise
            "import pkg.a.inner\n"  # 3: a plain import
            "from ..a import X\n"  # fine: the entry point, a name it exports
            "from ..a import Y\n"  # 5: the entry point, a name it does not list
            "from pkg import a\n"  # fine: the part itself
            "from pkg.a import inner\n"  # 7: a module the entry point does not list
            "def f():\n"
            "    from ..a.inner import Y\n"  # 9: inside a function
            "    from . import m\n"  # fine: its own part
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n"
            "    from ..a.inner import X\n"  # 13: seen only by type checkers
        ),
        "top.py": "from .a.inner import X\nfrom .a import X\nfrom . import top\n",  # 1: a top-level module
    }
    for rel, text in files.items():
        (tmp_path / "pkg" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "pkg" / rel).write_text(text, encoding="utf-8")
    assert reaches_in(tmp_path, "pkg") == [
        "pkg/b/m.py:1 pkg.a.inner (an inner module)",
        "pkg/b/m.py:2 pkg.a.inner (an inner module)",
        "pkg/b/m.py:3 pkg.a.inner (an inner module)",
        "pkg/b/m.py:5 a.Y (not in its __all__)",
        "pkg/b/m.py:7 a.inner (not in its __all__)",
        "pkg/b/m.py:9 pkg.a.inner (an inner module)",
        "pkg/b/m.py:13 pkg.a.inner (an inner module)",
        "pkg/top.py:1 pkg.a.inner (an inner module)",
    ]
