"""Screen-rule manifests (TA-2, TA-17, TA-18, TA-19): TOML files read with `tomllib`.

A manifest says which foreground processes are an agent and how that agent's screen
(and the title / OSC 9;4 progress it emitted) reads as a state. The format is the
design's, grown the way herdr's manifests grew (regions, case-insensitive
`contains`, `priority`, `all`/`any`/`not` gates); `docs/classifier.md` is its
reference. Matching is pure; only `load_rules` touches the file system.

Why the loader is strict and forgiving at once: a manifest with an unknown key, a
regex that does not compile or a state that does not exist is *wrong*, and guessing
what it meant would classify panes wrongly — so it is rejected whole, with file,
line (where we can find it) and reason. But it never takes the other manifests down:
each file is loaded on its own, and a broken user override leaves the bundled
manifest of that id in force.
"""

from __future__ import annotations

import functools
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

RULE_STATES = frozenset({"working", "blocked", "idle", "done", "error", "unknown"})
"""`unknown` holds whatever the screen said before (a transcript viewer, a menu)."""

KINDS = frozenset({"permission", "question", "auth"})

SCREEN_ROWS = 64
"""RI-9: rules read the bottom 64 rows of the live screen."""

_CONDITION_KEYS = frozenset({"regex", "contains", "line_regex", "screen", "title", "progress"})
_GATE_KEYS = _CONDITION_KEYS | {"region", "all", "any", "not"}
_RULE_KEYS = _GATE_KEYS | {"id", "state", "kind", "priority", "description"}
_HERDR_IGNORED = frozenset({"visible_working", "visible_blocker", "visible_idle", "skip_state_update"})
_MANIFEST_KEYS = frozenset({"id", "agent", "process", "aliases", "description", "rows", "rules"})
_HERDR_MANIFEST_IGNORED = frozenset({"version", "min_engine_version", "updated_at", "resume_options"})

_REGION_ALIASES = {
    "whole_recent": "screen",
    "osc_title": "title",
    "osc_progress": "progress",
    "after_last_horizontal_rule": "after_last_rule",
}
_REGION_RE = re.compile(r"^(bottom_lines|top_lines|bottom_non_empty_lines|top_non_empty_lines)\((\d{1,3})\)$")
_PLAIN_REGIONS = frozenset({"screen", "title", "progress", "after_last_rule"})
_RULE_LINE = re.compile(r"^\s*[─━═—-]{8,}\s*$")


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


# ---------------------------------------------------------------- regex translation


_HERDR_HEX = re.compile(r"(?<!\\)((?:\\\\)*)\\x\{([0-9A-Fa-f]{1,8})\}")
_RUST_END = re.compile(r"(?<!\\)((?:\\\\)*)\\z")


def translate_regex(pattern: str) -> str:
    """Accept herdr's Rust-flavoured escapes: `\\x{2733}` -> `\\u2733`, `\\z` -> `\\Z`."""

    def hex_sub(m: re.Match[str]) -> str:
        pre, digits = m.group(1), m.group(2)
        cp = int(digits, 16)
        if cp <= 0xFF:
            return f"{pre}\\x{cp:02x}"
        if cp <= 0xFFFF:
            return f"{pre}\\u{cp:04x}"
        return f"{pre}\\U{cp:08x}"

    return _RUST_END.sub(lambda m: m.group(1) + "\\Z", _HERDR_HEX.sub(hex_sub, pattern))


# ---------------------------------------------------------------- regions


def region_text(region: str, screen: str, title: str, progress: str) -> str:
    """The text a condition reads: a named region of the screen, the title or the progress."""
    if region == "title":
        return title
    if region == "progress":
        return progress
    if region == "screen":
        return screen
    if region == "after_last_rule":
        lines = screen.split("\n")
        for i in range(len(lines) - 1, -1, -1):
            if _RULE_LINE.match(lines[i]):
                return "\n".join(lines[i + 1 :])
        return screen
    m = _REGION_RE.match(region)
    assert m is not None
    name, n = m.group(1), int(m.group(2))
    lines = [ln for ln in screen.split("\n") if ln.strip()]
    picked = lines[-n:] if name.startswith("bottom") else lines[:n]
    return "\n".join(picked)


def _normalise_region(value: Any) -> str:
    if not isinstance(value, str):
        raise ManifestError(f"region must be a string, not {type(value).__name__}")
    region = _REGION_ALIASES.get(value, value)
    m = _REGION_RE.match(region)
    if m:
        short = "bottom_lines" if m.group(1).startswith("bottom") else "top_lines"
        if int(m.group(2)) < 1:
            raise ManifestError(f"region {value!r} needs at least one line")
        return f"{short}({int(m.group(2))})"
    if region not in _PLAIN_REGIONS:
        raise ManifestError(
            f"unknown region {value!r} "
            "(screen, title, progress, after_last_rule, bottom_lines(N), top_lines(N))"
        )
    return region


