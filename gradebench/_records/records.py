"""The records of a benchmark and their one row form: a model call, a verdict, a run.

Each record owns its codec: ``to_row()`` gives its row in a report frame, ``from_row()`` takes it back, and the frame
schemas (`CALLS_SCHEMA`, `RUNS_SCHEMA`) are derived from the records' own fields and properties (`Columns`): a
column is an attribute, its type is the attribute's annotation (JSON text for anything that is not a number, a
string or a flag). The frames of a report are built from its records, and a report read back from parquet is its
records again, so nothing about a run is written down twice.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from .._base.vocab import CostSource, Role, SchemaUse, VerdictPath
from .codec import Columns, dumps, pack, unpack
from .spool import Packed

__all__ = [
    "BODY_COLUMNS",
    "CALLS_SCHEMA",
    "CALL_FACTS_SCHEMA",
    "CONTENT_FILTERED",
    "FAILED_REASON",
    "RUNS_SCHEMA",
    "Call",
    "Run",
    "Verdict",
    "answer_key",
]


def _total(values: Iterable[Any]) -> Any:
    """The sum, or None when any value is unknown."""
    total: Any = 0
    for v in values:
        if v is None:
            return None
        total += v
    return total


def _as_member(record: Any, name: str, kind: type[enum.StrEnum]) -> None:
    """A record's text field as the member of ``kind`` it names (a bad value raises, naming the field)."""
    value = getattr(record, name)
    if value is None or type(value) is kind:
        return
    try:
        object.__setattr__(record, name, kind(value))
    except ValueError:
        allowed = ", ".join(m.value for m in kind)
        raise ValueError(f"{type(record).__name__}.{name} must be one of {allowed}, got {value!r}") from None


# -------------------------------------------------------------------------------------------------------------- call


