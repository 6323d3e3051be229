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

Why an answer names the `option` its keys select: the label a device shows, the keys
typed and the line the prompt's fingerprint covers must be one line, the choice itself
(`paneboard_protocol.choices`). An answer with `option = N` is offered only while the
prompt's option block (the numbered choices nearest the bottom, 1..n in order) has a
choice N whose own line matches its `line`; its label is then the regex's first group
(what the screen says: Claude Code's second choice is "don't ask again for this
command", "allow all edits" or "always allow access to DIR"), else that choice's text.
`moves_from = M`: its keys move from choice M (`Down Enter`), so it is offered only
while choice M carries the selection marker.

An answer with a `line` and no `option` is read on the matching line nearest the
bottom of the prompt; its label is the regex's first group, else the declared label.

Why an answer may name a `selected` regex: a menu that shows its selection only in
colour (OpenCode's permission dialog) draws the same text whatever is selected, and
Enter takes the selected choice. Such an answer is offered only while a highlighted
text of its own choice line (`paneboard_protocol.highlight`, read from the capture's
colours) matches `selected` — never a look-alike elsewhere on the screen; moved
elsewhere, the answer is not offered, so the prompt's fingerprint changes and an
answer made before the move is refused, not typed on the other choice.

Keys are tmux key names from a short list (single characters, arrows, Enter, Escape,
...) so a manifest cannot make the collector run anything but `send-keys` of keys.
Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
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
_ANSWER_KEYS = frozenset({"id", "label", "keys", "line", "selected", "option", "moves_from"})
#: numbered choices an answer may name (`option`, `moves_from`)
OPTION_MAX = 99
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
    option: int | None = None  # the numbered choice the keys select
    moves_from: int | None = None  # the choice the keys move from, which must be selected


def parse_answers(value: Any) -> tuple[Answer, ...]:
    """A rule's `answers = [{id, label, keys, line?, selected?, option?, moves_from?}, ...]`,
    checked strictly."""
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
                raise ManifestError(
                    f"{where}: unknown key {key!r} (id, label, keys, line, selected, option, moves_from)"
                )
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
        numbers: list[int | None] = []
        for field in ("option", "moves_from"):
            value = raw.get(field)
            if value is not None and (type(value) is not int or not 1 <= value <= OPTION_MAX):
                raise ManifestError(f"{where}: {field} must be a choice number 1..{OPTION_MAX}")
            numbers.append(value)
        if numbers[1] is not None and numbers[0] is None:
            raise ManifestError(f"{where}: moves_from needs the option the keys select")
        if patterns[1] is not None and patterns[0] is None and numbers[0] is None:
            # a selection is read on the answer's own choice line: it needs one
            raise ManifestError(f"{where}: selected needs a line or an option to read it on")
        out.append(Answer(aid, label.strip(), tuple(keys), patterns[0], patterns[1], numbers[0], numbers[1]))
    return tuple(out)
