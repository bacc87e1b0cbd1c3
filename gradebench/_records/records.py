"""The records of a benchmark and their one row form: a model call, a verdict, a run.

Each record owns its codec: ``to_row()`` gives its row in a report frame, ``from_row()`` takes it back, and the frame
schemas (`CALLS_SCHEMA`, `RUNS_SCHEMA`) are derived from the records' own fields and properties (`Columns`): a
column is an attribute, its type is the attribute's annotation (JSON text for anything that is not a number, a
string or a flag). The frames of a report are built from its records, and a report read back from parquet is its
records again, so nothing about a run is written down twice.

A run and its verdict are here; the model call, the part of both, and its frame's schemas are in
`gradebench._records.call` and exported here with them: every record of a report is imported from this module.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from .._base.vocab import CostSource, Role, SchemaUse, ScorePath
from .call import BODY_COLUMNS, CALL_FACTS_SCHEMA, CALLS_SCHEMA, Call, answer_key
from .codec import Columns
from .fields import as_member, total

__all__ = [
    "RUNS_PARTS",
    "BODY_COLUMNS",
    "CALLS_SCHEMA",
    "CALL_FACTS_SCHEMA",
    "CONTENT_FILTERED",
    "FAILED_REASON",
    "RUNS_SCHEMA",
    "VERDICT_COLUMNS",
    "Call",
    "Run",
    "JudgeScore",
    "answer_key",
]


# ----------------------------------------------------------------------------------------------------------- verdict


@dataclass(frozen=True, kw_only=True, slots=True)
class JudgeScore:
    """The blind judge's score of one run against the reference."""

    accuracy: float | None
    """0..7: does the run reach the reference's answer by the right tool calls (None when judging failed).
    An integer from one judgement; the mean of both orders under the label-bias check."""
    work: float | None
    """0..3: does the run show its work."""
    reason: str = ""
    """The judge's reason, in its words."""
    judge_entry: str = ""
    """The catalog entry that judged."""
    path: ScorePath | None = None
    """``schema`` when the strict JSON schema was honoured, ``fallback`` when the verdict was parsed from prose."""
    schema: SchemaUse | None = None
    """What the judge's endpoint did with the JSON schema: ``honoured``, ``ignored`` (answered prose) or ``rejected``
    (answered 400, so the verdict was asked in prose)."""
    params: dict[str, Any] = field(default_factory=dict)
    """Inference parameters the judge was called with."""
    attempts: int = 1
    """Judge calls made until a valid verdict (or until giving up)."""
    error: str | None = None
    """Why no valid verdict came, or None."""
    calls: list[Call] = field(default_factory=list)
    """The judge's model calls."""
    swap_gap: float | None = None
    """Under the label-bias check: how far the scores of the two presentation orders differ (None otherwise)."""
    panel: tuple[JudgeScore, ...] = ()
    """A panel's verdict: each judge's own (their calls are this verdict's); empty for one judge's (see
    `gradebench._judge.panel`)."""

    def __post_init__(self) -> None:
        as_member(self, "path", ScorePath)
        as_member(self, "schema", SchemaUse)

    @property
    def score(self) -> float | None:
        """accuracy + work, 0..10."""
        if self.accuracy is None or self.work is None:
            return None
        return self.accuracy + self.work

    @property
    def cost(self) -> float | None:
        """What the judge's calls cost (None when one's cost is unknown; a failed call, e.g. a rejected schema,
        costs nothing)."""
        return total(c.cost for c in self.calls if c.answered)

    def to_row(self) -> dict[str, Any]:
        """The verdict's columns of its run's row."""
        return _VERDICT.row(self)

    @classmethod
    def from_row(cls, row: Mapping[str, Any], calls: list[Call], params: Mapping[str, Any]) -> JudgeScore:
        """A verdict taken back from its run's row, its judge calls and the judge's params (from the report's meta)."""
        values = _VERDICT.values(row)
        values["reason"] = values["reason"] or ""
        values["judge_entry"] = values["judge_entry"] or ""
        values["attempts"] = values["attempts"] or 0
        return cls(**values, calls=calls, params=dict(params))


