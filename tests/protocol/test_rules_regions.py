"""Regions cut once per screen read exactly what `region_text` reads (TA-2, RI-9).

`Manifest.match` splits a screen into lines once and slices every region from them
(and keeps the last screen's regions for the next reading of the same screen). That
must never change what a rule sees: for any screen, each region's text and lines are
those `region_text` gives.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from paneboard_protocol.rules import _Screen, _screen_of, _Texts, parse_manifest, region_text

REGIONS = [
    "screen",
    "title",
    "progress",
    "after_last_rule",
    "bottom_lines(1)",
    "bottom_lines(3)",
    "top_lines(2)",
    "top_lines(20)",
]
line = st.sampled_from(["", "  ", "text", "❯ ", "────────────", "  ─────────  ", "Esc to cancel", "\r"])


@settings(max_examples=300, deadline=None)
@given(st.lists(line, max_size=12), st.text(max_size=5), st.sampled_from(["", "4;1;5"]))
def test_regions_match_region_text(lines, title, progress):
    screen = "\n".join(lines)
    texts = _Texts(_Screen(screen.split("\n")), title, progress)
    for region in REGIONS:
        want = region_text(region, screen, title, progress)
        assert texts.get(region) == want, region
        assert texts.lines(region) == want.split("\n"), region
        assert texts.folded(region) == want.casefold(), region


def test_a_screen_read_again_reuses_its_regions_and_a_new_one_does_not():
    m = parse_manifest('id = "t"\n[[rules]]\nstate = "idle"\nregion = "bottom_lines(1)"\ncontains = ["❯"]\n')
    assert m.match("work\n❯ \n\n") is not None
    first = _screen_of("work\n❯ \n\n", m.rows)
    assert _screen_of("work\n❯ \n\n", m.rows) is first
    assert m.match("❯ \nworking") is None
    assert _screen_of("work\n❯ \n\n", m.rows) is not first
