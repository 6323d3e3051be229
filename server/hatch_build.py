"""Puts the dashboard (`web/`) and the Alembic migrations inside the server's wheel.

Both live at the repository's top level, beside the packages that share them. A wheel
built straight from the tree finds them one level up; a wheel built from the sdist (what
`uv build` and pip do) finds the copies the sdist took in through
`[tool.hatch.build.targets.sdist.force-include]`. An editable install reads them from the
source tree (`api.pages.web_dir`, `store.migrate.migrations_dir`), so it gets no copies
that could go stale.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

_SHIPPED = ("web", "migrations")


class ServerAssetsHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "editable":
            return
        root = Path(self.root)
        for name in _SHIPPED:
            source = root / name if (root / name).is_dir() else root.parent / name
            if not (source.is_dir() and any(source.iterdir())):
                raise FileNotFoundError(f"paneboard-server: {name}/ not found beside {root} or in it")
            build_data["force_include"][str(source)] = f"paneboard_server/{name}"