_VERDICT = Columns(
    JudgeScore,
    ["score", "accuracy", "work", "reason", "judge_entry", "path", "schema", "error", "attempts", "cost", "swap_gap"],
    names={
        "path": "judge_path",
        "schema": "judge_schema",
        "error": "judge_error",
        "attempts": "judge_attempts",
        "cost": "judge_cost",
    },
)

_REFUSAL_TEXT = re.compile(r'"refusal"\s*:\s*"(?!")')
"""A response whose ``refusal`` is a non-empty text (most say ``"refusal": null``, OpenAI's always)."""

CONTENT_FILTERED = "the provider's content filter stopped the answer"
"""The refusal of a call that stopped at ``finish_reason`` ``content_filter`` (its content empty or cut)."""

FAILED_REASON = "not judged: the run failed, and a failed run scores 0"
"""The ``reason`` of a failed candidate run: it is never sent to the judge, and counts as 0 in every figure."""

_FAILED = {
    **dict.fromkeys(_VERDICT.schema),
    "score": 0.0,
    "accuracy": 0.0,
    "work": 0.0,
    "reason": FAILED_REASON,
    "judge_attempts": 0,
    "judge_cost": 0.0,
}


# --------------------------------------------------------------------------------------------------------------- run


@dataclass(frozen=True, kw_only=True, slots=True)
class Run:
    """One execution of the job on one entry: its calls, its output or error, and how it was judged and scored."""

    benchmark_id: str
    """Id of the benchmark (opaque)."""
    job: str
    """The job's name."""
    input_id: str
    """Stable id of the input."""
    run_id: str
    """Opaque id of this run (it does not spell the entry)."""
    role: Role
    """``reference`` or ``candidate``."""
    entry: str
    """Catalog entry the run was pinned to."""
    model: str
    """Model id of the entry."""
    grade: str
    """Grade of the entry."""
    simulated: bool
    """True when the entry is part of the simulated fleet."""
    repeat: int
    """Repeat index of this input on this entry (0..runs-1)."""
    currency: str
    """Currency of the costs."""
    ok: bool
    """True when the job returned an output."""
    error: str | None = None
    """Why the run failed, or None."""
    output: Any = None
    """What the job returned (JSON-serialisable)."""
    calls: list[Call] = field(default_factory=list)
    """Every model call of the run, tool loop included."""
    wall_s: float = 0.0
    """Wall time of the run when it was made (a rerun served from the cache keeps it, as it keeps the cost)."""
    wall_now_s: float | None = None
    """Wall time of the run this time: ``wall_s`` for a run made now, a cached rerun's own few milliseconds."""
    verdict: JudgeScore | None = None
    """The judge's verdict (None for the reference, or before judging)."""
    scorer: float | None = None
    """Score in code, 0..1, or None."""
    scorer_error: str | None = None
    """Why the scorer raised, or None."""
    tool_missing: int | None = None
    """Reference tool calls the run skipped, checked in code (candidates only)."""
    tool_extra: int | None = None
    """Tool calls the run made that the reference did not."""
    tool_arg_mismatch: int | None = None
    """Tool calls the run made with other arguments than the reference."""
    tool_diff: str | None = None
    """The tool-trace difference in one line (empty when the traces agree)."""

    def __post_init__(self) -> None:
        as_member(self, "role", Role)

    @property
    def n_calls(self) -> int:
        """Model calls the run made (the ``calls`` column)."""
        return len(self.calls)

    @property
    def tool_calls(self) -> int:
        """Tool calls the model asked for."""
        return sum(len(c.tool_results) for c in self.calls)

    @property
    def input_tokens(self) -> int | None:
        """Prompt tokens of every call; None when a call that answered reported no usage (unknown stays unknown)."""
        return _OF_ANSWERED["input_tokens"](self._answered)

    @property
    def output_tokens(self) -> int | None:
        """Completion tokens of every call (reasoning ones included); None when a call that answered reported no
        usage."""
        return _OF_ANSWERED["output_tokens"](self._answered)

    @property
    def cached_input_tokens(self) -> int | None:
        """Prompt tokens of every call served from the provider's prompt cache; None when a call that answered reported
        no usage."""
        return _OF_ANSWERED["cached_input_tokens"](self._answered)

    @property
    def reasoning_tokens(self) -> int | None:
        """Completion tokens of every call spent reasoning; None when a call that answered reported no usage."""
        return _OF_ANSWERED["reasoning_tokens"](self._answered)

    @property
    def latency_s(self) -> float:
        """Sum of the model-call latencies."""
        return sum(c.latency_s for c in self.calls)

    @property
    def cost(self) -> float | None:
        """Cost of the run, cached or not; None when a call's cost is unknown."""
        return _OF_ANSWERED["cost"](self._answered)

    @property
    def price_table_cost(self) -> float | None:
        """What the catalog's prices give for the run's tokens (beside provider-reported costs)."""
        return _OF_ANSWERED["price_table_cost"](self._answered)

    @property
    def cost_source(self) -> CostSource | None:
        """``provider``, ``price_table``, ``mixed`` (some of each), or None when a call's cost is unknown."""
        return _OF_ANSWERED["cost_source"](self._answered)

    @property
    def spent_now(self) -> float | None:
        """What the run cost this time (cache hits cost nothing); None when a call's cost is unknown."""
        return _OF_ANSWERED["spent_now"](self._answered)

    @property
    def spent_now_with_verdict(self) -> float | None:
        """What the run and its verdict spent this time (what a budget counts); None when a call's cost is unknown."""
        judge = self.verdict.calls if self.verdict is not None else []
        return total([self.spent_now, *(c.spent_now for c in judge)])

    @property
    def cached(self) -> bool:
        """True when every call of the run came from the cache (a negative control makes none: its verdict's)."""
        calls = self.verdict.calls if self.role is Role.CONTROL and self.verdict is not None else self.calls
        return bool(calls) and all(c.cache_hit for c in calls)

    @property
    def finish_reason(self) -> str | None:
        """Finish reason of the run's last model call."""
        return self.calls[-1].finish_reason if self.calls else None

    @property
    def truncated(self) -> int:
        """How many of the run's calls stopped at the length limit (``finish_reason`` ``length``)."""
        return sum(c.finish_reason == "length" for c in self.calls)

    @property
    def refusal(self) -> str | None:
        """The first refusal in this run: the model's own, or the provider's content filter stopping an answer
        (`CONTENT_FILTERED`); None when there was none."""
        for c in self.calls:
            text = c.response_json
            if text is not None and _REFUSAL_TEXT.search(text):  # parsed only when it may hold one: most never do
                value = c.message.get("refusal")
                if isinstance(value, str) and value:
                    return value
            if c.finish_reason == "content_filter":
                return CONTENT_FILTERED
        return None

    @property
    def refused(self) -> bool:
        """True when a model refused in this run, or the provider's content filter stopped an answer."""
        return self.refusal is not None

    @property
    def endpoint_error(self) -> str | None:
        """Why the endpoint failed the run, when it did: the error of its last model call, which got no answer (no
        connection, an HTTP error status after the retries, a call past its timeout). None when the run succeeded, or
        failed in the job's own code on an answer the model gave (invalid JSON, the job raising on it): that failure is
        the model's. A run the endpoint failed says nothing of the model's answers, so it is left out of its entry's
        verdict (see the models' ``verdict_reason``; an entry that lost most of its runs so is ``unmeasured``)."""
        if self.ok or not self.calls or self.calls[-1].answered:
            return None
        return self.calls[-1].error

    @property
    def _answered(self) -> list[Call]:
        """Calls that got a response (a failed call has no usage to miss and costs nothing)."""
        return [c for c in self.calls if c.answered]

    def to_row(self) -> dict[str, Any]:
        """The run's row in the report's ``runs`` frame. A candidate run that failed has no verdict: it scores 0."""
        answered = self._answered  # made once for the row's eight columns that read it, not once for each
        row = _RUN.row(self, known={name: of(answered) for name, of in _OF_ANSWERED.items()})
        if self.verdict is not None and self.role is not Role.REFERENCE:
            row.update(self.verdict.to_row())
        elif self.role is Role.CANDIDATE and not self.ok:
            row.update(_FAILED)
        else:
            row.update(dict.fromkeys(_VERDICT.schema))
        row.update(_RUN_TAIL.row(self))
        return row

    @classmethod
    def from_row(
        cls, row: Mapping[str, Any], calls: list[Call], judge_calls: list[Call], judge_params: Mapping[str, Any]
    ) -> Run:
        """A run taken back from its row, its calls and its judge's calls (and the judge's params, from the meta)."""
        verdict = None
        judged = row["role"] in (Role.CANDIDATE, Role.CONTROL)  # a negative control is judged as a candidate is
        if judged and (row["judge_entry"] is not None or row["judge_error"] is not None):
            verdict = JudgeScore.from_row(row, judge_calls, judge_params)
        return cls(**_RUN.values(row), **_RUN_TAIL.values(row), calls=calls, verdict=verdict)


