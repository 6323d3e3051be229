"""TEMPORARY: the decoder and classifier until their branches land (removed at merge)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

try:
    from paneboard_protocol.decoder import Decoder
except ImportError:  # pragma: no cover

    class Decoder:  # type: ignore[no-redef]
        def __init__(self, rejections: bool = False) -> None:
            pass

        def feed(self, data: bytes) -> list[Any]:
            return []


try:
    from paneboard_protocol.classifier import PaneClassifier
except ImportError:  # pragma: no cover

    @dataclass
    class _Cls:
        agent: str | None = None
        state: str | None = None
        kind: str | None = None
        msg: str | None = None
        title: str | None = None
        progress: int | None = None
        source: str | None = None
        since: float | None = None
        observable: bool = True
        records: tuple[dict[str, Any], ...] = ()

    class PaneClassifier:  # type: ignore[no-redef]
        def __init__(self, rules: Any = None) -> None:
            self._obs = True
            self._name: str | None = None

        def feed(self, now: float, events: list[Any]) -> None:
            pass

        def set_process(self, now: float, name: str | None, pid: int | None = None, observable: bool = True):
            self._name, self._obs = name, observable

        def set_screen(self, now: float, text: str) -> None:
            pass

        def classification(self, now: float) -> _Cls:
            return _Cls(observable=self._obs)

        def next_deadline(self, now: float) -> float | None:
            return None

        @property
        def wants_screen(self) -> bool:
            return False

        def evidence(self) -> dict[str, Any]:
            return {"process": self._name}


def load_rules(rules_dir: str | None) -> Any:
    return None


__all__ = ["Decoder", "PaneClassifier", "load_rules"]
