"""Links from a notification back to the board: the pane's page on its prompt.

Only the server's `public_url` says where people reach the board (behind a proxy the
request's own Host is the proxy's upstream, and a notifier has no request at all), so
without it Apprise messages carry no link and a push opens the worker's own origin."""

from __future__ import annotations

from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

# Apprise schemes whose plugin takes a `click` URL parameter (ntfy's click action).
CLICK_SCHEMES = frozenset({"ntfy", "ntfys"})


def pane_path(pane_id: str) -> str:
    """The board's page of a pane, on its screen (the prompt); web/sw.js makes the same."""
    return f"/#/pane/{quote(pane_id, safe='')}/screen" if pane_id else "/"


def link(public_url: str | None, pane_id: str = "") -> str | None:
    """The absolute link to a pane's page (no pane: the board), or None without a public URL."""
    return f"{public_url}{pane_path(pane_id)}" if public_url else None


def origin_of(url: str) -> str:
    """`scheme://host[:port]` of a checked public URL: what a browser sends as Origin."""
    u = urlsplit(url)
    return f"{u.scheme}://{u.netloc}".lower()


def with_click(apprise_url: str, click: str) -> str:
    """An ntfy Apprise URL with `click=` set to the link (a tap opens the pane), unless the
    channel's own URL sets one; other schemes are returned unchanged."""
    u = urlsplit(apprise_url)
    if u.scheme.lower() not in CLICK_SCHEMES:
        return apprise_url
    query = parse_qsl(u.query, keep_blank_values=True)
    if any(k.lower() == "click" for k, _ in query):
        return apprise_url
    return urlunsplit(u._replace(query=urlencode([*query, ("click", click)])))
