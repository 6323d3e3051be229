"""The server's use of the shared classifier: re-deriving a pane's state from evidence.

The collector sends the classifier's evidence with every update; the server re-runs
the same pure function with its own clock (`classify_evidence(evidence, now)`) so
TA-12/TA-13 staleness is enforced even when no new report arrives, and asks
`evidence_deadline` when to look again. A pane without evidence (an older collector)
keeps the collector's classification as sent.
"""

from __future__ import annotations

import logging
from typing import Any

from paneboard_protocol.classifier import (
    EvidenceError,
    classify_evidence,
    evidence_deadline,
    evidence_mark_seen,
)
from paneboard_protocol.pane import CLASSIFICATION_FIELDS, RECLASSIFY_FIELDS
from paneboard_protocol.why import Why, explain

log = logging.getLogger("paneboard.server")
FIELDS = RECLASSIFY_FIELDS


def classify(evidence: dict[str, Any] | None, now: float) -> dict[str, Any] | None:
    """The classification the evidence gives at `now`, or None when it cannot be derived:
    no evidence, or evidence the classifier refuses (`EvidenceError`, e.g. from a newer or
    older collector). Any other error is a bug and is raised."""
    if not evidence:
        return None
    try:
        c = classify_evidence(evidence, now)
    except EvidenceError as exc:
        log.debug("evidence the classifier refuses: %s", exc)
        return None
    data = c.to_json()
    return {k: data.get(k) for k in CLASSIFICATION_FIELDS if k in data}


def deadline(evidence: dict[str, Any] | None, now: float) -> float | None:
    """When time alone may change the evidence's classification (None: never, or unreadable).

    Only a THINKTERM_AGENT contract's `ts` makes time matter (TA-12/TA-13), so evidence
    without one has no deadline whether or not it reads: the check, paid for every
    changed pane of every batch, is skipped for it."""
    if not evidence or evidence.get("contract") is None:
        return None
    try:
        d = evidence_deadline(evidence, now)
    except EvidenceError:
        return None
    return float(d) if d is not None else None


def mark_seen(evidence: dict[str, Any] | None, now: float) -> dict[str, Any] | None:
    """The evidence after the user has looked: the rule of `PaneClassifier.mark_seen`.

    The live process's `done` records become `idle`; results left by an earlier
    process (`done`/`error` of another generation) go (P7501-8, RI-5). The collector
    applies the same rule to its own classifier when the server forwards the "seen".
    None when there is no evidence with records, or the classifier refuses it.
    """
    if not evidence or not isinstance(evidence.get("records"), list):
        return None
    try:
        return evidence_mark_seen(evidence, now)
    except EvidenceError:
        return None


def why(evidence: dict[str, Any] | None, now: float) -> Why | None:
    """What decided the pane's state at `now`, in words and parts (`paneboard_protocol.why`):
    names, pids, rule ids and screen rows, never the rows' text. None without evidence
    the classifier reads (an older collector's pane keeps its state, unexplained)."""
    if not evidence:
        return None
    try:
        return explain(evidence, now)
    except EvidenceError:
        return None
