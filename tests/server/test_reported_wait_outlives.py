"""Which stored `blocked` a restarted collector's first view keeps (commands.py): only
one its pane's program reported over OSC 7501, with that same process (pid) still in
front and nothing new learnt. Every other case is the collector's word."""

from __future__ import annotations

from typing import Any

import pytest
from paneboard_server.panes.commands import reported_wait_outlives
from paneboard_server.panes.model import Pane

RECORD = {"id": "", "state": "blocked", "kind": "permission", "msg": "Deploy?"}


def stored(**over: Any) -> Pane:
    fields: dict[str, Any] = {
        "agent": "deployer",
        "state": "blocked",
        "kind": "permission",
        "msg": "Deploy?",
        "source": "protocol",
        "observable": True,
        "records": (RECORD,),
        "evidence": {"process": {"name": "python3", "pid": 4242}},
    }
    fields.update(over)
    return Pane.heard_of(1, 1, "default", "%1", **fields)


def seen(pid: int = 4242, **over: Any) -> tuple[dict[str, Any], tuple[Any, ...], dict[str, Any]]:
    fields: dict[str, Any] = {"agent": None, "state": None, "kind": None, "msg": None, "observable": True}
    fields.update(over)
    return fields, (), {"process": {"name": "python3", "pid": pid}}


def test_the_same_process_still_in_front_keeps_its_reported_wait() -> None:
    assert reported_wait_outlives(stored(), *seen())


@pytest.mark.parametrize(
    ("pane", "view"),
    [
        (stored(), seen(pid=4243)),  # another process in front: the record died with its writer
        (stored(), seen(pid=0)),  # no process look
        (stored(evidence={}), seen()),  # nothing stored to compare with
        (stored(), seen(state="working")),  # the collector knows better
        (stored(), seen(observable=False)),  # behind ssh: staleness decides, not this
        (stored(source="screen"), seen()),  # a screen's question is read again by the new collector
        (stored(records=[]), seen()),
        (stored(state="done"), seen()),  # done waits to be seen, on the collector's side
    ],
)
def test_anything_else_is_the_new_collectors_word(pane: Pane, view: Any) -> None:
    assert not reported_wait_outlives(pane, *view)


def test_a_record_the_new_collector_read_is_its_word() -> None:
    fields, _, evidence = seen()
    assert not reported_wait_outlives(stored(), fields, [RECORD], evidence)