# ---------------------------------------------------------------- conditions


@dataclass(frozen=True, slots=True)
class Gate:
    """A conjunction of conditions over one region, with nested all/any/not gates."""

    region: str
    regex: tuple[re.Pattern[str], ...] = ()
    contains: tuple[str, ...] = ()
    line_regex: tuple[re.Pattern[str], ...] = ()
    fixed: tuple[tuple[str, re.Pattern[str]], ...] = ()  # screen/title/progress keys: own region
    all: tuple[Gate, ...] = ()
    any: tuple[Gate, ...] = ()
    not_: tuple[Gate, ...] = ()

    def regions(self) -> set[str]:
        """Every region this gate reads (to tell native-only rules from screen rules)."""
        out: set[str] = set()
        if self.regex or self.contains or self.line_regex:
            out.add(self.region)
        out.update(r for r, _ in self.fixed)
        for g in (*self.all, *self.any, *self.not_):
            out |= g.regions()
        return out

    def matches(self, screen: str, title: str, progress: str) -> bool:
        return self._matches(_Texts(_Screen(screen.split("\n")), title, progress))

    def _matches(self, texts: _Texts) -> bool:
        # Cheapest first: substring tests filter most screens before any regex runs.
        if self.contains:
            low = texts.folded(self.region)
            if not all(c in low for c in self.contains):
                return False
        if self.regex:
            text = texts.get(self.region)
            for pat in self.regex:
                if not pat.search(text):
                    return False
        if self.line_regex:
            lines = texts.lines(self.region)
            for pat in self.line_regex:
                if not any(pat.search(ln) for ln in lines):
                    return False
        for reg, pat in self.fixed:
            if not pat.search(texts.get(reg)):
                return False
        if not all(g._matches(texts) for g in self.all):
            return False
        if self.any and not any(g._matches(texts) for g in self.any):
            return False
        return not any(g._matches(texts) for g in self.not_)


@functools.lru_cache(maxsize=256)
def _region_spec(region: str) -> tuple[str, int]:
    """A normalised region name as (`screen`/`title`/`progress`/`after_last_rule`, 0) or
    (`bottom`/`top`, N): parsed once, not per condition per reading."""
    m = _REGION_RE.match(region)
    if m:
        return ("bottom" if m.group(1).startswith("bottom") else "top", int(m.group(2)))
    return (region, 0)


class _Screen:
    """The screen of one reading, split into lines once; every region is a slice of
    those lines, computed (and joined, and case-folded) at most once per screen."""

    __slots__ = ("_folded", "_lines", "_non_empty", "_text", "lines")

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self._non_empty: list[str] | None = None
        self._lines: dict[str, list[str]] = {}
        self._text: dict[str, str] = {}
        self._folded: dict[str, str] = {}

    def region_lines(self, region: str) -> list[str]:
        """The lines of `region`, as splitting `region_text(...)` at newlines gives them."""
        got = self._lines.get(region)
        if got is None:
            kind, n = _region_spec(region)
            if kind in ("bottom", "top"):
                if self._non_empty is None:
                    self._non_empty = list(filter(str.strip, self.lines))  # C loop, not a listcomp
                got = self._non_empty[-n:] if kind == "bottom" else self._non_empty[:n]
            elif kind == "after_last_rule":
                got = self.lines
                for i in range(len(self.lines) - 1, -1, -1):
                    if _RULE_LINE.match(self.lines[i]):
                        got = self.lines[i + 1 :]
                        break
            else:
                got = self.lines
            got = got or [""]  # "".split("\n") is [""]: an empty region has one empty line
            self._lines[region] = got
        return got

    def text(self, region: str) -> str:
        text = self._text.get(region)
        if text is None:
            text = self._text[region] = "\n".join(self.region_lines(region))
        return text

    def folded(self, region: str) -> str:
        low = self._folded.get(region)
        if low is None:
            low = self._folded[region] = self.text(region).casefold()
        return low


