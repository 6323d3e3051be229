"""The layering holds: import-linter's contracts (pyproject.toml, `[tool.importlinter]`).

The contracts say what may import what: the command above the collector and the server,
both above the protocol and neither importing the other; the collector's parts in
layers, the in-pane tools apart from the collector; each part of the collector and of
the server reached only through its entry point; no import circle between the parts of
any package. `lint-imports` reads every import, inside functions and behind
`if TYPE_CHECKING:` too. These tests run it on the tree, and on a copy with planted
imports to show each kind of contract catches what it forbids.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from importlinter.api import read_configuration

pytestmark = pytest.mark.proc  # each test runs `lint-imports`, a process of its own

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "pyproject.toml"
LINT = Path(sys.executable).with_name("lint-imports")
SOURCES = {
    "paneboard": ROOT / "src",
    "paneboard_protocol": ROOT / "protocol" / "src",
    "paneboard_agent": ROOT / "agent" / "src",
    "paneboard_server": ROOT / "server" / "src",
}
# The packages whose sub-packages are parts, each with an entry-point contract.
WITH_PARTS = ("paneboard_agent", "paneboard_server")


def lint(cwd: Path, *contracts: str, pythonpath: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    argv = [
        str(LINT),
        "--no-cache",
        "--no-logo",
        *(a for c in contracts for a in ("--contract", c)),
        str(CONFIG),
    ]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=240)


def contracts() -> list[dict]:
    return read_configuration(str(CONFIG))["contracts_options"]


def test_the_contracts_are_kept(tmp_path: Path) -> None:
    done = lint(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Contracts: {len(contracts())} kept, 0 broken." in done.stdout


def _exports(init: Path) -> list[str] | None:
    """The names an `__init__.py` lists in `__all__`, or None when it has none."""
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):  # `__all__: list[str] = []`
            targets = [node.target]
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            assert node.value is not None
            return list(ast.literal_eval(node.value))
    return None


def _parts(top: str) -> dict[str, Path]:
    return {p.parent.name: p for p in sorted((SOURCES[top] / top).glob("*/__init__.py"))}


@pytest.mark.parametrize("top", WITH_PARTS)
def test_every_part_states_its_entry_point(top: str) -> None:
    """Each part's `__init__` says what the part is for and lists what it offers, and
    every listed name is bound there."""
    for init in _parts(top).values():
        tree = ast.parse(init.read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), init
        exported = _exports(init)
        assert exported is not None, init
        bound = {
            a.asname or a.name.partition(".")[0]
            for n in tree.body
            if isinstance(n, ast.Import | ast.ImportFrom)
            for a in n.names
        }
        assert sorted(set(exported) - bound) == [], init


@pytest.mark.parametrize("top", WITH_PARTS)
def test_every_part_has_its_entry_point_contract(top: str) -> None:
    """A new part is covered only once it has a contract; the imports each contract lets
    through from outside are exactly the modules its entry point lists in `__all__`."""
    protected = {
        c["protected_modules"][0].removesuffix(".*"): c for c in contracts() if c["type"] == "protected"
    }
    for name, init in _parts(top).items():
        part = f"{top}.{name}"
        assert part in protected, f"{part} has no entry-point contract"
        contract = protected[part]
        assert contract["allowed_importers"] == [part]
        modules = {p.stem for p in init.parent.glob("*.py")} | {
            p.parent.name for p in init.parent.glob("*/__init__.py")
        }
        listed = {f"{part}.{m}" for m in _exports(init) or [] if m in modules}
        let_through = {
            i.partition(" -> ")[2]
            for i in contract.get("ignore_imports", [])
            if i.startswith(f"{top}.** -> ")
        }
        assert let_through == listed, part


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the four packages with one forbidden import per kind of contract."""
    src = tmp_path_factory.mktemp("planted")
    for top, where in SOURCES.items():
        shutil.copytree(where / top, src / top, ignore=shutil.ignore_patterns("__pycache__"))

    def plant(rel: str, line: str) -> None:
        path = src / rel
        path.write_text(path.read_text(encoding="utf-8") + "\n" + line + "\n", encoding="utf-8")

    # the protocol importing the collector
    plant("paneboard_protocol/pane.py", "from paneboard_agent import config")
    # a lower part of the collector importing a higher one, inside a function
    plant(
        "paneboard_agent/tmux/capture.py",
        "def _planted():\n    from paneboard_agent.watch import TmuxWatcher",
    )
    # an in-pane tool importing the collector, seen only by type checkers
    plant(
        "paneboard_agent/tools/emit.py",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import paneboard_agent.uplink",
    )
    # past a part's entry point, into an inner module
    plant("paneboard_agent/collector.py", "from paneboard_agent.watch.tracker import PaneTracker")
    plant("paneboard_server/api/panes.py", "from paneboard_server.panes.core import Core")
    # a circle between two parts of the server (the panes import the stream's hub)
    plant("paneboard_server/stream/hub.py", "from paneboard_server import panes")
    return src


