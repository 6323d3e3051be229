"""The server is put together in one place (issue 22): its parts reach one typed
`Services`, never `app.state`; `create_app` only puts the parts together, declaring no
route itself; each part's router declares its own routes. (Which part may import which
is import-linter's: tests/docs/test_import_contracts.py.)

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
