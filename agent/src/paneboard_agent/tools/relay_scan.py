"""Find the 7501 probe (and, for `--wrap`, status reports) in a program's output stream.

The relay must notice `OSC 7501 ; ?` the moment its terminator passes, even when the
sequence is split across reads (F-4), without slowing the bulk of the output, and
without being fooled by look-alikes inside DCS/APC strings such as a tmux passthrough
envelope (F-2: their payloads are never read as OSCs). This is a small tokeniser with
7-bit controls only (F-1); memory is bounded (F-3): an OSC payload is kept only up to
`cap` bytes. Pure: bytes in, `Found` out; the relay does the I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

GROUND, ESCAPE, OSC, OSC_ESC, STRING, STRING_ESC = range(6)

_PROBE_BODY = b"7501;?"
_REPORT_PREFIX = b"7501;"
_AGENT_PREFIX = b"1337;SetUserVar=THINKTERM_AGENT="
_OSC_SPECIAL = re.compile(rb"[\x00-\x1f]")
MAX_OSC = 4096  # P7501-20: a longer sequence is not a report


@dataclass(frozen=True, slots=True)
class Found:
    """A complete sequence whose last byte is `chunk[end - 1]` of the chunk just fed.

    `kind` is "probe" (the exact `?` body, P7501-10) or "report" (an OSC 7501 report or
    a THINKTERM_AGENT user variable); `seq` is the sequence as a reader sees it (C0
    controls inside the payload dropped, F-1), `terminator` "bel" or "st".
    """

    kind: Literal["probe", "report"]
    end: int
    terminator: Literal["bel", "st"]
    seq: bytes


class OutputScanner:
    """Incremental: `feed(chunk)` returns what completed inside that chunk, in order."""

    def __init__(self, reports: bool = False) -> None:
        self.reports = reports
        self.cap = MAX_OSC if reports else len(_PROBE_BODY)
        self.state = GROUND
        self.payload = bytearray()
        self.overflow = False

    def _finish(self, end: int, terminator: Literal["bel", "st"], out: list[Found]) -> None:
        body = bytes(self.payload)
        self.state = GROUND
        self.payload.clear()
        if self.overflow:
            self.overflow = False
            return
        term = b"\x07" if terminator == "bel" else b"\x1b\\"
        if body == _PROBE_BODY:
            out.append(Found("probe", end, terminator, b"\x1b]" + body + term))
        elif self.reports and (
            (body.startswith(_REPORT_PREFIX) and not body.startswith(_PROBE_BODY))
            or body.startswith(_AGENT_PREFIX)
        ):
            out.append(Found("report", end, terminator, b"\x1b]" + body + term))

    def feed(self, chunk: bytes) -> list[Found]:
        out: list[Found] = []
        i, n = 0, len(chunk)
        while i < n:
            state = self.state
            if state == GROUND:
                j = chunk.find(b"\x1b", i)
                if j < 0:
                    return out
                self.state = ESCAPE
                i = j + 1
            elif state == ESCAPE:
                b = chunk[i]
                i += 1
                if b == 0x5D:  # ]
                    self.state = OSC
                    self.payload.clear()
                    self.overflow = False
                elif b in (0x50, 0x58, 0x5E, 0x5F):  # P X ^ _ : DCS SOS PM APC
                    self.state = STRING
                elif b != 0x1B:
                    self.state = GROUND
            elif state == OSC:
                m = _OSC_SPECIAL.search(chunk, i)
                j = m.start() if m else n
                if j > i and not self.overflow:
                    room = self.cap - len(self.payload)
                    if j - i > room:
                        self.overflow = True
                        self.payload.clear()
                    else:
                        self.payload += chunk[i:j]
                if not m:
                    return out
                b = chunk[j]
                i = j + 1
                if b == 0x07:
                    self._finish(i, "bel", out)
                elif b == 0x1B:
                    self.state = OSC_ESC
                elif b in (0x18, 0x1A):  # CAN, SUB abort
                    self.state = GROUND
                    self.payload.clear()
                # any other C0 control inside the payload is dropped (F-1)
            elif state == OSC_ESC:
                if chunk[i] == 0x5C:  # backslash: ST
                    i += 1
                    self._finish(i, "st", out)
                else:  # ESC + anything else ends the OSC unsent (F-1); reprocess the byte
                    self.payload.clear()
                    self.state = ESCAPE
            elif state == STRING:
                j = chunk.find(b"\x1b", i)
                if j < 0:
                    return out
                self.state = STRING_ESC
                i = j + 1
            else:  # STRING_ESC
                b = chunk[i]
                if b == 0x5C:
                    self.state = GROUND
                    i += 1
                elif b == 0x1B:  # doubled ESC inside tmux passthrough: still inside
                    self.state = STRING
                    i += 1
                else:
                    self.state = ESCAPE
        return out