@pytest.mark.parametrize(
    ("contract", "named"),
    [
        ("packages", "paneboard_protocol.pane -> paneboard_agent.config"),
        ("collector-layers", "paneboard_agent.tmux.capture -> paneboard_agent.watch"),
        ("tools-apart", "paneboard_agent.tools.emit -> paneboard_agent.uplink"),
        ("entry-agent-watch", "paneboard_agent.collector -> paneboard_agent.watch.tracker"),
        ("entry-server-panes", "paneboard_server.api.panes -> paneboard_server.panes.core"),
        ("acyclic", ".stream -> .panes"),
    ],
)
def test_a_planted_import_breaks_its_contract(planted: Path, contract: str, named: str) -> None:
    done = lint(planted, contract, pythonpath=str(planted))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Contracts: 0 kept, 1 broken." in done.stdout
    assert named in done.stdout  # the planted import is the one named


def test_the_planted_copy_is_what_is_linted(planted: Path) -> None:
    """The copy, not the installed tree, is analysed: a contract the plants leave alone
    is kept there, so the broken ones above are the plants' doing."""
    done = lint(planted, "entry-server-store", pythonpath=str(planted))
    assert done.returncode == 0, done.stdout + done.stderr
    probe = subprocess.run(
        [sys.executable, "-c", "import paneboard_agent; print(paneboard_agent.__file__)"],
        env={**os.environ, "PYTHONPATH": str(planted)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.strip().startswith(str(planted))


def _imports_children(init: Path, package: str) -> bool:
    """Does this `__init__` import any of its package's children (to re-export them)?"""
    for node in ast.walk(ast.parse(init.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (
            node.level == 1 or (node.module or "").startswith(package + ".")
        ):
            return True
    return False


def _own_package_names(module: Path, package: str) -> list[str]:
    """What `module` (a child of `package`) imports from its own package's `__init__`
    that is not a sibling module: where that `__init__` imports its children to
    re-export them, a circle the acyclic contract does not see (it looks at siblings
    only)."""
    siblings = {p.stem for p in module.parent.glob("*.py")} | {
        p.parent.name for p in module.parent.glob("*/__init__.py")
    }
    found = []
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        own = isinstance(node, ast.ImportFrom) and (
            (node.level == 0 and node.module == package) or (node.level == 1 and not node.module)
        )
        if own:
            assert isinstance(node, ast.ImportFrom)
            found += [f"{module.name}: {a.name}" for a in node.names if a.name not in siblings]
    return found


@pytest.mark.parametrize("top", sorted(SOURCES))
def test_no_module_imports_its_own_packages_entry_point(top: str) -> None:
    root = SOURCES[top]
    circles = []
    for init in sorted((root / top).rglob("__init__.py")):
        package = ".".join(init.parent.relative_to(root).parts)
        if not _imports_children(init, package):
            continue  # a plain `__init__` (a version string): importing it closes no circle
        for module in sorted(init.parent.glob("*.py")):
            if module.name != "__init__.py":
                circles += _own_package_names(module, package)
    assert circles == []


def test_an_import_from_the_own_entry_point_is_seen(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from pkg.child import Thing\n")
    (tmp_path / "pkg" / "other.py").write_text("")
    child = tmp_path / "pkg" / "child.py"
    child.write_text("from pkg import other\nfrom pkg import Thing\nfrom . import Thing as T\n")
    assert _own_package_names(child, "pkg") == ["child.py: Thing", "child.py: Thing"]
    assert _imports_children(tmp_path / "pkg" / "__init__.py", "pkg")
    (tmp_path / "pkg" / "__init__.py").write_text('__version__ = "1"\n')
    assert not _imports_children(tmp_path / "pkg" / "__init__.py", "pkg")
