"""A logged-in browser-like HTTP client for API tests: cookies, the CSRF header, Origin."""

from __future__ import annotations

import http.cookiejar
import json
import urllib.error
import urllib.request
from typing import Any


class WebClient:
    """What the page does: log in, then GET and POST with the session cookie, the
    double-submit CSRF token and the page's own Origin."""

    def __init__(self, base: str, bearer: str | None = None) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        self.csrf: str | None = None
        self.bearer = bearer

    def login(self, name: str, password: str) -> WebClient:
        status, body = self.request("POST", "/api/login", {"name": name, "password": password})
        assert status == 200, body
        self.csrf = body["csrf"]
        return self

    def request(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        h = {"Content-Type": "application/json", "Origin": self.base}
        if self.csrf:
            h["X-CSRF-Token"] = self.csrf
        if self.bearer:
            h["Authorization"] = f"Bearer {self.bearer}"
        h.update(headers or {})  # last: a test may send a wrong one on purpose
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=h)
        try:
            with self.opener.open(req, timeout=40) as r:
                raw = r.read()
                return r.status, json.loads(raw) if raw else None  # 204: no body
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                return exc.code, json.loads(raw)
            except ValueError:
                return exc.code, raw.decode(errors="replace")

    def get(self, path: str) -> Any:
        status, body = self.request("GET", path)
        assert status == 200, (status, body)
        return body
