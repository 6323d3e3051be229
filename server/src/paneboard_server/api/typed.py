"""Typed answers: a route answers a msgspec view, encoded as it is, and the OpenAPI
document describes that view field by field.

A route returns `answer(view)`: the view's JSON bytes in a `Response`, so FastAPI neither
validates nor re-encodes it (pydantic validating every pane's dict on `GET /api/panes`,
which a board asks for at every load, cost more than building and encoding the panes). Its
`responses=ok(View, ...)` gives the 200 answer's schema, a `$ref` to the view's JSON Schema
(`msgspec.json.schema_components`, read from the class: its fields, types, limits and
docstring); `install` adds those schemas to the document's components, once, through
FastAPI's documented way to extend it (replacing `app.openapi`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from fastapi import FastAPI, Response

from .. import fastjson

REF = "#/components/schemas/{name}"

#: Every view's schema (and those it refers to) that a route's `ok` has named, by name.
_components: dict[str, dict[str, Any]] = {}


def schema(view: Any) -> dict[str, Any]:
    """`view`'s JSON Schema as the document refers to it (`list[PaneView]`: an array of
    `$ref`s), remembering the components it needs."""
    (out,), components = msgspec.json.schema_components([view], ref_template=REF)
    for name, body in components.items():
        if _components.setdefault(name, body) != body:
            raise TypeError(f"two views are called {name}: rename one")
    return out


def ok(view: Any, description: str) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI `responses=` entry of a route's 200 answer: `view`, as JSON."""
    return {200: {"description": description, "content": {"application/json": {"schema": schema(view)}}}}


def answer(view: Any) -> Response:
    """The view's JSON, answered as it is (no validation, no second encoding)."""
    return Response(fastjson.encode(view), media_type="application/json")


def install(app: FastAPI) -> None:
    """Add the views' schemas to the document's components when it is first made."""
    make: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        doc = make()
        schemas = doc.setdefault("components", {}).setdefault("schemas", {})
        for name, body in _components.items():
            if schemas.setdefault(name, body) != body:
                raise TypeError(f"a view and a pydantic model are both called {name}: rename one")
        return doc

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way to extend the document
