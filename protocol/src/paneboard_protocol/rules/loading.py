"""Rule sets: the bundled manifests, each replaced by a user manifest of the same id (TA-17).

The only part of the rules package that touches the file system. Each file is loaded
on its own, so a broken user override never takes the other manifests down and leaves
the bundled manifest of that id in force.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from paneboard_protocol.rules.errors import ManifestError, RuleError
from paneboard_protocol.rules.gates import Manifest
from paneboard_protocol.rules.parse import parse_manifest


def default_user_dir() -> Path:
    """`PANEBOARD_RULES`, else `~/.config/paneboard/rules` (honouring XDG_CONFIG_HOME)."""
    env = os.environ.get("PANEBOARD_RULES")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "paneboard" / "rules"


def _bundled_files() -> list[tuple[str, str]]:
    root = resources.files("paneboard_protocol") / "manifests"
    out = []
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            out.append((f"bundled:{entry.name}", entry.read_text(encoding="utf-8")))
    return out


def _dir_files(directory: Path) -> tuple[list[tuple[str, str]], list[RuleError]]:
    files: list[tuple[str, str]] = []
    errors: list[RuleError] = []
    if not directory.is_dir():
        return files, errors
    for path in sorted(directory.glob("*.toml")):
        try:
            files.append((str(path), path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as exc:
            errors.append(RuleError(str(path), None, f"cannot read: {exc}"))
    return files, errors


@dataclass(frozen=True)
class RuleSet:
    """An immutable set of manifests: the bundled ones, each replaced by a user manifest
    with the same `id` (TA-17). `reload()` reads the same sources again."""

    manifests: tuple[Manifest, ...] = ()
    errors: tuple[RuleError, ...] = ()
    user_dir: Path | None = None
    bundled: bool = True
    _by_agent: dict[str, Manifest] = field(default_factory=dict, repr=False, compare=False)
    _by_process: dict[str, Manifest] = field(default_factory=dict, repr=False, compare=False)
    _aliases: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        for m in self.manifests:
            self._by_agent.setdefault(m.agent, m)
            for name in m.process:
                self._by_process.setdefault(name, m)
            self._aliases.setdefault(m.id, m.agent)
            for a in m.aliases:
                self._aliases.setdefault(a, m.agent)

    @classmethod
    def from_manifests(cls, manifests: Iterable[Manifest]) -> RuleSet:
        return cls(tuple(manifests), (), None, False)

    def reload(self) -> RuleSet:
        """Read the manifests again (TA-17: reloaded on request, without a restart)."""
        return load_rules(self.user_dir, bundled=self.bundled)

    def for_agent(self, agent: str | None) -> Manifest | None:
        return self._by_agent.get(agent) if agent else None

    def for_process(self, name: str | None) -> Manifest | None:
        return self._by_process.get(name) if name else None

    @property
    def agents(self) -> frozenset[str]:
        return frozenset(self._by_agent)

    @property
    def aliases(self) -> dict[str, str]:
        """OSC 7501 `app` names -> agent (`claude-code` -> `claude`, RI-1); a fresh copy."""
        return dict(self._aliases)


def load_files(files: Iterable[tuple[str, str]], origin: str) -> tuple[list[Manifest], list[RuleError]]:
    """Parse each (path, text); broken ones become errors, never exceptions."""
    manifests: list[Manifest] = []
    errors: list[RuleError] = []
    seen: dict[str, str] = {}
    for path, text in files:
        try:
            m = parse_manifest(text, path, origin)
        except ManifestError as exc:
            errors.append(RuleError(path, exc.line, exc.reason))
            continue
        if m.id in seen:
            errors.append(RuleError(path, None, f"duplicate id {m.id!r}: {seen[m.id]} is used"))
            continue
        seen[m.id] = path
        manifests.append(m)
    return manifests, errors


def load_rules(user_dir: str | os.PathLike[str] | None = None, *, bundled: bool = True) -> RuleSet:
    """Bundled manifests, overridden per `id` by those in `user_dir` (default: `default_user_dir()`)."""
    udir = Path(user_dir) if user_dir is not None else default_user_dir()
    base, errors = load_files(_bundled_files(), "bundled") if bundled else ([], [])
    files, read_errors = _dir_files(udir)
    user, user_errors = load_files(files, "user")
    errors = [*errors, *read_errors, *user_errors]
    by_id = {m.id: m for m in base}
    for m in user:
        by_id[m.id] = m
    return RuleSet(tuple(by_id.values()), tuple(errors), udir, bundled)
