"""What a push for a blocked pane offers (answers/offer.py): the buttons read as the
prompt draws the choices their keys select, and the body says the prompt's question."""

from __future__ import annotations

import json

from paneboard_protocol.wire import AnswerChoice
from paneboard_server.answers.offer import Offer, pick
from paneboard_server.notify.events import StateChange
from paneboard_server.notify.webpush import change_message


def test_a_button_carries_its_choice_number_and_text() -> None:
    got = pick(
        [
            AnswerChoice(id="1", label="Drop the production database and re-create it", option=1),
            AnswerChoice(id="2", label="Skip it", option=2),
            AnswerChoice(id="cancel", label="Cancel"),
        ]
    )
    assert got == (("1", "1. Drop the production database and re-create it"), ("2", "2. Skip it"))


def test_standing_answers_are_never_offered_and_an_older_collector_keeps_its_labels() -> None:
    permission = [
        AnswerChoice(id="yes", label="Yes", option=1),
        AnswerChoice(id="always", label="Yes, and don't ask again for rm", option=2),
        AnswerChoice(id="no", label="No"),
    ]
    assert pick(permission) == (("yes", "1. Yes"), ("no", "No"))
    # a collector from before `option`: the label as drawn, without a number
    assert pick([AnswerChoice(id="yes", label="Yes"), AnswerChoice(id="no", label="No")]) == (
        ("yes", "Yes"),
        ("no", "No"),
    )


def test_the_push_body_is_the_prompt_the_buttons_answer() -> None:
    change = StateChange("7", "build1", "work", "2", "claude", "blocked", "working", "question", "Proceed?")
    offer = Offer("a" * 64, (("1", "1. Drop it"), ("2", "2. Skip it")), "Migration · Which one?")
    data = json.loads(change_message(change, {"offer": offer.to_json(), "body": change.body(offer.prompt)}))
    assert data["body"] == "Migration · Which one?\nbuild1 · work:2"
    assert [a["label"] for a in data["offer"]["answers"]] == ["1. Drop it", "2. Skip it"]
    assert change.body() == "Proceed?\nbuild1 · work:2"
