"""The server's use of the shared classifier: re-deriving a pane's state from evidence.

The collector sends the classifier's evidence with every update; the server re-runs
the same pure function with its own clock (`classify_evidence(evidence, now)`) so
TA-12/TA-13 staleness is enforced even when no new report arrives, and asks
`evidence_deadline` when to look again. A pane without evidence (an older collector)
keeps the collector's classification as sent.
"""

from __future__ import annotations

from typing import Any

from paneboard_protocol.pane import CLASSIFICATION_FIELDS, RECLASSIFY_FIELDS

try:  # the classifier lands on its own branch; the server works without it meanwhile
    from paneboard_protocol.classifier import classify_evidence, evidence_deadline
except ImportError:  # pragma: no cover - exercised only before the classifier merge
    classify_evidence = None  # type: ignore[assignment]
    evidence_deadline = None  # type: ignore[assignment]

try:
    from paneboard_protocol.classifier import evidence_mark_seen
except ImportError:
    evidence_mark_seen = None  # type: ignore[assignment]

FIELDS = RECLASSIFY_FIELDS


def available() -> bool:
    return classify_evidence is not None


def classify(evidence: dict[str, Any] | None, now: float) -> dict[str, Any] | None:
    """The classification the evidence gives at `now`, or None when it cannot be derived."""
    if not evidence or classify_evidence is None:
        return None
    try:
        c = classify_evidence(evidence, now)
    except Exception:  # evidence from a newer/older collector the classifier cannot read
        return None
    data = c.to_json() if hasattr(c, "to_json") else dict(c)
    return {k: data.get(k) for k in CLASSIFICATION_FIELDS if k in data}


def deadline(evidence: dict[str, Any] | None, now: float) -> float | None:
    if not evidence or evidence_deadline is None:
        return None
    try:
        d = evidence_deadline(evidence, now)
    except Exception:
        return None
    return float(d) if d is not None else None


def mark_seen(evidence: dict[str, Any] | None, now: float) -> dict[str, Any] | None:
    """The evidence after the user has looked: the rule of `PaneClassifier.mark_seen`.

    The live process's `done` records become `idle`; results left by an earlier
    process (`done`/`error` of another generation) go (P7501-8, RI-5). The collector
    applies the same rule to its own classifier when the server forwards the "seen".
    """
    if not evidence or not isinstance(evidence.get("records"), list):
        return None
    if evidence_mark_seen is not None:
        try:
            return evidence_mark_seen(evidence, now)
        except Exception:
            return None
    proc = evidence.get("process") or {}
    gen = proc.get("gen")
    seq = max((int(r.get("seq") or 0) for r in evidence["records"] if isinstance(r, dict)), default=0)
    out = []
    for r in evidence["records"]:
        if not isinstance(r, dict):
            continue
        if r.get("gen") != gen:
            if r.get("state") in {"done", "error"}:
                continue
        elif r.get("state") == "done":
            seq += 1
            r = {**r, "state": "idle", "updated": now, "seq": seq}
        out.append(r)
    return {**evidence, "records": out}