def _cost_source(answered: list[Call]) -> CostSource | None:
    sources = {c.cost_source for c in answered}
    if None in sources or not sources:
        return None
    return sources.pop() if len(sources) == 1 else CostSource.MIXED


_OF_ANSWERED: dict[str, Callable[[list[Call]], Any]] = {
    "input_tokens": lambda answered: total(c.input_tokens for c in answered),
    "output_tokens": lambda answered: total(c.output_tokens for c in answered),
    "cached_input_tokens": lambda answered: total(c.cached_input_tokens for c in answered),
    "reasoning_tokens": lambda answered: total(c.reasoning_tokens for c in answered),
    "cost": lambda answered: total(c.cost for c in answered),
    "price_table_cost": lambda answered: total(c.price_table_cost for c in answered),
    "cost_source": _cost_source,
    "spent_now": lambda answered: total(c.spent_now for c in answered),
}
"""The run's columns made from its answered calls alone (`Run._answered`), by name: its properties and its row."""

_RUN = Columns(
    Run,
    [
        "benchmark_id",
        "job",
        "input_id",
        "run_id",
        "role",
        "entry",
        "model",
        "grade",
        "simulated",
        "repeat",
        "ok",
        "error",
        "endpoint_error",
        "n_calls",
        "tool_calls",
        "input_tokens",
        "output_tokens",
        "cached_input_tokens",
        "reasoning_tokens",
        "latency_s",
        "wall_s",
        "wall_now_s",
        "cost",
        "cost_source",
        "price_table_cost",
        "spent_now",
        "currency",
        "cached",
        "finish_reason",
        "truncated",
        "refused",
        "output",
    ],
    names={"n_calls": "calls"},
)
_RUN_TAIL = Columns(Run, ["scorer", "scorer_error", "tool_missing", "tool_extra", "tool_arg_mismatch", "tool_diff"])
RUNS_SCHEMA: dict[str, pl.DataType] = {**_RUN.schema, **_VERDICT.schema, **_RUN_TAIL.schema}
"""One row per run (reference and candidates): the run, its verdict's columns, its scorer and its tool diff."""

VERDICT_COLUMNS: dict[str, pl.DataType] = _VERDICT.schema
"""The columns a judge's verdict fills in its run's row (``score`` … ``swap_gap``; ``judge_entry`` names the judge)."""

RUNS_PARTS: tuple[tuple[type, Columns], ...] = ((Run, _RUN), (JudgeScore, _VERDICT), (Run, _RUN_TAIL))
"""The records whose fields are the runs frame's columns, in its order (the docs' column page reads them)."""
