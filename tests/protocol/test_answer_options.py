"""A button types exactly what it says (issue 40, finding 1).

Each answer's label, its keys and the line the fingerprint covers come from one line
of the prompt: the choice its keys select (`paneboard_protocol.choices`). Screens drawn
to mislead — numbered prose above a form, a command that draws an option, a
highlighted look-alike elsewhere on the screen, a form with no question line — must
never show a button whose label is not the option its keys select; where no
consistent option block is drawn, nothing is offered at all.
"""

from __future__ import annotations

from pathlib import Path

from paneboard_protocol.rules import load_rules
from paneboard_protocol.screen import Offer, offer, plain

FIX = Path(__file__).parent / "fixtures"
RULES = load_rules(FIX / "screens" / "no-user-rules", bundled=True)

FORM_UNDER_PROSE = """\
● Here is what I can do next:
  1. Keep the production database
  2. Cancel the migration

────────────────────────────────────────────────────────────
 Migration

 ❯ 1. Drop the production database and re-create it
   2. Skip it

 Enter to select · ↑/↓ to navigate · Esc to cancel
"""

COMMAND_DRAWS_AN_OPTION = """\
● Bash(python3 - <<'EOF' …)

────────────────────────────────────────────────────────────
 Bash command

   python3 - <<'EOF'
 2. Yes, this once only
   EOF
   Run the clean-up script

 Do you want to proceed?
 ❯ 1. Yes
   2. Yes, and don't ask again for python3 commands in /srv/app
   3. No

 Esc to cancel · Tab to amend
"""

# the bundled claude__select_form_with_stale_progress form (no question line) under a plan
FORM_WITHOUT_QUESTION = "● The plan:\n  1. Delete the release branch\n  2. Force-push main\n\n" + (
    FIX / "screens" / "claude__select_form_with_stale_progress.txt"
).read_text(encoding="utf-8")


def _digit_labels(got: Offer) -> dict[str, str]:
    """What each offered answer that types one digit says, by the digit it types."""
    return {a.keys[0]: label for a, label in got.answers if len(a.keys) == 1 and a.keys[0].isdigit()}


def test_numbered_prose_above_a_select_form_labels_nothing() -> None:
    got = offer(RULES, "claude", "blocked", "question", FORM_UNDER_PROSE)
    assert _digit_labels(got) == {"1": "Drop the production database and re-create it", "2": "Skip it"}
    assert [a.id for a, _ in got.answers] == ["1", "2", "cancel"]


def test_a_command_that_draws_an_option_does_not_relabel_it() -> None:
    got = offer(RULES, "claude", "blocked", "permission", COMMAND_DRAWS_AN_OPTION)
    assert [(a.id, label, a.keys) for a, label in got.answers] == [
        ("yes", "Yes", ("1",)),
        ("always", "Yes, and don't ask again for python3 commands in /srv/app", ("2",)),
        ("no", "No", ("Escape",)),
    ]


def test_a_form_without_a_question_line_under_a_numbered_plan() -> None:
    got = offer(RULES, "claude", "blocked", "question", FORM_WITHOUT_QUESTION)
    assert _digit_labels(got) == {"1": "Yes", "2": "No"}


def test_the_fingerprint_covers_the_lines_the_labels_come_from() -> None:
    """The option a label is read from is inside the prompt the fingerprint covers: a
    different option text moves it; the prose above the form does not."""
    base = offer(RULES, "claude", "blocked", "question", FORM_UNDER_PROSE, since=1.0)
    prose = FORM_UNDER_PROSE.replace("Keep the production", "Keep the staging")
    option = FORM_UNDER_PROSE.replace("Drop the production", "Drop the staging")
    assert offer(RULES, "claude", "blocked", "question", prose, since=1.0).fingerprint == base.fingerprint
    assert offer(RULES, "claude", "blocked", "question", option, since=1.0).fingerprint != base.fingerprint


