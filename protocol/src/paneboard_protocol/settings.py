"""A TOML configuration checked against msgspec Structs, the one way the collector and
the server check theirs.

Why a helper: msgspec finds every mistake (unknown keys with `forbid_unknown_fields`,
types, `Meta` ranges, `__post_init__` checks across fields) but says it in its own
words and JSON paths (``Expected `int` <= 65535 - at `$.server.port` ``), and not
what to do. Here every error is one line in the file's words:

    config.toml: server.port: expected an integer from 1 to 65535, got 70000; e.g. port = 8765

The Structs carry all there is to say: the field's type and range (the problem), its
default or a `Meta(examples=[...])` (the fix), a `Meta(description=...)` where the
type alone says too little. A check msgspec cannot express raises `Invalid` from
`__post_init__`, naming its field, so the message names the key and not only its table.
Pure: no I/O but `read_toml`.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from msgspec import inspect as mi

T = TypeVar("T")

# Bounds on what one message may carry of the file's own text (it is untrusted: a key or
# a value may be long or hold control characters; json.dumps escapes those).
SHOW_MAX = 60
KNOWN_MAX = 12

_AT = re.compile(r" - at `\$(?P<path>(?:\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])*)`$")
_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")
_BARE = re.compile(r"[A-Za-z0-9_-]{1,60}")


class ConfigError(Exception):
    """One line: the file, the key, what is wrong and the fix."""


class Invalid(ValueError):
    """Raised by a Struct's `__post_init__` for a check msgspec's types cannot say:
    `key` is the field (or a path below the Struct, `channels[1].escalate_to`) that is
    wrong, so the message names it rather than the table around it."""

    def __init__(self, key: str, problem: str, fix: str) -> None:
        super().__init__(f"{key}: {problem}; {fix}")
        self.key = key
        self.problem = problem
        self.fix = fix


def read_toml(path: str | Path, name: str | None = None) -> dict[str, Any]:
    """The TOML table in `path`; ConfigError naming `name` (default: the path) if it cannot
    be read or is not TOML."""
    shown = name or str(path)
    try:
        text = Path(path).expanduser().read_bytes().decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"{shown}: cannot read: {exc.strerror or exc}; check the path") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{shown}: not valid TOML: not UTF-8 text; save the file as UTF-8") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{shown}: not valid TOML: {exc}; fix the syntax there") from None


def convert(data: Mapping[str, Any], kind: type[T], source: str, at: str = "") -> T:
    """`data` (a TOML table) as `kind`, checked strictly (a quoted number is not a number);
    ConfigError in one line naming `source`, the key (under `at`, the table `data` was
    read from) and the fix."""
    try:
        return msgspec.convert(data, kind, strict=True)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{source}: {explain(exc, kind, data, at)}") from None


def explain(exc: msgspec.ValidationError, kind: Any, data: Any, at: str = "") -> str:
    """`KEY: what is wrong; the fix` for msgspec's error about `data` as `kind`."""
    text = str(exc)
    m = _AT.search(text)
    steps = [(n, int(i) if i else None) for n, i in _STEP.findall(m["path"])] if m else []
    cause = exc.__cause__
    node, value, key, default = _walk(mi.type_info(kind), data, steps, at)
    if isinstance(cause, Invalid):
        return f"{_join(key, cause.key)}: {cause.problem}; {cause.fix}"
    if text.startswith("Object contains unknown field"):
        return _unknown(node, value, key)
    if text.startswith("Object missing required field"):
        name = text.split("`")[1] if text.count("`") >= 2 else "?"
        field = _field(node, name)
        want = _describe(field.type, name) if field else "a value"
        return f"{_join(key, name)}: missing; add it ({want})"
    if cause is not None:  # a __post_init__ that did not say its field: its table
        return f"{key or '(top level)'}: {_line(str(cause))}; fix that value"
    leaf = _leaf(steps, at)
    header = re.sub(r"\[\d+\]", "", key)  # the table's name as its [header] says it
    if steps and steps[-1][1] is not None and isinstance(_unwrap(node, mi.StructType), mi.StructType):
        got = _show(value)
        return f"{key}: expected a table ([[{header}]]), got {got}; write each entry as a [[{header}]] table"
    want = _describe(node, header)
    return f"{key}: expected {want}, got {_show(value)}; {_fix(node, leaf, header, steps, default)}"


