"""Every rule of spec sections 1, 1a and 2a is cited by at least one decoder test.

Also the rules whose effect lives in the classifier (P7501-7, 8, 9, 11, 12, 21, 22): the
decoder's share of each — what it must yield, and never invent — is tested here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from decoder_helpers import ST, decode, r7501
from paneboard_protocol import Decoder
from paneboard_protocol.events import Probe, PromptMark, Reset, StatusReport

RULES = (
    [f"P7501-{n}" for n in range(1, 23)] + [f"F-{n}" for n in range(1, 6)] + [f"TA-{n}" for n in range(7, 12)]
)
HERE = Path(__file__).parent


def test_every_rule_is_cited_by_a_test():
    text = "\n".join(p.read_text() for p in HERE.glob("test_decode*.py"))
    missing = []
    for rule in RULES:
        underscored = rule.replace("-", "_")
        # The rule id in a test name, or as the start of a pytest.param id.
        if not re.search(rf"(def test_\w*{underscored}(?!\d)|id=\"{rule}(?!\d))", text):
            missing.append(rule)
    assert missing == []


def test_P7501_7_P7501_9_decoder_never_invents_or_asks():
    # No heartbeat, nothing read back: events come only from bytes fed, never from time
    # or silence, and the decoder has no way to write anything.
    d = Decoder(rejections=True)
    assert d.feed(r7501("state=working")) != []
    for _ in range(100):
        assert d.feed(b"plain output\r\n") == []
    assert d.close() == []
    assert not any(name for name in dir(d) if name.startswith(("write", "send", "reply")))


def test_P7501_8_prompt_start_is_surfaced_for_the_classifier():
    events = decode(r7501("state=working") + b"\x1b]133;D;0\x07\x1b]133;A\x07" + r7501("state=done"))
    assert [type(e) for e in events] == [StatusReport, PromptMark, PromptMark, StatusReport]
    assert events[2].mark == "A"


def test_P7501_11_report_without_probe_decodes():
    assert decode(r7501("state=done"))[0].state == "done"


def test_P7501_12_da1_query_and_reply_are_not_events():
    # The probe followed by DA1 `CSI c`, and tmux's own DA1 answer, end in 'c' but are not RIS.
    events = decode(b"\x1b]7501;?\x1b\\\x1b[c\x1b[?1;2;4c\x1b[>0c")
    assert events == [Probe(0, terminator="st")]


def test_P7501_13_claude_code_startup_probes():
    startup = b"\x1b[>0q\x1b[?u" + r7501("?", ST) + b"\x1b[c"
    assert decode(startup) == [Probe(9, terminator="st")]


def test_P7501_21_ris_cuts_an_unfinished_string_and_resets():
    # ESC c inside an OSC ends it without ST (F-1) and is itself a reset.
    assert decode(b"\x1b]7501;state=idle\x1bc", rejections=False) == [Reset(17)]
    assert decode(b"\x1b_apc\x1bc") == [Reset(5)]


@pytest.mark.parametrize("n", [2, 5])
def test_P7501_22_events_keep_stream_order_for_ties(n):
    data = b"".join(r7501(f"state=working:id=t{k}") for k in range(n))
    events = decode(data)
    assert [e.id for e in events] == [f"t{k}" for k in range(n)]
    assert [e.offset for e in events] == sorted(e.offset for e in events)
