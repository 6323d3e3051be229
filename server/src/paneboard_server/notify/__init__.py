"""Notifications: who to tell, when, and through which channel.

Split so the decisions are pure and testable without a browser or a network:
`events` (what changed), `quiet` (mute/snooze/quiet hours/DND), `routing` (Apprise
channel config and matching), `limits` (rate limit and de-duplication), `watch`
(which viewers have a tab looking), `vapid` + `webpush` (Web Push), `apprise_send`
(Apprise), and `service` which ties them to the store and the live stream.
"""
