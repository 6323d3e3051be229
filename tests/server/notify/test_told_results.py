"""A left-over result that shows again between two reports never notifies again."""

from __future__ import annotations

from paneboard_server.notify.results import MAX_PANES, ToldResults, result_at


def rec(state: str, updated: float, rid: str | None = None) -> dict:
    return {"id": rid, "state": state, "updated": updated}


def test_a_result_showing_again_is_not_news() -> None:
    told = ToldResults()
    shell_done = rec("done", 10.0)
    assert told.again("1", "done", [shell_done]) is False  # the shell's done: told
    # a command the shell ran reports working, then exits: the same done shows again
    assert told.again("1", "working", [shell_done, rec("working", 12.0, "cmd")]) is False
    assert told.again("1", "done", [shell_done]) is True
    # a new done (a later report) is news again
    assert told.again("1", "done", [rec("done", 20.0)]) is False
    assert told.again("1", "done", [rec("done", 20.0)]) is True


def test_results_without_records_and_other_panes_are_always_new() -> None:
    told = ToldResults()
    assert told.again("1", "done", []) is False  # a screen rule's done: no record
    assert told.again("1", "done", None) is False
    assert told.again("1", "done", [rec("done", 5.0)]) is False
    assert told.again("2", "done", [rec("done", 5.0)]) is False
    told.forget("1")
    assert told.again("1", "done", [rec("done", 5.0)]) is False


def test_result_at_reads_only_records_in_the_state_shown() -> None:
    records = [
        rec("done", 3.0),
        rec("done", 7.0, "a"),
        rec("error", 9.0, "b"),
        {"state": "done", "updated": True},
    ]
    assert result_at("done", records) == 7.0
    assert result_at("error", records) == 9.0
    assert result_at("working", records) is None


def test_memory_is_bounded() -> None:
    """Past the bound everything is forgotten: a result may be told twice, never lost."""
    told = ToldResults(limit=2)
    assert told.again("a", "done", [rec("done", 1.0)]) is False
    assert told.again("b", "done", [rec("done", 1.0)]) is False
    assert told.again("c", "done", [rec("done", 1.0)]) is False  # the memory was full: cleared
    assert told.again("a", "done", [rec("done", 1.0)]) is False
    assert told.again("c", "done", [rec("done", 1.0)]) is True
    assert MAX_PANES >= 10_000