# -- walking msgspec's path through the type and the data --------------------------------


def _walk(node: Any, data: Any, steps: list[tuple[str, int | None]], at: str) -> tuple[Any, Any, str, Any]:
    """The type and the value msgspec's path leads to, its key as the file says it, and
    the field's default there (None: none, or a list item)."""
    key = at
    value = data
    default = None
    for name, index in steps:
        node = _unwrap(node, mi.ListType if index is not None else mi.StructType)
        if index is None:
            field = _field(node, name)
            node = field.type if field else None
            default = field.default if field and field.default is not msgspec.NODEFAULT else None
            if field and field.default_factory is not msgspec.NODEFAULT:
                default = field.default_factory()
            value = value.get(name) if isinstance(value, dict) else None
            key = _join(key, name)
        else:
            node = node.item_type if isinstance(node, mi.ListType) else None
            value = value[index] if isinstance(value, list) and index < len(value) else None
            key = f"{key}[{index}]"
            default = None
    return node, value, key, default


def _unwrap(node: Any, want: type) -> Any:
    """`node` without its metadata, and of a union the member of kind `want` (a path step
    into a list or a table says which member the value was taken as)."""
    if isinstance(node, mi.Metadata):
        node = node.type
    if isinstance(node, mi.UnionType):
        for t in node.types:
            t = t.type if isinstance(t, mi.Metadata) else t
            if isinstance(t, want):
                return t
    return node


def _field(node: Any, name: str) -> Any:
    node = _unwrap(node, mi.StructType)
    if isinstance(node, mi.StructType):
        for f in node.fields:
            if f.encode_name == name:
                return f
    return None


def _join(key: str, name: str) -> str:
    return f"{key}.{name}" if key else name


def _leaf(steps: list[tuple[str, int | None]], at: str) -> str:
    """The last key named on the path (a list item is written under its list's key)."""
    for name, index in reversed(steps):
        if index is None:
            return name
    return at.rsplit(".", 1)[-1] if at else ""


# -- the three parts of a message ------------------------------------------------------


def _unknown(node: Any, value: Any, key: str) -> str:
    node = _unwrap(node, mi.StructType)
    known = [f.encode_name for f in node.fields] if isinstance(node, mi.StructType) else []
    extra = [k for k in value if k not in known] if isinstance(value, dict) else []
    name = str(extra[0]) if extra else "?"
    close = difflib.get_close_matches(name, known, n=1)
    if close:
        fix = f"did you mean {close[0]}?"
    else:
        listed = ", ".join(known[:KNOWN_MAX]) + (", ..." if len(known) > KNOWN_MAX else "")
        fix = f"remove it (known keys: {listed})" if known else "remove it"
    shown = name if _BARE.fullmatch(name) else json.dumps(name[:SHOW_MAX])
    return f"{_join(key, shown)}: unknown key; {fix}"


def _describe(node: Any, leaf: str) -> str:
    """What a value of this type is, in TOML's words (`leaf`: the table's header, for a
    table or an array of tables)."""
    if isinstance(node, mi.Metadata):
        said = (node.extra_json_schema or {}).get("description")
        return str(said) if said else _describe(node.type, leaf)
    if isinstance(node, mi.UnionType):
        parts = [_describe(t, leaf) for t in node.types if not isinstance(t, mi.NoneType)]
        return " or ".join(dict.fromkeys(parts))
    if isinstance(node, mi.BoolType):
        return "true or false"
    if isinstance(node, mi.IntType | mi.FloatType):
        return ("an integer" if isinstance(node, mi.IntType) else "a number") + _range(node)
    if isinstance(node, mi.StrType):
        return "a non-empty string" if node.min_length else "a string"
    if isinstance(node, mi.LiteralType):
        return "one of " + ", ".join(json.dumps(v) for v in node.values)
    if isinstance(node, mi.ListType | mi.TupleType | mi.VarTupleType):
        item = _unwrap(node.item_type, mi.StructType) if hasattr(node, "item_type") else None
        if isinstance(item, mi.StructType):
            return f"an array of tables ([[{leaf}]])"
        if isinstance(item, mi.LiteralType):
            return "a list of " + ", ".join(json.dumps(v) for v in item.values)
        return f"a list of {_plural(_describe(item, leaf))}" if item is not None else "a list"
    if isinstance(node, mi.StructType):
        return f"a table ([{leaf}])"
    return "a value"


