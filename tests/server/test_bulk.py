"""The writer's many-row statements: rows given as tuples go to the driver exactly as the
same rows given by name, and tuples in any order but the statement's own are refused."""

from __future__ import annotations

import pytest
from paneboard_protocol.pane import ROW_FIELDS
from paneboard_server.panes import flush
from paneboard_server.panes.model import Pane
from sqlalchemy import create_engine
from sqlalchemy.ext.asyncio import create_async_engine


@pytest.mark.parametrize("url", ["sqlite+aiosqlite://", "postgresql+asyncpg://u@localhost/db"])
def test_tuples_in_the_statements_order_prepare_as_the_named_rows(url: str) -> None:
    dialect = create_async_engine(url).dialect  # made, never connected
    panes = [Pane.heard_of(7, 1, "default", "%1", state="working", evidence={"records": [{"id": "a"}]})]
    panes.append(Pane.heard_of(9, 1, "default", "%2", observable=False, msg="Allow?"))
    named = flush._UPDATE_PANES.prepare(dialect, [{"pid": p.id, **p.row()} for p in panes])
    values = flush._UPDATE_PANES.prepare_values(
        dialect, flush._UPDATE_PANES_ORDER, [(*p.row_values(), p.id) for p in panes]
    )
    assert values == named
    evidence = values[1][0][ROW_FIELDS.index("evidence")]
    assert isinstance(evidence, str) and '"records"' in evidence  # through the column's JSON processor
    assert values[1][1][-1] == 9  # the pane's id last, for WHERE


def test_tuples_in_another_order_are_refused() -> None:
    dialect = create_engine("sqlite://").dialect
    wrong = ("pid", *ROW_FIELDS)
    row = (1, *Pane.heard_of(1, 1, "t", "%1").row_values())
    with pytest.raises(ValueError, match="takes"):
        flush._UPDATE_PANES.prepare_values(dialect, wrong, [row])