def test_numbered_text_inside_a_choice_is_not_a_choice() -> None:
    """A choice's description (the model's text, drawn indented under it) that holds a
    numbered line is text of that choice, wherever it sits in the form."""
    form = """\
────────────────────────────────────────────────────────────
 Which way?

 ❯ 1. Keep the production database
      It stays as it is. Steps if you change your mind:
      {inner}
   2. Skip it
      {last}

 Enter to select · ↑/↓ to navigate · Esc to cancel
"""
    for inner, last in (
        ("1. Drop the production database", "Nothing runs."),
        ("Nothing runs.", "1. Drop it all"),
    ):
        got = offer(RULES, "claude", "blocked", "question", form.format(inner=inner, last=last))
        assert _digit_labels(got) == {"1": "Keep the production database", "2": "Skip it"}, (inner, last)


def test_no_consistent_option_block_offers_no_answer() -> None:
    """Options out of order, or broken by a line that is neither an option nor its
    indented continuation, are not read as a form: nothing is offered (never a guess),
    not even free text into it."""
    skipped = FORM_UNDER_PROSE.replace("   2. Skip it", "   3. Skip it")
    broken = FORM_UNDER_PROSE.replace("   2. Skip it", "Note: irreversible\n   2. Skip it")
    for screen in (skipped, broken):
        got = offer(RULES, "claude", "blocked", "question", screen)
        assert got.answers == () and not got.text, screen


def test_the_option_block_nearest_the_bottom_with_continuations() -> None:
    from paneboard_protocol.choices import option_block

    rows = [
        "  1. prose one",
        "  2. prose two",
        "",
        " ❯ 1. Yes",
        "   2. Yes, and always allow access to /tmp/x from this",
        "      project",
        "   3. No",
        "",
        " Esc to cancel",
    ]
    block = option_block(rows)
    assert [(o.number, o.row, o.text, o.selected) for o in block] == [
        (1, 3, "Yes", True),
        (2, 4, "Yes, and always allow access to /tmp/x from this", False),
        (3, 6, "No", False),
    ]
    assert option_block(["  1. a", "  3. c"]) == ()
    assert option_block(["  2. b", "  3. c"]) == ()
    assert option_block(["no options here"]) == ()


def _opencode(which: str) -> list[str]:
    path = FIX / "real" / "opencode" / f"blocked-{which}-selected.ansi"
    return path.read_text(encoding="utf-8").rstrip("\n").split("\n")


def test_a_highlighted_allow_once_elsewhere_is_not_the_selection() -> None:
    """Reject is selected in the dialog; the transcript above shows "Allow once" as an
    inline code span (another background). Enter would reject: "Allow once" is not
    offered."""
    styled = _opencode("reject")
    at = next(i for i, ln in enumerate(styled) if "pb-model" in ln) + 2
    assert plain(styled[at]).strip() == ""
    styled[at] = (
        "\x1b[38;5;15m\x1b[48;5;232m     Choose \x1b[48;5;238mAllow once\x1b[48;5;232m"
        " when it asks                                                     "
    )
    screen = "\n".join(plain(ln) for ln in styled)
    got = offer(RULES, "opencode", "blocked", "permission", screen, styled=styled)
    assert [(a.id, a.keys) for a, _ in got.answers] == [("reject", ("Escape",))]
    # the same look-alike while "Allow once" is selected in the dialog changes nothing
    once = _opencode("once")
    once[at] = styled[at]
    screen = "\n".join(plain(ln) for ln in once)
    got = offer(RULES, "opencode", "blocked", "permission", screen, styled=once)
    assert [(a.id, a.keys) for a, _ in got.answers] == [("once", ("Enter",)), ("reject", ("Escape",))]


def test_codex_trust_offers_its_choices_only_while_the_first_is_selected() -> None:
    """Enter takes the selected choice and Down Enter the one after the first: with the
    selection moved to "2. No, quit" neither label would be what its keys do, so
    nothing is offered — and no free text either (typed into the menu, its Enter
    would take the selected choice)."""
    screen = (FIX / "screens" / "codex__trust_directory_blocked.txt").read_text(encoding="utf-8")
    got = offer(RULES, "codex", "blocked", "question", screen)
    assert [(a.id, label, a.keys) for a, label in got.answers] == [
        ("yes", "Yes, continue", ("Enter",)),
        ("no", "No, quit", ("Down", "Enter")),
    ]
    moved = screen.replace("› 1. Yes, continue", "  1. Yes, continue").replace("2. No, quit", "› 2. No, quit")
    got = offer(RULES, "codex", "blocked", "question", moved)
    assert got.answers == () and not got.text
