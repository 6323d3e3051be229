"""The incremental scanner: raw pane bytes in, status events out (F-1 … F-5).

`Decoder().feed(chunk)` may be called with any split of the stream and yields exactly
the same events as one call with the whole stream (F-4): all state that spans a chunk
boundary lives on the instance, and every buffer is bounded (F-3), so memory stays flat
on any input. Plain text is never looked at byte by byte in Python: the ground state
jumps from one interesting escape to the next with one `translate` and `find` over the
chunk, and string states jump to their next terminator with a compiled regex.

Framing (7-bit controls only, as tmux tokenises; F-1):

* `ESC ]` opens an OSC; BEL or `ESC \\` ends it; CAN or SUB aborts it; ESC followed by
  anything else ends it without ST and starts a new escape — an OSC 7501 report or a
  SetUserVar cut this way counts as not sent, a title, progress or prompt mark as ended.
  C0 controls inside the payload are dropped. An OSC is at most 4096 bytes from `ESC` through its
  terminator (P7501-20); a longer one is discarded without being buffered.
* `ESC P`, `ESC _`, `ESC ^`, `ESC X` (DCS, APC, PM, SOS) are skipped whole until
  `ESC \\` (CAN/SUB abort, ESC + other byte cuts), except `ESC P tmux;` passthrough,
  whose inner ESCs are doubled: it is unwrapped (at most 64 KiB) and decoded by a
  nested decoder (nesting up to 4 deep); its events carry the envelope's offset.
* `ESC c` (RIS) yields `Reset`. As in a VT parser, C0 controls between ESC and its
  final byte are executed and ignored; an intermediate byte (0x20–0x2F) makes it some
  other escape sequence, which is ignored.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Literal

from paneboard_protocol import osc7501, thinkterm
from paneboard_protocol._quote import quote
from paneboard_protocol.events import Event, Progress, PromptMark, Rejected, Reset, Title

MAX_OSC = 4096  # bytes from ESC through the terminator (P7501-20)
MAX_PASSTHROUGH = 65536  # unwrapped bytes of one tmux passthrough envelope
MAX_PASSTHROUGH_DEPTH = 4  # envelopes inside envelopes
_MAX_ESC_FILL = 64  # C0 bytes tolerated between ESC and its final byte
_HEADER = 48  # payload bytes kept after an overflow, to name the protocol in the rejection

_ESC, _BEL, _CAN, _SUB, _BSL = 0x1B, 0x07, 0x18, 0x1A, 0x5C

# The ground state looks for ESC followed by an interesting final byte or by a C0 control
# between ESC and its final byte. `re` checks that at every ESC (one byte in twelve of a
# TUI's output) in a byte loop; instead the chunk is translated once (ESC stays ESC, such a
# second byte becomes 0x01, every other byte 0x00) and `find(b"\x1b\x01")` then stops at
# exactly those ESCs: none is skipped unseen (F-1), and the other escapes cost nothing.
# The translation is made in windows of at most _SCAN_WINDOW bytes, so a huge chunk is
# not copied whole (F-3); a chunk up to that size is translated in one go, without a slice.
_GROUND_SECOND = b"]P_^Xc" + bytes(range(0x18)) + b"\x19\x1c\x1d\x1e\x1f"
_GROUND_MAP = bytes(1 if b in _GROUND_SECOND else _ESC if b == _ESC else 0 for b in range(256))
_GROUND_PAIR = b"\x1b\x01"
_SCAN_WINDOW = 1 << 17
_FILL_RUN = re.compile(rb"[\x00-\x17\x19\x1c-\x1f]{0,%d}" % _MAX_ESC_FILL)
_FINALS = frozenset(b"]P_^Xc")
_OSC_END_RE = re.compile(rb"[\x07\x18\x1a\x1b]")
_STR_END_RE = re.compile(rb"[\x18\x1a\x1b]")
# Every C0 control except the ones framing acts on never reaches a payload (F-1).
_C0 = bytes(range(0x20))
_PT_PREFIX = b"tmux;"
_DIGITS = re.compile(rb"-?[0-9]{1,10}")
_TITLE_CODES = {b"0": 0, b"1": 1, b"2": 2}
_NOT_SENT_WHEN_CUT = frozenset({"osc7501", "thinkterm", "uservar"})

# Scanner states.
_GROUND, _OSC, _OSC_ESC, _STR, _STR_ESC, _DCS, _PT, _PT_ESC = range(8)


def _proto_of(payload: bytes) -> str | None:
    """Which protocol a (possibly partial) OSC payload belongs to, for rejections.

    Only sequences paneboard reads are reported when discarded: an oversized OSC 52
    clipboard copy or a cut hyperlink is none of our business.
    """
    code, _, rest = payload.partition(b";")
    if code == b"7501":
        return "osc7501"
    if code == b"1337" and rest.startswith(b"SetUserVar="):
        name = rest[len(b"SetUserVar=") :]
        return "thinkterm" if name.startswith(thinkterm.AGENT_VAR.encode() + b"=") else "uservar"
    if code == b"9" and (rest == b"4" or rest.startswith(b"4;")):
        return "progress"
    if code in (b"0", b"1", b"2"):
        return "title"
    if code == b"133":
        return "prompt"
    return None


def _osc_name(payload: bytes) -> str:
    code = payload.partition(b";")[0]
    return f"OSC {code.decode('ascii', 'replace')}"


def _parse_progress(rest: bytes, offset: int) -> Event:
    """OSC 9;4;state[;percent] (ConEmu / Windows Terminal progress)."""
    parts = rest.split(b";")
    if len(parts) < 2 or not parts[1]:
        return Rejected(offset, proto="progress", reason="OSC 9;4 without a progress state")
    st = parts[1]
    if st not in (b"0", b"1", b"2", b"3", b"4"):
        return Rejected(offset, proto="progress", reason=f"unknown progress state {quote(st)} (0-4)")
    state = int(st)
    raw = parts[2] if len(parts) > 2 else b""
    percent: int | None = None
    if state in (1, 2, 4) and raw:
        if not raw.isdigit():
            return Rejected(
                offset, proto="progress", reason=f"progress percent {quote(raw)} is not an integer"
            )
        percent = min(int(raw), 100)  # Windows Terminal clamps
    return Progress(offset, state=state, percent=percent)


def _parse_prompt(rest: bytes, offset: int) -> Event | None:
    """OSC 133;A/B/C/D[;exit][;options] (FinalTerm shell integration)."""
    parts = rest.split(b";")
    mark = parts[0]
    if mark not in (b"A", b"B", b"C", b"D"):
        return None  # other marks (P, L, N, E ...) carry no status evidence
    exit_code: int | None = None
    if mark == b"D" and len(parts) > 1 and _DIGITS.fullmatch(parts[1]):
        exit_code = int(parts[1])
    return PromptMark(offset, mark=mark.decode(), exit=exit_code)  # type: ignore[arg-type]  # one of A B C D


def dispatch_osc(payload: bytes, offset: int, terminator: Literal["bel", "st"]) -> Event | None:
    """Turn one complete OSC payload (between `ESC ]` and ST, C0 removed) into an event."""
    code, semi, rest = payload.partition(b";")
    if code in _TITLE_CODES:  # the most frequent by far: spinners animate the title
        if not semi:
            return None
        return Title(offset, title=rest.decode("utf-8", "replace"), code=_TITLE_CODES[code])
    if code == b"7501":
        return osc7501.parse_report(rest, offset, terminator)
    if code == b"1337":
        if rest.startswith(b"SetUserVar="):
            return thinkterm.parse_setuservar(rest[len(b"SetUserVar=") :], offset)
        return None
    if code == b"9":
        if rest == b"4" or rest.startswith(b"4;"):
            return _parse_progress(rest, offset)
        return None
    if code == b"133":
        return _parse_prompt(rest, offset)
    return None


class Decoder:
    """Incremental scanner for one byte stream (one pane).

    `feed(data)` returns the events completed by `data`, in stream order; offsets are
    absolute in the stream. With `rejections=True`, every discarded report of a protocol
    paneboard reads also yields a `Rejected` with its reason. `close()` ends the
    stream (an unterminated report is then rejected) and makes the decoder reusable.
    """

    __slots__ = (
        "_buf",
        "_depth",
        "_esc_off",
        "_header",
        "_overflow",
        "_pfx",
        "_pos",
        "_raw",
        "_seq_off",
        "_state",
        "_tail",
        "_tail_off",
        "rejections",
    )

    def __init__(self, rejections: bool = False, *, _depth: int = 0) -> None:
        self.rejections = rejections
        self._depth = _depth
        self._pos = 0  # absolute offset of the next byte fed
        self._reset_state()

    def _reset_state(self) -> None:
        self._state = _GROUND
        self._tail = b""  # incomplete escape at the end of the last chunk (ground state)
        self._tail_off = 0
        self._buf = bytearray()  # OSC payload or unwrapped passthrough
        self._raw = 0  # OSC: raw bytes so far, ESC included; passthrough: unused
        self._overflow = False
        self._header = b""
        self._seq_off = 0  # offset of the current string's ESC
        self._esc_off = 0  # offset of a pending ESC inside a string
        self._pfx = 0  # bytes of "tmux;" matched so far

    @property
    def offset(self) -> int:
        """How many bytes have been fed in total."""
        return self._pos

    def feed(self, data: bytes) -> list[Event]:
        """Scan `data` (the next bytes of the stream) and return the events it completed."""
        out: list[Event] = []
        if not data:
            return out
        data = bytes(data)
        base = self._pos
        self._pos += len(data)
        if self._tail:
            data = self._tail + data
            base = self._tail_off
            self._tail = b""
        n = len(data)
        i = 0
        # data[lo:hi].translate(_GROUND_MAP), made when the ground state first needs it.
        scan, lo, hi = b"", 0, 0
        while i < n:
            state = self._state
            if state == _GROUND:
                # ground scan: j = next ESC to look at, or -1 (bench/decoder.py --compiled
                # measures this block replaced by a C function; keep it self-contained)
                while True:
                    if i >= hi - 1:  # no pair starting at i inside the window (i only grows)
                        lo, hi = i, i + _SCAN_WINDOW
                        if hi > n:
                            hi = n
                        scan = data[lo:hi].translate(_GROUND_MAP)  # data itself when it fits
                    j = scan.find(_GROUND_PAIR, i - lo)
                    if j >= 0:
                        j += lo
                        break
                    if hi == n:
                        break
                    i = hi - 1  # the window's last byte may start a pair with the next one
                # end of ground scan
                if j < 0:
                    if data[n - 1] == _ESC and n - 1 >= i:
                        self._tail = b"\x1b"
                        self._tail_off = base + n - 1
                    break
                e = j + 2
                final = data[j + 1]
                if final < 0x20:
                    # C0 between ESC and its final byte is executed, the escape kept (as in
                    # a VT parser and tmux). Rare, so handled here rather than in the scan.
                    e = _FILL_RUN.match(data, e - 1).end()  # type: ignore[union-attr]  # {0,n}: matches at any offset
                    if e == n:
                        self._tail = data[j:]
                        self._tail_off = base + j
                        break
                    final = data[e]
                    if final not in _FINALS:
                        i = e  # an intermediate, another ESC, ...: rescan from here
                        continue
                    e += 1
                i = e
                if final == 0x5D:  # ]
                    # Fast path: the whole OSC is in this chunk and within the limit.
                    t = _OSC_END_RE.search(data, e)
                    if t is not None:
                        k = t.start()
                        b = data[k]
                        if b == _BEL:
                            term_len = 1
                        elif b == _ESC and k + 1 < n and data[k + 1] == _BSL:
                            term_len = 2
                        else:
                            term_len = 0
                        if term_len and k + term_len - j <= MAX_OSC:
                            payload = data[e:k].translate(None, _C0)
                            if payload[1:2] == b";" and payload[:1] in _TITLE_CODES:
                                # Titles are most of all OSCs (spinners): skip the dispatcher.
                                out.append(
                                    Title(
                                        base + j,
                                        payload[2:].decode("utf-8", "replace"),
                                        _TITLE_CODES[payload[:1]],
                                    )
                                )
                            else:
                                event = dispatch_osc(payload, base + j, "bel" if term_len == 1 else "st")
                                if event is not None and (self.rejections or event.__class__ is not Rejected):
                                    out.append(event)
                            i = k + term_len
                            continue
                    self._seq_off = base + j
                    self._state = _OSC
                    self._raw = e - j
                    self._buf.clear()
                    self._overflow = False
                elif final == 0x50:  # P
                    self._seq_off = base + j
                    self._state = _DCS
                    self._pfx = 0
                elif final == 0x63:  # c
                    out.append(Reset(base + j))
                else:  # _ ^ X
                    self._seq_off = base + j
                    self._state = _STR
            elif state == _OSC:
                m = _OSC_END_RE.search(data, i)
                end = m.start() if m else n
                if end > i:
                    self._osc_take(data, i, end)
                if m is None:
                    break
                b = data[end]
                if b == _BEL:
                    self._osc_finish(out, "bel", 1)
                    i = end + 1
                elif b == _ESC:
                    if end + 1 == n:
                        self._state = _OSC_ESC
                        self._esc_off = base + end
                        break
                    if data[end + 1] == _BSL:
                        self._osc_finish(out, "st", 2)
                        i = end + 2
                    else:
                        self._osc_cut(out, data[end + 1 : end + 2])
                        i = end  # the ESC starts a new escape
                else:
                    self._osc_abort(out, "aborted by CAN" if b == _CAN else "aborted by SUB")
                    i = end + 1
            elif state == _OSC_ESC:  # the chunk before ended in ESC inside an OSC
                if data[i] == _BSL:
                    self._osc_finish(out, "st", 2)
                    i += 1
                else:
                    self._osc_cut(out, data[i : i + 1])
                    data, base, n, i, lo, hi = b"\x1b" + data[i:], self._esc_off, n - i + 1, 0, 0, 0
            elif state == _STR:
                m = _STR_END_RE.search(data, i)
                if m is None:
                    break
                end = m.start()
                if data[end] != _ESC:
                    self._state = _GROUND  # CAN/SUB
                    i = end + 1
                elif end + 1 == n:
                    self._state = _STR_ESC
                    self._esc_off = base + end
                    break
                else:
                    self._state = _GROUND
                    i = end + 2 if data[end + 1] == _BSL else end
            elif state == _STR_ESC:
                self._state = _GROUND
                if data[i] == _BSL:
                    i += 1
                else:
                    data, base, n, i, lo, hi = b"\x1b" + data[i:], self._esc_off, n - i + 1, 0, 0, 0
            elif state == _DCS:
                k = self._pfx
                take = min(len(_PT_PREFIX) - k, n - i)
                if data[i : i + take] != _PT_PREFIX[k : k + take]:
                    self._state = _STR  # some other DCS: skip it whole
                    continue
                i += take
                self._pfx = k + take
                if self._pfx == len(_PT_PREFIX):
                    # Too deep an envelope is still framed as one (its ESCs are paired), so
                    # its end is found where it really is; only its content is dropped.
                    self._state = _PT
                    self._buf.clear()
                    self._overflow = self._depth >= MAX_PASSTHROUGH_DEPTH
            elif state == _PT:
                m = _STR_END_RE.search(data, i)
                end = m.start() if m else n
                if end > i:
                    self._pt_take(data, i, end)
                if m is None:
                    break
                if data[end] != _ESC:
                    self._pt_abort(out, "aborted by CAN" if data[end] == _CAN else "aborted by SUB")
                    i = end + 1
                elif end + 1 == n:
                    self._state = _PT_ESC
                    self._esc_off = base + end
                    break
                else:
                    c = data[end + 1]
                    if c == _ESC:
                        self._pt_take(b"\x1b", 0, 1)
                        i = end + 2
                    elif c == _BSL:
                        self._pt_finish(out)
                        i = end + 2
                    else:
                        self._pt_abort(out, f"cut by an undoubled ESC {quote(data[end + 1 : end + 2])}")
                        i = end
            else:  # _PT_ESC
                c = data[i]
                if c == _ESC:
                    self._state = _PT
                    self._pt_take(b"\x1b", 0, 1)
                    i += 1
                elif c == _BSL:
                    self._pt_finish(out)
                    i += 1
                else:
                    self._pt_abort(out, f"cut by an undoubled ESC {quote(data[i : i + 1])}")
                    data, base, n, i, lo, hi = b"\x1b" + data[i:], self._esc_off, n - i + 1, 0, 0, 0
        return out

    def close(self) -> list[Event]:
        """End of stream: reject an unterminated report, and start afresh for a new stream."""
        out: list[Event] = []
        where = (
            "at the end of its tmux passthrough envelope (double every ESC inside it, the ST's too)"
            if self._depth
            else "at end of input"
        )
        if self._state in (_OSC, _OSC_ESC):
            self._osc_abort(out, f"unterminated {where}")
        elif self._state in (_PT, _PT_ESC):
            self._pt_abort(out, f"unterminated {where}")
        self._reset_state()
        self._pos = 0
        return out

    # -- helpers -------------------------------------------------------------------

    def _reject(self, out: list[Event], proto: str, reason: str) -> None:
        if self.rejections:
            out.append(Rejected(self._seq_off, proto=proto, reason=reason))

    def _osc_take(self, data: bytes, start: int, end: int) -> None:
        before = self._raw
        self._raw = before + end - start
        if self._overflow:
            return
        if self._raw + 1 > MAX_OSC:  # no terminator can make it fit any more: stop buffering
            self._overflow = True
            need = _HEADER - len(self._buf)
            if need > 0:
                self._buf += data[start : start + need].translate(None, _C0)
            self._header = bytes(self._buf[:_HEADER])
            self._buf.clear()
        else:
            self._buf += data[start:end].translate(None, _C0)

    def _osc_payload_head(self) -> bytes:
        return self._header if self._overflow else bytes(self._buf[:_HEADER])

    def _osc_finish(self, out: list[Event], terminator: Literal["bel", "st"], term_len: int) -> None:
        self._state = _GROUND
        if self._overflow or self._raw + term_len > MAX_OSC:
            head = self._osc_payload_head()
            proto = _proto_of(head)
            if proto and self.rejections:
                out.append(
                    Rejected(
                        self._seq_off,
                        proto=proto,
                        reason=f"{_osc_name(head)} sequence longer than {MAX_OSC} bytes; discarded",
                    )
                )
        else:
            event = dispatch_osc(bytes(self._buf), self._seq_off, terminator)
            if event is not None and (self.rejections or not isinstance(event, Rejected)):
                out.append(event)
        self._buf.clear()
        self._overflow = False

    def _osc_cut(self, out: list[Event], after: bytes) -> None:
        """ESC + another byte ends an OSC without ST (F-1): a 7501 report or a user variable
        cut this way counts as not sent; anything else (a title, progress, a prompt mark)
        ends there, as tmux reads it."""
        proto = _proto_of(self._osc_payload_head())
        if proto in _NOT_SENT_WHEN_CUT:
            self._osc_abort(out, f"cut by ESC {quote(after)} before its terminator")
        else:
            self._osc_finish(out, "st", 0)

    def _osc_abort(self, out: list[Event], why: str) -> None:
        self._state = _GROUND
        head = self._osc_payload_head()
        proto = _proto_of(head)
        if proto:
            self._reject(out, proto, f"{_osc_name(head)} {why}; not sent")
        self._buf.clear()
        self._overflow = False

    def _pt_take(self, data: bytes, start: int, end: int) -> None:
        if self._overflow:
            return
        if len(self._buf) + end - start > MAX_PASSTHROUGH:
            self._overflow = True
            self._buf.clear()
        else:
            self._buf += data[start:end]

    def _pt_finish(self, out: list[Event]) -> None:
        self._state = _GROUND
        if self._overflow and self._depth >= MAX_PASSTHROUGH_DEPTH:
            self._reject(out, "framing", f"tmux passthrough nested more than {self._depth} deep; discarded")
        elif self._overflow:
            self._reject(out, "framing", f"tmux passthrough longer than {MAX_PASSTHROUGH} bytes; discarded")
        else:
            inner = Decoder(self.rejections, _depth=self._depth + 1)
            events = inner.feed(bytes(self._buf)) + inner.close()
            out.extend(dataclasses.replace(e, offset=self._seq_off) for e in events)
        self._buf.clear()
        self._overflow = False

    def _pt_abort(self, out: list[Event], why: str) -> None:
        self._state = _GROUND
        self._reject(out, "framing", f"tmux passthrough {why}; discarded")
        self._buf.clear()
        self._overflow = False


__all__ = ["MAX_OSC", "MAX_PASSTHROUGH", "MAX_PASSTHROUGH_DEPTH", "Decoder", "dispatch_osc"]
