"""OSC 1337 `SetUserVar=NAME=<base64>` and the THINKTERM_AGENT v1 grammar (TA-7 … TA-11).

Input is the payload after `1337;SetUserVar=` (C0 controls removed by framing). Any
variable's value is strict base64 of UTF-8 (F-5). `THINKTERM_AGENT` values are parsed
as `v1;agent=<id>;state=<working|idle|blocked>[;session=<id>][;pid=<n>][;ts=<n>][;ended=1]`:

* the first `;` field is the version; major version 1 (`v1`, also `v1.2`) is read, any
  other major version is ignored completely (TA-8) — a `Rejected` with `--all`;
* unknown keys are ignored; the last duplicate wins; whitespace around keys and values
  is trimmed (so a value encoded from `echo` output, with its newline, still reads);
* `agent` is required (TA-9): 1–64 characters, no controls;
* `state` is required (TA-10): a contract without one, or with an unknown one, drives
  nothing, but its parsed identity travels in `Rejected.partial` (RI-6);
* `session` empty reads as absent (None); `pid` is accepted and ignored (TA-11);
  `ts` is decimal unix seconds, anything else reads as absent; `ended` is true only
  for `ended=1`.
"""

from __future__ import annotations

import re
from typing import Any

from paneboard_protocol._quote import quote
from paneboard_protocol.b64 import Base64Error, strict_b64decode
from paneboard_protocol.events import AgentReport, Event, Rejected, UserVar, is_agent_state

AGENT_VAR = "THINKTERM_AGENT"
MAX_AGENT = 64
MAX_SESSION = 256

_VERSION = re.compile(r"v([0-9]{1,6})(?:\.[0-9]{1,6})*")
_TS = re.compile(r"[0-9]{1,15}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def parse_setuservar(body: bytes, offset: int) -> Event:
    """Turn the payload after `1337;SetUserVar=` into `AgentReport`, `UserVar` or `Rejected`."""
    raw_name, sep, raw_value = body.partition(b"=")
    name = raw_name.decode("utf-8", "replace")
    is_agent = name == AGENT_VAR
    proto = "thinkterm" if is_agent else "uservar"
    if not sep:
        return Rejected(
            offset, proto=proto, reason=f"SetUserVar {quote(raw_name)} has no '=' before its value"
        )
    if not raw_name:
        return Rejected(offset, proto=proto, reason="SetUserVar with an empty variable name")
    try:
        decoded = strict_b64decode(raw_value)
    except Base64Error as exc:
        return Rejected(offset, proto=proto, reason=f"value of {name} is not valid base64 (it {exc})")
    try:
        value = decoded.decode("utf-8")
    except UnicodeDecodeError:
        return Rejected(
            offset, proto=proto, reason=f"value of {name} is not valid UTF-8 after base64 decoding"
        )
    if not is_agent:
        return UserVar(offset, var=name, value=value)
    return parse_agent_value(value, offset)


def parse_agent_value(value: str, offset: int) -> Event:
    """Parse a decoded THINKTERM_AGENT value into `AgentReport` or `Rejected`."""

    def reject(reason: str, partial: dict[str, Any] | None = None) -> Rejected:
        return Rejected(offset, proto="thinkterm", reason=reason, partial=partial)

    parts = value.split(";")
    version_text = parts[0].strip()
    m = _VERSION.fullmatch(version_text)
    if not m:
        return reject(
            f"THINKTERM_AGENT value does not start with a version such as 'v1' (got {quote(version_text)})"
        )
    major = int(m.group(1))
    if major != 1:
        return reject(f"unknown THINKTERM_AGENT version {quote(version_text)} (only v1 is read)")
    fields: dict[str, str] = {}
    for pair in parts[1:]:
        key, sep, val = pair.partition("=")
        if sep:
            fields[key.strip()] = val.strip()
    agent = fields.get("agent", "")
    if not agent:
        return reject("THINKTERM_AGENT has no agent")
    if len(agent) > MAX_AGENT:
        return reject(f"THINKTERM_AGENT agent {quote(agent)} is longer than {MAX_AGENT} characters")
    if _CONTROL.search(agent):
        return reject(f"THINKTERM_AGENT agent {quote(agent)} contains a control character")
    session = fields.get("session") or None
    if session is not None and (len(session) > MAX_SESSION or _CONTROL.search(session)):
        session = None
    ts_text = fields.get("ts")
    ts = int(ts_text) if ts_text is not None and _TS.fullmatch(ts_text) else None
    ended = fields.get("ended") == "1"
    state = fields.get("state")
    if not is_agent_state(state):
        partial = {"var": AGENT_VAR, "version": 1, "agent": agent, "state": state, "session": session}
        partial |= {"ts": ts, "ended": ended}
        reason = "THINKTERM_AGENT has no state" if state is None else f"unknown state {quote(state)}"
        return reject(reason, partial)
    return AgentReport(
        offset,
        var=AGENT_VAR,
        version=1,
        agent=agent,
        state=state,
        session=session,
        ts=ts,
        ended=ended,
    )
