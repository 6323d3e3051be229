"""Screen-rule manifests (TA-2, TA-17, TA-18, TA-19): TOML files read with `tomllib`.

A manifest says which foreground processes are an agent and how that agent's screen
(and the title / OSC 9;4 progress it emitted) reads as a state. The format began as
herdr's and grew the way herdr's manifests grew (regions, case-insensitive
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

from paneboard_protocol.rules.answers import Answer
from paneboard_protocol.rules.errors import ManifestError, RuleError
from paneboard_protocol.rules.gates import RULE_STATES, Gate, Manifest, Match, Rule, RuleState
from paneboard_protocol.rules.loading import RuleSet, default_user_dir, load_files, load_rules
from paneboard_protocol.rules.parse import parse_manifest
from paneboard_protocol.rules.patterns import translate_regex
from paneboard_protocol.rules.regions import SCREEN_ROWS, _Screen, _screen_of, _Texts, region_text

__all__ = [
    "RULE_STATES",
    "SCREEN_ROWS",
    "Answer",
    "Gate",
    "Manifest",
    "ManifestError",
    "Match",
    "Rule",
    "RuleError",
    "RuleSet",
    "RuleState",
    "_Screen",
    "_Texts",
    "_screen_of",
    "default_user_dir",
    "load_files",
    "load_rules",
    "parse_manifest",
    "region_text",
    "translate_regex",
]
