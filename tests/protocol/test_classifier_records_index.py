"""The record store's incremental roll-up index answers exactly what the list scan does.

`RecordStore` keeps the P7501-22 roll-up, the effective apps (P7501-18) and the public
record list up to date per change instead of rescanning every record per report; the
server re-derives the same facts from the evidence list (`ListFacts`). Random sequences
of every store operation, on a small cap (so eviction happens) and nested ids (so
inherited apps change), must leave both in agreement after every step and for every
context the classifier may ask about.
"""

from __future__ import annotations

from classifier_steps import rep
from hypothesis import given, settings
from hypothesis import strategies as st
from paneboard_protocol import pane
from paneboard_protocol.arbitration import ListFacts, records_view
from paneboard_protocol.records import RecordStore

IDS = ["", "a", "a/b", "a/b/c", "ab", "b", "b//c"]
APPS = [None, "", "x", "claude-code", "claude"]
STATES = list(pane.STATES)
ALIASES = {"claude-code": "claude"}

op = st.one_of(
    st.tuples(
        st.just("report"),
        st.sampled_from(IDS),
        st.sampled_from(STATES),
        st.sampled_from(APPS),
        st.integers(0, 2),
        st.sampled_from([None, "claude", "x"]),
        st.sampled_from([None, 100, 200]),
        st.booleans(),
    ),
    st.tuples(
        st.just("follow"),
        st.integers(0, 2),
        st.sampled_from([None, 100, 200]),
        st.sampled_from([100, 200, 300]),
        st.sampled_from([(), (100,), (200, 100)]),
    ),
    st.tuples(st.just("clear"), st.sampled_from([None, *IDS, "a/", "zz"])),
    st.tuples(st.just("end_live")),
    st.tuples(st.just("drop_results"), st.integers(0, 2)),
    st.tuples(st.just("seen"), st.integers(0, 2)),
)
context = st.tuples(st.integers(0, 2), st.sampled_from([None, "claude", "x"]))


def apply(store: RecordStore, t: float, step: tuple) -> None:
    name = step[0]
    if name == "report":
        _, rid, state, app, gen, agent, pid, says = step
        kind = "question" if state == "blocked" else None
        ev = rep(state, rid or None, app=app, kind=kind, msg=f"m{t}" if says else None, progress=5)
        store.report(t, ev, gen, agent, pid)
    elif name == "follow":
        _, gen, old_pid, pid, chain = step
        store.follow(gen, gen + 1, old_pid, pid, chain)
    elif name == "clear":
        store.clear(step[1])
    elif name == "end_live":
        store.end_live()
    elif name == "drop_results":
        store.drop_results(step[1])
    else:
        store.seen(t, step[1])


def check(store: RecordStore, gen: int, agent: str | None) -> None:
    view = store.view()
    assert [r["seq"] for r in view] == sorted(r["seq"] for r in view)
    assert store.snapshot() == view
    assert store.public() == records_view(view)
    assert store.has_gen(gen) == any(r["gen"] == gen for r in view)
    want = ListFacts(view, gen, agent, ALIASES, store.other_seq)
    got = store.facts(gen, agent, ALIASES)
    assert got.live_winner() == want.live_winner()
    if want.live_winner() is not None:
        assert got.live_agent() == want.live_agent()
    assert got.leftover_winner() == want.leftover_winner()
    assert got.leftover_agent() == want.leftover_agent()
    assert got.answer(True) == want.answer(True)
    assert got.answer(False) == want.answer(False)
    assert store.has_gen(gen) == any(r["gen"] == gen for r in view)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(op, st.lists(context, max_size=2)), max_size=40), st.integers(2, 5))
def test_store_index_agrees_with_the_list_scan(steps, limit):
    store = RecordStore(limit=limit)
    for i, (step, contexts) in enumerate(steps):
        apply(store, float(i), step)
        assert len(store) <= limit
        for gen, agent in contexts or [(1, None)]:
            check(store, gen, agent)


def test_cap_still_evicts_least_recently_updated_in_order():
    store = RecordStore(limit=3)
    for i, rid in enumerate(["a", "b", "c", "a", "d", "e"]):
        store.report(float(i), rep("idle", rid, app="x"), 0, None)
    assert [r["id"] for r in store.view()] == ["a", "d", "e"]


def test_a_parent_app_change_reaches_its_children():
    store = RecordStore()
    store.report(0, rep("working", "a/b"), 0, None)
    store.report(1, rep("idle", "a", app="claude-code"), 0, None)
    facts = store.facts(0, None, ALIASES)
    assert facts.live_winner()["id"] == "a/b" and facts.live_agent() == "claude"
    store.report(2, rep("idle", "a", app="codex"), 0, None)
    assert store.facts(0, None, ALIASES).live_agent() == "codex"
    assert [r["app"] for r in store.public()] == ["codex", "codex"]
    store.clear("a")
    assert len(store) == 0
