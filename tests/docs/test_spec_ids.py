"""Every rule ID the repository cites is defined in docs/spec.md, so the spec travels with the code."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from spec_ids import SPEC, citations, defined, ids_in


def test_citation_forms_are_read() -> None:
    text = "see P7501-8 / RI-5, test_P7501_19_bad_b64, P7501-6/8, TA-8..TA-15, F-1..3"
    assert ids_in(text) == {
        "P7501-8", "RI-5", "P7501-19", "P7501-6",
        *(f"TA-{n}" for n in range(8, 16)), "F-1", "F-2", "F-3",
    }  # fmt: skip
    # Words that merely contain a family prefix are not citations.
    assert ids_in("UTF-8, DATA-1, SHA-256, RIFF-2, p7501-3") == set()


def test_spec_page_defines_each_id_once_with_its_own_anchor() -> None:
    ids = defined(SPEC.read_text(encoding="utf-8"))
    assert len(ids) > 50
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    assert duplicates == []


def test_every_cited_id_is_on_the_spec_page() -> None:
    cited = citations()
    have = set(defined(SPEC.read_text(encoding="utf-8")))
    missing = {rule: sorted(files)[:3] for rule, files in sorted(cited.items()) if rule not in have}
    assert missing == {}, f"cited rule IDs that docs/spec.md does not define: {missing}"
    unused = sorted(have - set(cited))
    if unused:  # allowed, but worth a line in the report
        warnings.warn(f"docs/spec.md defines rule IDs nothing cites: {unused}", stacklevel=1)


def test_a_new_citation_without_a_definition_fails(tmp_path: Path) -> None:
    """The check above can fail: a file citing an unknown rule is caught."""
    (tmp_path / "docs").mkdir()
    # Built at run time so that this file does not itself cite a rule that does not exist.
    unknown, spec_only = "P7501" + "-99", "P7501" + "-98"
    (tmp_path / "mod.py").write_text(f'"""Implements {unknown} and TA-7."""\n')
    (tmp_path / "docs" / "spec.md").write_text(f"the spec page itself is not a citation: {spec_only}\n")
    cited = citations(tmp_path)
    assert set(cited) == {unknown, "TA-7"} and cited[unknown] == {"mod.py"}
    have = set(defined(SPEC.read_text(encoding="utf-8")))
    assert "TA-7" in have and unknown not in have


def test_mismatched_anchor_and_label_is_refused() -> None:
    with pytest.raises(ValueError, match="labelled"):
        defined('<a id="TA-7"></a>**TA-8** text')
