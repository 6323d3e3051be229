"""paneboard's shared protocol code: decoder and classifier, pure and clock-injected."""

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

__all__ = [
    "AgentReport",
    "ClearReport",
    "Event",
    "Probe",
    "Progress",
    "PromptMark",
    "Rejected",
    "Reset",
    "StatusReport",
    "Title",
    "UserVar",
]
