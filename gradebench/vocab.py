"""The words gradebench's records and reports are made of, as types: who made a run, why a race stopped, the race
designs, what a verdict rests on, the judge's paths, where a cost came from and which prices it rests on.

Each is a `enum.StrEnum`: a member is its own string (``Role.CANDIDATE == "candidate"``), so a frame's text column
compares with it directly (``report.runs.filter(role=Role.CANDIDATE)``), and so does a plain string.
"""

from ._base.renamed import renamed
from ._base.vocab import (
    ControlKind,
    CostSource,
    Design,
    EventKind,
    PriceSource,
    Role,
    SchemaUse,
    ScorePath,
    Stopped,
    VerdictBasis,
)

__all__ = [
    "ControlKind",
    "CostSource",
    "Design",
    "EventKind",
    "PriceSource",
    "Role",
    "SchemaUse",
    "ScorePath",
    "Stopped",
    "VerdictBasis",
]

_RENAMED = {"VerdictPath": "ScorePath"}
"""Renamed in this release; the old name answers for one release, with a warning (see `gradebench._deprecated`)."""


def __getattr__(name: str) -> object:
    return renamed(__name__, _RENAMED, name, globals())
