"""Quiet rules: when a notification must not be sent, and why.

Three kinds, all stored in the database and read by every channel:
- mutes (snoozes): a pane, a host or an agent, until a time or until lifted; a login's
  own (its pushes and pages), or everyone's (every push, page and Apprise channel),
  which only an operator may set: one plain user must not silence the others' alerts;
- quiet hours: per viewer, a daily window in the viewer's time zone, applied to that
  viewer's browser notifications and Web Push;
- do-not-disturb: one global switch (optionally until a time) that silences all.
The page applies the same reading in `web/js/quiet.js`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .events import StateChange

SCOPES = ("pane", "host", "agent")


@dataclass(frozen=True, slots=True)
class Mute:
    id: int
    scope: str  # one of SCOPES
    value: str
    until: float | None  # unix seconds; None: until lifted
    viewer_id: int | None = None  # whose mute: None for everyone's

    @property
    def everyone(self) -> bool:
        return self.viewer_id is None

    def active(self, now: float) -> bool:
        return self.until is None or self.until > now

    def covers(self, change: StateChange) -> bool:
        if self.scope == "pane":
            return self.value == change.pane_id
        if self.scope == "host":
            return self.value == change.host
        if self.scope == "agent":
            return self.value == (change.agent or "")
        return False


def parse_hhmm(text: str) -> dt.time:
    """'22:00' -> time(22, 0); raises ValueError with a readable message."""
    try:
        h, m = text.split(":")
        return dt.time(int(h), int(m))
    except (ValueError, AttributeError) as e:
        raise ValueError(f"not a time of day (HH:MM): {text!r}") from e


@dataclass(frozen=True, slots=True)
class QuietHours:
    start: dt.time
    end: dt.time
    tz: str | None = None  # IANA name; None: the server's local zone

    def contains(self, now: float) -> bool:
        """Is `now` inside the window? A window may wrap midnight (22:00-07:00)."""
        if self.start == self.end:
            return False
        try:
            zone = ZoneInfo(self.tz) if self.tz else None
        except (ZoneInfoNotFoundError, ValueError):
            zone = None
        local = dt.datetime.fromtimestamp(now, zone).time().replace(second=0, microsecond=0)
        if self.start < self.end:
            return self.start <= local < self.end
        return local >= self.start or local < self.end

    def to_json(self) -> dict[str, str | None]:
        return {"start": self.start.strftime("%H:%M"), "end": self.end.strftime("%H:%M"), "tz": self.tz}


@dataclass(frozen=True, slots=True)
class Dnd:
    on: bool
    until: float | None = None

    def active(self, now: float) -> bool:
        return self.on and (self.until is None or self.until > now)


def shared_quiet(change: StateChange, now: float, *, dnd: Dnd | None, mutes: Iterable[Mute]) -> str | None:
    """The reason everyone stays quiet about this change, or None (one login's own
    mutes are not a reason for everyone)."""
    if dnd is not None and dnd.active(now):
        return "do not disturb"
    for m in mutes:
        if m.everyone and m.active(now) and m.covers(change):
            return f"muted {m.scope}"
    return None


def viewer_quiet(
    change: StateChange,
    now: float,
    *,
    dnd: Dnd | None,
    mutes: Iterable[Mute],
    hours: QuietHours | None,
    viewer_id: int | None = None,
) -> str | None:
    """The reason one viewer is not told (shared rules, their own mutes and their quiet
    hours), or None."""
    reason = shared_quiet(change, now, dnd=dnd, mutes=mutes)
    if reason:
        return reason
    for m in mutes:
        if viewer_id is not None and m.viewer_id == viewer_id and m.active(now) and m.covers(change):
            return f"muted {m.scope}"
    if hours is not None and hours.contains(now):
        return "quiet hours"
    return None
