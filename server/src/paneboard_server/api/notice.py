"""The small page the server answers a person's browser with when there is no board to
show (a page that does not exist, a viewer link that is not valid): the login page's
look, one message, one way on. One shell, so every such page looks and behaves alike."""

from __future__ import annotations


def notice_page(title: str, element_id: str, body: str) -> str:
    """A whole HTML page; `body` is the server's own markup (never anything a request
    brought), placed under the heading."""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>paneboard — {title}</title>
<link rel="icon" href="/icons/icon-192.png">
<link rel="stylesheet" href="/style.css"></head>
<body><main class="login" id="{element_id}">
<h1>paneboard</h1>
{body}
</main></body></html>
"""