def _plural(one: str) -> str:
    return one.replace("a non-empty string", "non-empty strings").replace("a string", "strings")


def _range(node: Any) -> str:
    lo, lo_open = (node.gt, True) if node.gt is not None else (node.ge, False)
    hi, hi_open = (node.lt, True) if node.lt is not None else (node.le, False)
    if lo is not None and hi is not None and not lo_open and not hi_open:
        return f" from {lo:g} to {hi:g}"
    parts = []
    if lo is not None:
        parts.append(f"greater than {lo:g}" if lo_open else f"of at least {lo:g}")
    if hi is not None:
        parts.append(f"less than {hi:g}" if hi_open else f"of at most {hi:g}")
    return (" " + " and ".join(parts)) if parts else ""


def _fix(node: Any, leaf: str, header: str, steps: list[tuple[str, int | None]], default: Any) -> str:
    """A line that would do: the field's example, else its default, else one its type
    allows."""
    if isinstance(_unwrap(node, mi.StructType), mi.StructType):
        return f"write it as a [{header}] table of key = value lines"
    if isinstance(_unwrap(node, mi.ListType), mi.ListType) and isinstance(
        _unwrap(_unwrap(node, mi.ListType).item_type, mi.StructType), mi.StructType
    ):
        return f"write each entry as a [[{header}]] table"
    example = _example(node, default)
    if example is None:
        return f"give {leaf} {_describe(node, header)}"
    in_list = bool(steps) and steps[-1][1] is not None
    return f"e.g. {leaf} = {'[' + _toml(example) + ']' if in_list else _toml(example)}"


def _example(node: Any, default: Any = None) -> Any:
    if isinstance(node, mi.Metadata):
        examples = (node.extra_json_schema or {}).get("examples")
        return examples[0] if examples else _example(node.type, default)
    if isinstance(default, bool | int | float | str) or (isinstance(default, list | tuple) and default):
        return default
    if isinstance(node, mi.UnionType):
        for t in node.types:
            if not isinstance(t, mi.NoneType):
                return _example(t)
        return None
    if isinstance(node, mi.BoolType):
        return True
    if isinstance(node, mi.IntType | mi.FloatType):
        lo = node.ge if node.ge is not None else node.gt
        hi = node.le if node.le is not None else node.lt
        pick = lo if lo is not None else (hi if hi is not None else 1)
        if node.gt is not None:
            pick = node.gt + 1
        return int(pick) if isinstance(node, mi.IntType) else pick
    if isinstance(node, mi.LiteralType):
        return node.values[0]
    if isinstance(node, mi.StrType):
        return "..."
    if isinstance(node, mi.ListType):
        item = _example(node.item_type)
        return None if item is None else [item]
    return None


def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and math.isfinite(v):
        return f"{v:g}"
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    return json.dumps(v) if isinstance(v, str) else str(v)


def _show(value: Any) -> str:
    """The value as the file had it, bounded and on one line."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _line(repr(value))
    if isinstance(value, str):
        return "the string " + json.dumps(value[:SHOW_MAX] + ("..." if len(value) > SHOW_MAX else ""))
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return "a date/time" if value is not None else "nothing"


def _line(text: str) -> str:
    return json.dumps(text[:200])[1:-1]  # escapes newlines and control characters


__all__ = ["ConfigError", "Invalid", "convert", "explain", "read_toml"]
