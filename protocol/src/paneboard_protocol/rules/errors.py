"""The two ways a manifest is wrong: `ManifestError` while parsing one, `RuleError` as reported."""

from __future__ import annotations

from dataclasses import dataclass


class ManifestError(Exception):
    """A manifest that cannot be used; `line` is 1-based or None when unknown."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line


@dataclass(frozen=True, slots=True)
class RuleError:
    """One broken manifest, as `paneboard rules check` prints it."""

    path: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}" if self.line else f"{self.path}: {self.reason}"
