"""paneboard's shared protocol code: decoder and classifier, pure and clock-injected."""

from paneboard_protocol.decoder import Decoder
from paneboard_protocol.events import (
    AgentReport,
    ClearReport,
    Event,
    Probe,
    Progress,
    PromptMark,
    Rejected,
    Reset,
    StatusReport,
    Title,
    UserVar,
)
from paneboard_protocol.text import sanitize_text

__all__ = [
    "AgentReport",
    "ClearReport",
    "Decoder",
    "Event",
    "Probe",
    "Progress",
    "PromptMark",
    "Rejected",
    "Reset",
    "StatusReport",
    "Title",
    "UserVar",
    "sanitize_text",
]
