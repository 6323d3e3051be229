"""Notifications: who to tell, when, and through which channel.

Split so the decisions are pure and testable without a browser or a network:
`events` (what changed), `quiet` (mute/snooze/quiet hours/DND), `routing` (Apprise
channels and matching), `settings` (the routes of the checked `[notify]` table,
`notify_config.py`), `limits` (rate limit and de-duplication), `watch`
(which viewers have a tab looking), `vapid` + `webpush` (Web Push), `apprise_send`
(Apprise), and `service` which ties them to the store and the live stream.

The entry point: `NotifyService` and its `NotifySettings`, `feed` (the writer's
committed changes into it), `store` (the module: subscriptions, mutes, quiet hours,
the log, as the notification routes call them), and what those routes check a request
with: `Subscription`, `check_endpoint`, `QuietHours`, `parse_hhmm`.
"""

from ..notify_config import NotifySettings
from . import store
from .events import Notable
from .feed import feed
from .links import origin_of
from .quiet import QuietHours, parse_hhmm
from .service import NotifyService
from .targets import check_endpoint
from .webpush import Subscription

__all__ = [
    "Notable",
    "NotifyService",
    "NotifySettings",
    "QuietHours",
    "Subscription",
    "check_endpoint",
    "feed",
    "origin_of",
    "parse_hhmm",
    "store",
]
