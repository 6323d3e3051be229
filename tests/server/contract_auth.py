"""Schemathesis hooks for tests/server/test_openapi_contract.py (loaded by `st run`
through SCHEMATHESIS_HOOKS): the credentials every generated request carries.

`PB_CONTRACT_WHO=viewer`: the viewer token `PB_CONTRACT_TOKEN` as a bearer token.
`operator`: a login session of `PB_CONTRACT_NAME`, with its CSRF token in the header
the server wants on every change; `POST /api/logout` gets a session of its own, so
logging out does not end the one the rest of the run uses.
"""

from __future__ import annotations

import os
from typing import Any

import httpx
import schemathesis

URL = os.environ["PB_CONTRACT_URL"]
WHO = os.environ["PB_CONTRACT_WHO"]


def login() -> dict[str, str]:
    creds = {"name": os.environ["PB_CONTRACT_NAME"], "password": os.environ["PB_CONTRACT_PASSWORD"]}
    r = httpx.post(URL + "/api/login", json=creds, timeout=30)
    r.raise_for_status()
    return {"pb_session": r.cookies["pb_session"], "pb_csrf": r.json()["csrf"]}


@schemathesis.auth()
class Credentials:
    """As the document's security schemes say (`viewerToken`, `session`), so that
    schemathesis's ignored_auth check can take them away and expect a 401."""

    def get(self, case: Any, ctx: Any) -> dict[str, str]:
        return {} if WHO == "viewer" else login()

    def set(self, case: Any, data: dict[str, str], ctx: Any) -> None:
        if WHO == "viewer":
            token = os.environ["PB_CONTRACT_TOKEN"]
            case.headers = {**(case.headers or {}), "Authorization": f"Bearer {token}"}
            return
        if case.path == "/api/logout":
            data = login()
        case.cookies = {**(case.cookies or {}), **data}
        case.headers = {**(case.headers or {}), "X-CSRF-Token": data["pb_csrf"]}