@dataclass(frozen=True, kw_only=True, slots=True)
class Call:
    """One model call and what came of it: request, response, the tools it asked for and what they returned.

    Token counts and cost are what the endpoint reported, or None when it reported nothing: unknown stays unknown.
    """

    run_id: str
    """The opaque id of the run this call belongs to."""
    seq: int
    """Position of the call within its run (0, 1, ...)."""
    role: Role
    """``reference``, ``candidate`` or ``judge``."""
    entry: str
    """The catalog entry called."""
    request_packed: Packed
    """The JSON body sent (model, messages, tools, parameters), packed (see `request_json`); never headers or keys."""
    asked_model: str | None = None
    """The model the job's own openai code named (``seat.openai``), which the entry's model replaced; else None."""
    response_packed: Packed | None = None
    """The JSON body received (keys scrubbed), packed; None when the call failed."""
    tool_results: list[dict[str, Any]] = field(default_factory=list)
    """Each tool call the response asked for: ``{id, name, arguments, result}`` or ``{..., error}``."""
    input_tokens: int | None = None
    """Prompt tokens as the endpoint reported them (cached ones included); None when it reported no usage."""
    output_tokens: int | None = None
    """Completion tokens as the endpoint reported them (reasoning ones included); None when unreported."""
    cached_input_tokens: int | None = None
    """Prompt tokens served from the provider's prompt cache (0 when usage says nothing of caching)."""
    reasoning_tokens: int | None = None
    """Completion tokens spent reasoning (0 when usage says nothing of reasoning)."""
    latency_s: float = 0.0
    """Time the original request took, retries included (kept on a cache hit)."""
    cost: float | None = None
    """Cost of the call in the entry's currency: the provider's own figure when it reported one, else the catalog's
    price table; None when neither is known (kept on a cache hit)."""
    cost_source: CostSource | None = None
    """``provider`` (the endpoint reported the cost), ``price_table`` (computed from the catalog), or None."""
    price_table_cost: float | None = None
    """What the entry's price table (the catalog's prices, or genai-prices') gives for the reported tokens, beside a
    provider's figure (a stale price shows)."""
    price_source: str | None = None
    """Where ``cost`` came from: ``provider`` (the endpoint reported it), ``catalog`` (the catalog's prices) or
    ``genai-prices <version>`` (the database's, for an entry that names its provider); None when unknown."""
    cache_hit: bool = False
    """True when the response came from the on-disk cache."""
    generation_id: str | None = None
    """The response id of the generation that produced the text (the original one on a cache hit)."""
    finish_reason: str | None = None
    """``stop``, ``tool_calls``, ``length``, ..."""
    error: str | None = None
    """Why the call failed, or None."""

    def __post_init__(self) -> None:
        _as_member(self, "role", Role)
        _as_member(self, "cost_source", CostSource)
        for name in ("finish_reason", "price_source"):  # a few values on every call: one text each, not a copy a call
            value = getattr(self, name)
            if type(value) is str:
                object.__setattr__(self, name, sys.intern(value))

    @property
    def request_json(self) -> str:
        """The JSON body sent, as text: the ``calls`` frame's ``request``."""
        return unpack(self.request_packed)

    @property
    def response_json(self) -> str | None:
        """The JSON body received, as text (None when the call failed): the ``calls`` frame's ``response``."""
        return None if self.response_packed is None else unpack(self.response_packed)

    @property
    def request(self) -> dict[str, Any]:
        """The JSON body sent, parsed."""
        return json.loads(self.request_json)

    @property
    def response(self) -> dict[str, Any] | None:
        """The JSON body received, parsed (None when the call failed)."""
        text = self.response_json
        return None if text is None else json.loads(text)

    @property
    def answered(self) -> bool:
        """True when the endpoint answered with a completion."""
        return self.response_packed is not None

    @property
    def spent_now(self) -> float | None:
        """What this call cost this time: nothing on a cache hit; None when its cost is unknown."""
        return 0.0 if self.cache_hit else self.cost

    @property
    def message(self) -> dict[str, Any]:
        """The assistant message of the response (empty when the call failed)."""
        response = self.response
        if not response or not response.get("choices"):
            return {}
        return response["choices"][0].get("message") or {}

    @property
    def has_usage(self) -> bool:
        """Whether the endpoint reported the call's prompt and completion tokens."""
        return self.input_tokens is not None and self.output_tokens is not None

    @classmethod
    def from_bodies(cls, *, request: Any, response: Any = None, **fields: Any) -> Call:
        """A call from its request and response bodies, each a JSON value or its text (``response`` None: the call
        failed); the other fields as the record's. The bodies are kept packed (see `PACK_FROM`)."""
        request_json = request if isinstance(request, str) else dumps(request)
        response_json = response if response is None or isinstance(response, str) else dumps(response)
        packed = None if response_json is None else pack(response_json)
        return cls(request_packed=pack(request_json), response_packed=packed, **fields)

    def to_row(self) -> dict[str, Any]:
        """The call's row in the report's ``calls`` frame (request, response and tool results as JSON text)."""
        return _CALL.row(self)

    def facts_row(self) -> dict[str, Any]:
        """The call's row without its bodies (columns of `CALL_FACTS_SCHEMA`)."""
        row = _CALL_FACTS.row(self)
        row["answered"] = self.answered
        keyed = self.role is Role.CANDIDATE and self.generation_id is not None and self.answered
        row["answer"] = answer_key(self.message) if keyed else None
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Call:
        """A call taken back from its row."""
        values = _CALL.values(row)
        values["tool_results"] = values["tool_results"] or []
        return cls.from_bodies(request=row["request"], response=row["response"], **values)


_CALL = Columns(
    Call,
    [
        {"request_packed": "request_json", "response_packed": "response_json"}.get(f.name, f.name)
        for f in dataclasses.fields(Call)
    ],
    names={"request_json": "request", "response_json": "response"},
)
CALLS_SCHEMA: dict[str, pl.DataType] = _CALL.schema
"""One row per model call, judge calls included (``role`` says which)."""

BODY_COLUMNS = ("request", "response", "tool_results")
"""The columns of ``calls`` that hold a call's bodies: the bulk of a report, left out of `CALL_FACTS_SCHEMA`."""
_CALL_FACTS = Columns(Call, [c.attr for c in _CALL.columns if c.name not in BODY_COLUMNS])
CALL_FACTS_SCHEMA: dict[str, pl.DataType] = {**_CALL_FACTS.schema, "answered": pl.Boolean(), "answer": pl.String()}
"""One row per model call without its bodies, what the report's own checks read (a frame of 200,000 runs' calls
holds every transcript twice over): ``answered`` (a response came), and ``answer``, what a candidate's generation
said (its content and tool calls as JSON text) when it has a generation id, to tell two generations under one id
apart."""


