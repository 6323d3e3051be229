r"""Answers a blocked prompt takes: declared per rule in a manifest, offered per screen.

```toml
[[rules]]
id = "permission_prompt"
state = "blocked"
...
answers = [
  { id = "yes", label = "Yes", keys = ["1"], line = '^\s*(?:❯\s*)?1\.\s*(Yes)\b' },
  { id = "always", label = "Yes, don't ask again", keys = ["2"], line = '^\s*(?:❯\s*)?2\.\s*(Yes\b.*)$' },
  { id = "no", label = "No", keys = ["Escape"] },
]
```

Why each answer may name a `line`: the same prompt draws different choices at different
times (Claude Code's second option is "don't ask again for this command", "allow all
edits", or "always allow access to DIR"); an answer is offered only when a line of the
screen matches its `line`, and its label is then the regex's first group when it has
one (what the screen says), else the declared label. The keys never leave the
collector: the server and the page see ids and labels only.

Why an answer may name a `selected` regex: a menu that shows its selection only in
colour (OpenCode's permission dialog) draws the same text whatever is selected, and
Enter takes the selected choice. Such an answer is offered only while a highlighted
text of the screen (`paneboard_protocol.highlight`, read from the capture's colours)
matches `selected`; moved elsewhere, the answer is not offered, so the prompt's
fingerprint changes and an answer made before the move is refused, not typed on the
other choice.

Keys are tmux key names from a short list (single characters, arrows, Enter, Escape,
...) so a manifest cannot make the collector run anything but `send-keys` of keys.
Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from paneboard_protocol.rules.errors import ManifestError
from paneboard_protocol.rules.patterns import _compile

#: tmux key names an answer may press (besides one printable ASCII character).
KEY_NAMES = frozenset(
    {"Enter", "Escape", "Tab", "BTab", "Space", "BSpace", "Up", "Down", "Left", "Right", "Home", "End"}
)
_CTRL = re.compile(r"^C-[a-z]$")
_ID = re.compile(r"^[a-z0-9_-]{1,32}$")
_ANSWER_KEYS = frozenset({"id", "label", "keys", "line", "selected"})
MAX_ANSWERS = 16
MAX_KEYS = 8
LABEL_MAX = 128


def valid_key(key: str) -> bool:
    """A key an answer may press: `1`, `y`, `Enter`, `Escape`, `C-c`..."""
    if len(key) == 1:
        return " " < key <= "~"
    return key in KEY_NAMES or bool(_CTRL.match(key))


@dataclass(frozen=True, slots=True)
class Answer:
    """One declared answer: what the page shows (`id`, `label`) and what is typed."""

    id: str
    label: str
    keys: tuple[str, ...]
    line: re.Pattern[str] | None = None
    selected: re.Pattern[str] | None = None

    def offer(self, lines: list[str], marked: Sequence[str] = ()) -> str | None:
        """The label to show on a screen with these lines, or None: not offered here.

        `marked`: the screen's highlighted texts (none known: an answer that needs a
        selection is not offered)."""
        if self.selected is not None and not any(self.selected.search(t) for t in marked):
            return None
        if self.line is None:
            return self.label
        for ln in lines:
            m = self.line.search(ln)
            if m is not None:
                label = m.group(1) if m.groups() and m.group(1) else self.label
                return " ".join(label.split())[:LABEL_MAX] or self.label
        return None


def parse_answers(value: Any) -> tuple[Answer, ...]:
    """A rule's `answers = [{id, label, keys, line?, selected?}, ...]`, checked strictly."""
    if not isinstance(value, list) or not value:
        raise ManifestError("answers must be a non-empty list of tables { id, label, keys }")
    if len(value) > MAX_ANSWERS:
        raise ManifestError(f"answers: at most {MAX_ANSWERS}")
    out: list[Answer] = []
    for i, raw in enumerate(value):
        where = f"answers[{i}]"
        if not isinstance(raw, Mapping):
            raise ManifestError(f"{where}: a table {{ id, label, keys }}")
        for key in raw:
            if key not in _ANSWER_KEYS:
                raise ManifestError(f"{where}: unknown key {key!r} (id, label, keys, line, selected)")
        aid, label, keys = raw.get("id"), raw.get("label"), raw.get("keys")
        if not isinstance(aid, str) or not _ID.match(aid):
            raise ManifestError(f"{where}: id must match [a-z0-9_-]{{1,32}}")
        if any(a.id == aid for a in out):
            raise ManifestError(f"{where}: id {aid!r} twice")
        if not isinstance(label, str) or not label.strip() or len(label) > LABEL_MAX:
            raise ManifestError(f"{where}: label must be a non-empty string of at most {LABEL_MAX}")
        if not isinstance(keys, list) or not keys or len(keys) > MAX_KEYS:
            raise ManifestError(f"{where}: keys must be a list of 1 to {MAX_KEYS} tmux key names")
        for k in keys:
            if not isinstance(k, str) or not valid_key(k):
                raise ManifestError(
                    f"{where}: key {k!r} is not allowed (one printable character, "
                    f"C-a..C-z, or one of {', '.join(sorted(KEY_NAMES))})"
                )
        patterns = []
        for field in ("line", "selected"):
            value = raw.get(field)
            if value is not None and not isinstance(value, str):
                raise ManifestError(f"{where}: {field} must be a regex string")
            patterns.append(None if value is None else _compile([value], f"{where}.{field}")[0])
        out.append(Answer(aid, label.strip(), tuple(keys), patterns[0], patterns[1]))
    return tuple(out)
