"""The shared configuration checker: msgspec's errors as one line in the file's words,
naming the file, the key and a fix, for Structs of its own (not the agent's or the
server's, whose messages their own tests pin)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from msgspec import Meta, Struct, field
from paneboard_protocol.settings import ConfigError, Invalid, convert, read_toml


class Entry(Struct, forbid_unknown_fields=True):
    name: Annotated[str, Meta(min_length=1)] = "x"
    kind: Literal["a", "b"] = "a"
    tags: list[str] = []
    after: Annotated[float, Meta(gt=0)] | None = None
    to: str | None = None

    def __post_init__(self) -> None:
        if (self.after is None) != (self.to is None):
            raise Invalid("to", "after and to go together", "give both, or neither")


class Section(Struct, forbid_unknown_fields=True):
    port: Annotated[int, Meta(ge=1, le=65535)] = 8765
    ratio: Annotated[float, Meta(ge=0, le=1, examples=[0.5])] = 0.25
    on: bool = False
    entries: list[Entry] = []

    def __post_init__(self) -> None:
        if len({e.name for e in self.entries}) != len(self.entries):
            raise Invalid(
                f"entries[{len(self.entries) - 1}].name", "used twice", "give each entry its own name"
            )


class Top(Struct, forbid_unknown_fields=True):
    section: Section = field(default_factory=Section)
    level: int = 3


def _error(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as e:
        convert(data, Top, "f.toml")
    return str(e.value)


@pytest.mark.parametrize(
    ("data", "want"),
    [
        ({"section": {"prot": 1}}, "f.toml: section.prot: unknown key; did you mean port?"),
        ({"levle": 1}, "f.toml: levle: unknown key; did you mean level?"),
        ({"zzz": 1}, "f.toml: zzz: unknown key; remove it (known keys: section, level)"),
        (
            {"section": {"port": "80"}},
            'f.toml: section.port: expected an integer from 1 to 65535, got the string "80"; '
            "e.g. port = 8765",
        ),
        (
            {"section": {"port": 0}},
            "f.toml: section.port: expected an integer from 1 to 65535, got 0; e.g. port = 8765",
        ),
        (
            {"section": {"ratio": 2}},
            "f.toml: section.ratio: expected a number from 0 to 1, got 2; e.g. ratio = 0.5",
        ),
        ({"section": {"on": 1}}, "f.toml: section.on: expected true or false, got 1; e.g. on = false"),
        (
            {"section": 3},
            "f.toml: section: expected a table ([section]), got 3; write it as a [section] table",
        ),
        (
            {"section": {"entries": {"name": "a"}}},
            "f.toml: section.entries: expected an array of tables ([[section.entries]]), got a table; "
            "write each entry as a [[section.entries]] table",
        ),
        (
            {"section": {"entries": [{"kind": "c"}]}},
            'f.toml: section.entries[0].kind: expected one of "a", "b", got the string "c"; e.g. kind = "a"',
        ),
        (
            {"section": {"entries": [{"tags": ["t", 7]}]}},
            'f.toml: section.entries[0].tags[1]: expected a string, got 7; e.g. tags = ["..."]',
        ),
        (
            {"section": {"entries": [{"after": 5}]}},
            "f.toml: section.entries[0].to: after and to go together; give both, or neither",
        ),
        (
            {"section": {"entries": [{"name": "a"}, {"name": "a"}]}},
            "f.toml: section.entries[1].name: used twice; give each entry its own name",
        ),
        (
            {"section": {"entries": [{"after": 0, "to": "x"}]}},
            "f.toml: section.entries[0].after: expected a number greater than 0, got 0; e.g. after = 1",
        ),
    ],
)
def test_each_error_names_the_file_the_key_and_a_fix(data: dict[str, Any], want: str) -> None:
    assert _error(data).startswith(want), _error(data)


def test_what_the_file_says_is_shown_bounded_and_on_one_line() -> None:
    key = "\x1b[2J\nevil" * 50
    got = _error({key: 1})
    assert "\n" not in got and "\x1b" not in got and len(got) < 300, got
    got = _error({"section": {"port": "\x1b]0;x\x07" * 100}})
    assert "\n" not in got and "\x1b" not in got and "\x07" not in got and len(got) < 300, got


def test_good_data_passes_and_keeps_its_defaults() -> None:
    top = convert({"section": {"entries": [{"name": "a", "after": 1, "to": "b"}]}}, Top, "f.toml")
    assert (top.level, top.section.port, top.section.entries[0].after) == (3, 8765, 1.0)


def test_a_table_read_on_its_own_is_named_under_its_header() -> None:
    with pytest.raises(ConfigError, match=r"^f\.toml: section\.port: expected an integer"):
        convert({"port": 0}, Section, "f.toml", at="section")


def test_reading_names_the_file_and_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.toml: cannot read: .*; check the path$"):
        read_toml(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("a = [")
    with pytest.raises(ConfigError, match=r"bad\.toml: not valid TOML: .*; fix the syntax there$"):
        read_toml(bad)
    bad.write_bytes(b"a = '\xff'")
    with pytest.raises(
        ConfigError, match=r"bad\.toml: not valid TOML: not UTF-8 text; save the file as UTF-8$"
    ):
        read_toml(bad)
    good = tmp_path / "good.toml"
    good.write_text("[section]\nport = 1\n")
    assert convert(read_toml(good), Top, str(good)).section.port == 1


class Needs(Struct, forbid_unknown_fields=True):
    url: Annotated[str, Meta(min_length=1)]


class Holder(Struct, forbid_unknown_fields=True):
    need: Needs | None = None


def test_a_missing_required_key_says_what_to_add() -> None:
    with pytest.raises(ConfigError) as e:
        convert({"need": {}}, Holder, "f.toml")
    assert str(e.value) == "f.toml: need.url: missing; add it (a non-empty string)"
