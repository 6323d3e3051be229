"""Sending one message through an Apprise URL (ntfy, Slack, Discord, Telegram, mail …).

Apprise does blocking I/O for most services, so each send runs in a worker thread
with its own `Apprise` object (they are not shared across threads)."""

from __future__ import annotations

import asyncio
import logging

from paneboard_protocol.pane import State

from .links import with_click

# apprise is imported where it is used: it loads its plugins on import, and the server
# should not pay that at start-up when no channel is configured.


log = logging.getLogger("paneboard.notify")


def _send_sync(url: str, title: str, body: str, notify_type: str) -> bool:
    import apprise

    a = apprise.Apprise()
    if not a.add(url):
        return False
    return bool(a.notify(title=title, body=body, notify_type=notify_type))


def notify_type_for(state: State | None) -> str:
    """Apprise's NotifyType values (plain strings), so no import is needed to pick one."""
    return {"blocked": "warning", "error": "failure", "done": "success"}.get(state or "", "info")


async def send(url: str, title: str, body: str, state: State | None = None, link: str | None = None) -> bool:
    """True when Apprise reports the message delivered; False (one log line) if it raised.
    `link` (the pane's page) ends the body and is ntfy's click action."""
    if link:
        body = f"{body}\n{link}"
        url = with_click(url, link)
    try:
        return await asyncio.to_thread(_send_sync, url, title, body, notify_type_for(state))
    except Exception as exc:
        scheme = url.split("://", 1)[0][:32]  # the rest of an Apprise URL carries secrets
        log.warning("apprise %s:// failed: %s: %s", scheme, type(exc).__name__, str(exc)[:200])
        return False
