"""The words gradebench's records and reports are made of, as types: who made a run, why a race stopped, the race
designs, what a verdict rests on, the judge's paths, where a cost came from and which prices it rests on.

Each is a `enum.StrEnum`: a member is its own string (``Role.CANDIDATE == "candidate"``), so a frame's text column
compares with it directly (``report.runs.filter(role=Role.CANDIDATE)``), and so does a plain string.
"""

from ._base.vocab import (
    ControlKind,
    CostSource,
    Design,
    EventKind,
    PriceSource,
    Role,
    SchemaUse,
    Stopped,
    VerdictBasis,
    VerdictPath,
)

__all__ = [
    "ControlKind",
    "CostSource",
    "Design",
    "EventKind",
    "PriceSource",
    "Role",
    "SchemaUse",
    "Stopped",
    "VerdictBasis",
    "VerdictPath",
]
