"""Small builders shared by the decoder tests: real bytes, no mocks."""

from __future__ import annotations

import base64

from paneboard_protocol import Decoder
from paneboard_protocol.events import Event

ESC = b"\x1b"
ST = b"\x1b\\"
BEL = b"\x07"
SPEC_MSG_B64 = "QXBwbHkgMyB0byBhZGQsIDEgdG8gY2hhbmdlLCAwIHRvIGRlc3Ryb3k/"
SPEC_EXAMPLE = (
    b"\x1b]7501;state=blocked:kind=permission:app=terraform:msg=" + SPEC_MSG_B64.encode() + b"\x1b\\"
)


def b64(text: str | bytes) -> str:
    raw = text.encode() if isinstance(text, str) else text
    return base64.b64encode(raw).decode()


def osc(body: str | bytes, term: bytes = BEL) -> bytes:
    raw = body.encode() if isinstance(body, str) else body
    return b"\x1b]" + raw + term


def r7501(body: str, term: bytes = BEL) -> bytes:
    return osc("7501;" + body, term)


def agent_var(value: str | bytes, name: str = "THINKTERM_AGENT") -> bytes:
    return osc(f"1337;SetUserVar={name}={b64(value)}")


def decode(data: bytes, rejections: bool = True) -> list[Event]:
    d = Decoder(rejections=rejections)
    return d.feed(data) + d.close()


def decode_one(data: bytes, rejections: bool = True) -> Event:
    events = decode(data, rejections)
    assert len(events) == 1, events
    return events[0]


def decode_chunked(data: bytes, sizes: list[int], rejections: bool = True) -> list[Event]:
    d = Decoder(rejections=rejections)
    out: list[Event] = []
    pos = 0
    k = 0
    while pos < len(data):
        size = sizes[k % len(sizes)] if sizes else len(data)
        out += d.feed(data[pos : pos + size])
        pos += size
        k += 1
    return out + d.close()
