"""F-4 carried through the classifier: the same bytes in any chunking classify the same."""

from __future__ import annotations

import base64

from hypothesis import given, settings
from hypothesis import strategies as st
from paneboard_protocol.classifier import PaneClassifier
from paneboard_protocol.decoder import Decoder
from paneboard_protocol.rules import load_rules

RULES = load_rules("/nonexistent-paneboard-rules")
ESC = b"\x1b"


def _agent(value: str) -> bytes:
    return ESC + b"]1337;SetUserVar=THINKTERM_AGENT=" + base64.b64encode(value.encode()) + b"\x07"


PIECES = [
    ESC + b"]7501;state=working:app=claude-code:progress=40\x07",
    ESC + b"]7501;state=blocked:id=task_1.a:kind=question:msg=UHJvY2VlZD8=" + ESC + b"\\",
    ESC + b"]7501;state=done:id=b\x07",
    ESC + b"]7501;state=clear:id=task_1.a\x07",
    ESC + b"]7501;state=error:id=b/c\x07",
    ESC + b"]7501;state=clear\x07",
    _agent("v1;agent=my-agent;state=blocked;ts=1800000000"),
    _agent("v1;agent=my-agent;state=thinking"),
    _agent("v1;agent=my-agent;state=idle;ended=1"),
    ESC + b"]0;\xe2\xa0\x8b spinning\x07",
    ESC + b"]2;\xe2\x9c\xb3 Claude Code\x07",
    ESC + b"]9;4;1;30\x07",
    ESC + b"]9;4;0;\x07",
    ESC + b"]133;A\x07",
    ESC + b"c",
    ESC + b"Ptmux;" + ESC + ESC + b"]7501;state=blocked:app=x\x07" + ESC + b"\\",
    "plain output ✻ with text\r\n".encode(),
]


def _classify(chunks: list[bytes], process: str | None) -> object:
    c = PaneClassifier(RULES)
    c.set_process(1_800_000_000, process, 1)
    c.set_screen(1_800_000_000, "❯ ")
    d = Decoder(rejections=True)
    for chunk in chunks:
        c.feed(1_800_000_001, d.feed(chunk))
    c.feed(1_800_000_001, d.close())
    return c.classification(1_800_000_010)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=10),
    st.lists(st.integers(1, 40), max_size=30),
    st.sampled_from([None, "claude", "mytool"]),
)
def test_any_chunking_gives_the_same_classification(pieces, cuts, process):
    data = b"".join(pieces)
    chunks, i = [], 0
    for n in cuts:
        if i >= len(data):
            break
        chunks.append(data[i : i + n])
        i += n
    chunks.append(data[i:])
    assert _classify(chunks, process) == _classify([data], process)
    assert _classify([bytes([b]) for b in data], process) == _classify([data], process)