def answer_key(message: Mapping[str, Any]) -> str:
    """What an assistant message said: its content and tool calls, as JSON text."""
    return json.dumps([message.get("content"), message.get("tool_calls")], sort_keys=True, default=str)


# ----------------------------------------------------------------------------------------------------------- verdict


@dataclass(frozen=True, kw_only=True, slots=True)
class Verdict:
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
    path: VerdictPath | None = None
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
    panel: tuple[Verdict, ...] = ()
    """A panel's verdict: each judge's own (their calls are this verdict's); empty for one judge's (see
    `gradebench._judge.panel`)."""

    def __post_init__(self) -> None:
        _as_member(self, "path", VerdictPath)
        _as_member(self, "schema", SchemaUse)

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
        return _total(c.cost for c in self.calls if c.answered)

    def to_row(self) -> dict[str, Any]:
        """The verdict's columns of its run's row."""
        return _VERDICT.row(self)

    @classmethod
    def from_row(cls, row: Mapping[str, Any], calls: list[Call], params: Mapping[str, Any]) -> Verdict:
        """A verdict taken back from its run's row, its judge calls and the judge's params (from the report's meta)."""
        values = _VERDICT.values(row)
        values["reason"] = values["reason"] or ""
        values["judge_entry"] = values["judge_entry"] or ""
        values["attempts"] = values["attempts"] or 0
        return cls(**values, calls=calls, params=dict(params))


_VERDICT = Columns(
    Verdict,
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
    verdict: Verdict | None = None
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
        _as_member(self, "role", Role)

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
        return _total(c.input_tokens for c in self._answered)

    @property
    def output_tokens(self) -> int | None:
        """Completion tokens of every call (reasoning ones included); None when a call that answered reported no
        usage."""
        return _total(c.output_tokens for c in self._answered)

    @property
    def cached_input_tokens(self) -> int | None:
        """Prompt tokens of every call served from the provider's prompt cache; None when a call that answered reported
        no usage."""
        return _total(c.cached_input_tokens for c in self._answered)

    @property
    def reasoning_tokens(self) -> int | None:
        """Completion tokens of every call spent reasoning; None when a call that answered reported no usage."""
        return _total(c.reasoning_tokens for c in self._answered)

    @property
    def latency_s(self) -> float:
        """Sum of the model-call latencies."""
        return sum(c.latency_s for c in self.calls)

    @property
    def cost(self) -> float | None:
        """Cost of the run, cached or not; None when a call's cost is unknown."""
        return _total(c.cost for c in self._answered)

    @property
    def price_table_cost(self) -> float | None:
        """What the catalog's prices give for the run's tokens (beside provider-reported costs)."""
        return _total(c.price_table_cost for c in self._answered)

    @property
    def cost_source(self) -> CostSource | None:
        """``provider``, ``price_table``, ``mixed`` (some of each), or None when a call's cost is unknown."""
        sources = {c.cost_source for c in self._answered}
        if None in sources or not sources:
            return None
        return sources.pop() if len(sources) == 1 else CostSource.MIXED

    @property
    def spent_now(self) -> float | None:
        """What the run cost this time (cache hits cost nothing); None when a call's cost is unknown."""
        return _total(c.spent_now for c in self._answered)

    @property
    def spent_now_with_verdict(self) -> float | None:
        """What the run and its verdict spent this time (what a budget counts); None when a call's cost is unknown."""
        judge = self.verdict.calls if self.verdict is not None else []
        return _total([self.spent_now, *(c.spent_now for c in judge)])

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
    def _answered(self) -> list[Call]:
        """Calls that got a response (a failed call has no usage to miss and costs nothing)."""
        return [c for c in self.calls if c.answered]

    def to_row(self) -> dict[str, Any]:
        """The run's row in the report's ``runs`` frame. A candidate run that failed has no verdict: it scores 0."""
        row = _RUN.row(self)
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
            verdict = Verdict.from_row(row, judge_calls, judge_params)
        return cls(**_RUN.values(row), **_RUN_TAIL.values(row), calls=calls, verdict=verdict)


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