@functools.lru_cache(maxsize=1)
def _screen_of(screen: str | None, rows: int) -> _Screen:
    """The bottom `rows` rows of a captured screen, trailing empty rows dropped (RI-9).

    One entry: the same screen is read again whenever the title, progress, process or
    identity changes (a spinner title changes ~10 times a second), so its regions are
    kept until a different screen comes."""
    lines = (screen or "").replace("\r\n", "\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    return _Screen(lines[-rows:])


class _Texts:
    """Region texts of one reading: the screen's (shared per screen), the title, the progress."""

    __slots__ = ("_folded", "_screen", "progress", "title")

    def __init__(self, screen: _Screen, title: str, progress: str) -> None:
        self._screen = screen
        self.title, self.progress = title, progress
        self._folded: dict[str, str] = {}

    def get(self, region: str) -> str:
        if region == "title":
            return self.title
        if region == "progress":
            return self.progress
        return self._screen.text(region)

    def folded(self, region: str) -> str:
        if region == "title" or region == "progress":
            low = self._folded.get(region)
            if low is None:
                low = self._folded[region] = self.get(region).casefold()
            return low
        return self._screen.folded(region)

    def lines(self, region: str) -> list[str]:
        if region == "title" or region == "progress":
            return self.get(region).split("\n")
        return self._screen.region_lines(region)


@dataclass(frozen=True, slots=True)
class Rule:
    """One `[[rules]]` entry: a gate plus the state it means."""

    id: str
    state: str
    kind: str | None
    priority: int
    index: int
    gate: Gate
    native: bool  # reads only the title / progress regions (TA-3 via manifest regions, RI-7)


@dataclass(frozen=True, slots=True)
class Match:
    """The winning rule for a screen reading."""

    manifest: str
    rule: str
    state: str
    kind: str | None
    native: bool

    def reading(self) -> dict[str, Any]:
        return {
            "manifest": self.manifest,
            "rule": self.rule,
            "state": self.state,
            "kind": self.kind,
            "native": self.native,
        }


@dataclass(frozen=True, slots=True)
class Manifest:
    """One agent's manifest."""

    id: str
    agent: str
    process: tuple[str, ...]
    aliases: tuple[str, ...]
    rules: tuple[Rule, ...]
    rows: int = SCREEN_ROWS
    path: str = "<string>"
    origin: str = "bundled"  # or "user"

    def match(
        self, screen: str | None, title: str | None = None, progress: str | None = None
    ) -> Match | None:
        """The highest-priority matching rule (file order breaks ties), or None.

        `screen` is cut to the bottom `rows` rows (RI-9); `title`/`progress` are what the
        program emitted, empty when it emitted nothing (TA-18)."""
        texts = _Texts(_screen_of(screen, self.rows), title or "", progress or "")
        for rule in self.rules:
            if rule.gate._matches(texts):
                return Match(self.id, rule.id, rule.state, rule.kind, rule.native)
        return None


def _str_list(value: Any, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ManifestError(f"{key} must be a list of strings (TA-19)")
    return value


def _compile(patterns: list[str], key: str) -> tuple[re.Pattern[str], ...]:
    out = []
    for p in patterns:
        try:
            out.append(re.compile(translate_regex(p)))
        except re.error as exc:
            raise ManifestError(f"{key}: regex {p!r} does not compile: {exc}") from None
    return tuple(out)


def _parse_gate(table: Any, region: str, allowed: frozenset[str], where: str) -> Gate:
    if not isinstance(table, Mapping):
        raise ManifestError(f"{where}: a gate must be a table")
    for key in table:
        if key not in allowed and key not in _HERDR_IGNORED:
            raise ManifestError(f"{where}: unknown key {key!r}")
    if "region" in table:
        region = _normalise_region(table["region"])
    fixed: list[tuple[str, re.Pattern[str]]] = []
    for reg in ("screen", "title", "progress"):
        if reg in table:
            fixed += [(reg, p) for p in _compile(_str_list(table[reg], reg), reg)]

    def gates(key: str) -> tuple[Gate, ...]:
        value = table.get(key, [])
        if isinstance(value, Mapping):
            value = [value]
        if not isinstance(value, list):
            raise ManifestError(f"{where}: {key} must be a list of tables")
        return tuple(_parse_gate(g, region, _GATE_KEYS, f"{where}.{key}") for g in value)

    return Gate(
        region=region,
        regex=_compile(_str_list(table.get("regex", []), "regex"), "regex"),
        contains=tuple(c.casefold() for c in _str_list(table.get("contains", []), "contains")),
        line_regex=_compile(_str_list(table.get("line_regex", []), "line_regex"), "line_regex"),
        fixed=tuple(fixed),
        all=gates("all"),
        any=gates("any"),
        not_=gates("not"),
    )


def _locate_line(text: str, rule_index: int | None, needle: str | None) -> int | None:
    """Best-effort line of a semantic error: inside the n-th `[[rules]]`, the line holding `needle`."""
    lines = text.split("\n")
    start, end = 0, len(lines)
    if rule_index is not None:
        headers = [i for i, ln in enumerate(lines) if ln.strip().startswith("[[rules]]")]
        if rule_index < len(headers):
            start = headers[rule_index]
            end = headers[rule_index + 1] if rule_index + 1 < len(headers) else len(lines)
        if not needle:
            return start + 1
    else:
        firsts = [i for i, ln in enumerate(lines) if ln.strip().startswith("[")]
        end = firsts[0] if firsts else len(lines)
    if needle:
        for i in range(start, end):
            if needle in lines[i]:
                return i + 1
    return None


def parse_manifest(text: str, path: str = "<string>", origin: str = "bundled") -> Manifest:
    """Parse and validate one manifest; raises ManifestError with a line where it can."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"at line (\d+)", str(exc))
        raise ManifestError(f"bad TOML: {exc}", int(m.group(1)) if m else None) from None
    for key in data:
        if key not in _MANIFEST_KEYS and key not in _HERDR_MANIFEST_IGNORED:
            raise ManifestError(f"unknown key {key!r}", _locate_line(text, None, key))
    mid = data.get("id")
    if not isinstance(mid, str) or not mid:
        raise ManifestError("missing id (a non-empty string)", _locate_line(text, None, "id"))
    agent = data.get("agent", mid)
    if not isinstance(agent, str) or not agent:
        raise ManifestError("agent must be a non-empty string", _locate_line(text, None, "agent"))
    try:
        process = tuple(_str_list(data.get("process", []), "process"))
        aliases = tuple(_str_list(data.get("aliases", []), "aliases"))
    except ManifestError as exc:
        raise ManifestError(exc.reason, _locate_line(text, None, exc.reason.split()[0])) from None
    rows = data.get("rows", SCREEN_ROWS)
    if not isinstance(rows, int) or isinstance(rows, bool) or not 1 <= rows <= 1000:
        raise ManifestError("rows must be an integer 1..1000", _locate_line(text, None, "rows"))
    raw_rules = data.get("rules", [])
    if not isinstance(raw_rules, list):
        raise ManifestError("rules must be an array of tables ([[rules]])", _locate_line(text, None, "rules"))
    rules: list[Rule] = []
    for i, raw in enumerate(raw_rules):
        try:
            rules.append(_parse_rule(raw, i))
        except ManifestError as exc:
            needle = _needle(exc.reason)
            raise ManifestError(f"rule {i + 1}: {exc.reason}", _locate_line(text, i, needle)) from None
    rules.sort(key=lambda r: (-r.priority, r.index))
    return Manifest(mid, agent, process, aliases, tuple(rules), rows, path, origin)


def _needle(reason: str) -> str | None:
    m = re.search(r"regex '((?:[^'\\]|\\.)*)'", reason) or re.search(r"regex \"([^\"]*)\"", reason)
    if m:
        return m.group(1).replace("\\\\", "\\")[:20]
    m = re.search(r"(?:unknown key|unknown state|unknown kind|unknown region) '([^']*)'", reason)
    if m:
        return m.group(1)
    m = re.match(r"(\w+) must", reason)
    return m.group(1) if m else None


def _parse_rule(raw: Any, index: int) -> Rule:
    if not isinstance(raw, Mapping):
        raise ManifestError("a rule must be a table")
    state = raw.get("state")
    if state is None:
        raise ManifestError("missing state")
    if state not in RULE_STATES:
        raise ManifestError(f"unknown state {state!r} (one of {', '.join(sorted(RULE_STATES))})")
    kind = raw.get("kind")
    if kind is not None and kind not in KINDS:
        raise ManifestError(f"unknown kind {kind!r} (one of {', '.join(sorted(KINDS))})")
    if kind is not None and state != "blocked":
        raise ManifestError("kind counts only with state = 'blocked'")
    priority = raw.get("priority", 0)
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise ManifestError("priority must be an integer")
    rid = raw.get("id", f"rule{index + 1}")
    if not isinstance(rid, str):
        raise ManifestError("id must be a string")
    region = _normalise_region(raw.get("region", "screen"))
    gate = _parse_gate(raw, region, _RULE_KEYS, "rule")
    if not gate.regions():
        raise ManifestError(
            "a rule needs at least one condition (regex, contains, line_regex, screen, title…)"
        )
    if raw.get("skip_state_update") is True:
        state = "unknown"
    native = gate.regions() <= {"title", "progress"}
    return Rule(rid, state, kind, priority, index, gate, native)


# ---------------------------------------------------------------- rule sets


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
