"""The words gradebench's records and reports are made of, as types: roles, event kinds, why a race stopped, the race
designs, what a verdict rests on, the judge's paths and where a cost came from.

Each is a `enum.StrEnum`: a member is its own string (``Role.CANDIDATE == "candidate"``), so it is stored as plain
text in frames, parquet, JSON and cache keys, and code compares through the member, never a bare string.
"""

from __future__ import annotations

import enum

__all__ = [
    "ControlKind",
    "CostSource",
    "Design",
    "EventKind",
    "Role",
    "SchemaUse",
    "Stopped",
    "VerdictBasis",
    "ScorePath",
]


class Role(enum.StrEnum):
    """Who made a run or a call."""

    REFERENCE = "reference"
    """The run on the grade's pinned entry: the yardstick."""
    CANDIDATE = "candidate"
    """A run of the race, judged against the reference."""
    JUDGE = "judge"
    """A call of the judge (calls only: a verdict belongs to the candidate run it judges)."""
    CONTROL = "control"
    """A negative control: a run planted from the reference runs that is known to be wrong, judged blind among the
    candidates (`ControlKind`); it is never an entry and no figure of the candidates counts it."""


class ControlKind(enum.StrEnum):
    """How a negative control is wrong (``gradebench._records.planted``): each is the reference transcript of its
    input, its
    tool calls and results unchanged, with the final answer replaced."""

    OTHER_ANSWER = "other_answer"
    """The reference's answer to another input (one whose answer differs): wrong in substance."""
    EMPTY = "empty"
    """An empty answer: wrong in substance."""
    HALF = "half"
    """The reference's answer cut in half: incomplete, though the half kept may hold the substance."""
    ALTERED = "altered"
    """The reference's answer with its key fact changed (a number, a yes/no, a flag): plausible, and wrong in
    substance."""
    VERBOSE = "verbose"
    """The altered answer argued at length (its explanation restated, as a long-winded run would): wrong in substance,
    and what sways a judge that long explanations talk round."""


class EventKind(enum.StrEnum):
    """What a race listener hears (`gradebench.results.RaceEvent.kind`)."""

    REFERENCE = "reference"
    """A reference run landed."""
    LANDED = "landed"
    """A candidate run finished."""
    JUDGED = "judged"
    """A candidate run was judged."""


class Stopped(enum.StrEnum):
    """Why a race ended before its plan did (``report.meta.stopped``)."""

    CANCELLED = "cancelled"
    """The race was cancelled (Stop in the panel, a cancelled task)."""
    BUDGET = "budget"
    """The budget would not cover another run."""


class Design(enum.StrEnum):
    """How a race decides how many runs an entry gets."""

    FIXED = "fixed"
    """``runs`` runs per input and entry."""
    AUTO = "auto"
    """Race to a verdict (``runs="auto"``): another name for `GROUP_SEQUENTIAL`, the same race and the same reading. A
    report an older version raced with the betting bound it once named is read at the group-sequential looks."""
    GROUP_SEQUENTIAL = "gsd"
    """Race to a verdict in a few planned looks with a group-sequential boundary (``runs="gsd"``)."""

    @property
    def to_verdict(self) -> bool:
        """Whether the race runs in waves until each verdict is settled (either race to a verdict)."""
        return self is not Design.FIXED


class VerdictBasis(enum.StrEnum):
    """What a verdict against the reference rests on (``report.models``' ``verdict_basis``)."""

    JUDGE_ONLY = "judge-only"
    """The judge's scores alone."""
    LABEL_CORRECTED = "label-corrected"
    """The judge's scores corrected by human labels (`gradebench.BenchmarkReport.with_labels`)."""
    UNMEASURED = "unmeasured"
    """No verdict: the entry's endpoint failed more than half its runs (a refused connection, a 404 for a misspelt
    model id, a 5xx after the retries, a timeout), so too few reached the model to say anything of its answers."""


class ScorePath(enum.StrEnum):
    """How a verdict was read from the judge's reply."""

    SCHEMA = "schema"
    """The strict JSON schema was honoured: the reply was the verdict."""
    FALLBACK = "fallback"
    """The verdict was read out of prose."""


class SchemaUse(enum.StrEnum):
    """What the judge's endpoint did with the JSON schema it was sent."""

    HONOURED = "honoured"
    """It answered with the JSON object asked for."""
    IGNORED = "ignored"
    """It answered prose anyway."""
    REJECTED = "rejected"
    """It answered 400, so the verdict was asked in prose."""


class CostSource(enum.StrEnum):
    """Where a call's cost came from (its ``cost_source``); `PriceSource` names the prices a table used."""

    PROVIDER = "provider"
    """The endpoint reported it (OpenRouter's ``usage.cost``, LiteLLM's header)."""
    PRICE_TABLE = "price_table"
    """Computed from the catalog's prices and the reported tokens."""
    MIXED = "mixed"
    """A run whose calls were priced both ways."""


class PriceSource(enum.StrEnum):
    """Which prices a call's cost rests on: how a call's ``price_source`` begins (the one vocabulary of cost provenance
    beside `CostSource`). A database-priced call names the database's version after it (``genai-prices 0.2.3``: its
    figures change between releases), and a call answered in a batch says how the batch was priced after that
    (``catalog batch -50%``, ``genai-prices 0.2.3 batch``)."""

    CATALOG = "catalog"
    """The catalog entry's own ``price_in``/``price_out`` (a price table: ``cost_source`` ``price_table``)."""
    DATABASE = "genai-prices"
    """genai-prices' price database, for an entry that names its ``provider`` and no prices (a price table too)."""
    PROVIDER = "provider"
    """The endpoint reported the cost itself (OpenRouter's ``usage.cost``, LiteLLM's header): ``cost_source``
    ``provider``, no price table."""
