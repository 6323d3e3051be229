"""Small HTML answers for people who follow a link in a browser.

A browser that opens `/?token=…` with a token that is unknown or revoked is a person
holding a stale wall-screen link: they get a page that says so and what to do, not
the API's JSON error. The page uses the dashboard's stylesheet and has no script or
inline style, so the Content-Security-Policy stays strict.
"""

from __future__ import annotations

from fastapi.responses import HTMLResponse

_BAD_TOKEN = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>paneboard — link not valid</title>
<link rel="icon" href="/icons/icon-192.png">
<link rel="stylesheet" href="/style.css"></head>
<body><main class="login" id="bad-token">
<h1>paneboard</h1>
<p><strong>This viewer link is not valid.</strong> Its token is unknown or has been revoked.</p>
<p>Ask whoever runs paneboard for a new link (they make one with
<code>paneboard token create NAME --viewer</code>), or sign in with an account.</p>
<p><a class="button" href="/login">Sign in</a></p>
</main></body></html>
"""


def bad_token_page() -> HTMLResponse:
    """401 with a readable page: the link's token is unknown or revoked."""
    return HTMLResponse(_BAD_TOKEN, status_code=401, headers={"Cache-Control": "no-store"})
