"""The record of one model call and its row forms: its row in a report's ``calls`` frame (`CALLS_SCHEMA`), and its
facts without the bodies (`CALL_FACTS_SCHEMA`), what a report's own checks read.

A call's request and response bodies are kept packed (`gradebench._records.codec.pack`); its row holds them as JSON
text. The schemas are derived from the record's own fields and properties (`Columns`), as a run's are
(`gradebench._records.records`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from .._base.canonical import canonical_json
from .._base.vocab import CostSource, Role
from .codec import Columns, dumps, pack, unpack
from .fields import as_member
from .spool import Packed

__all__ = [
    "BODY_COLUMNS",
    "CALLS_SCHEMA",
    "CALL_FACTS_SCHEMA",
    "Call",
    "answer_key",
    "assistant_message",
    "non_finite_usage",
]


def assistant_message(response: dict[str, Any] | None) -> dict[str, Any]:
    """The assistant message of a parsed response body (empty when there is none): `Call.message`, for a caller that
    has parsed the body already."""
    if not response or not response.get("choices"):
        return {}
    return response["choices"][0].get("message") or {}


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
    tool_results: Sequence[dict[str, Any]] = ()
    """Each tool call the response asked for: ``{id, name, arguments, result}`` or ``{..., error}`` (none: the empty
    tuple, one for every call)."""
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
        if not self.tool_results and type(self.tool_results) is not tuple:  # most calls ask for none: not a list each
            object.__setattr__(self, "tool_results", ())
        as_member(self, "role", Role)
        as_member(self, "cost_source", CostSource)
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
        return assistant_message(self.response)

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
        # read only for an answered call without usage (rare): the body is parsed for nothing else here
        unreadable = non_finite_usage(self.response) if self.answered and not self.has_usage else []
        row["usage_not_finite"] = ", ".join(unreadable) or None
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
CALL_FACTS_SCHEMA: dict[str, pl.DataType] = {
    **_CALL_FACTS.schema,
    "answered": pl.Boolean(),
    "answer": pl.String(),
    "usage_not_finite": pl.String(),
}
"""One row per model call without its bodies, what the report's own checks read (a frame of 200,000 runs' calls
holds every transcript twice over): ``answered`` (a response came), ``answer``, what a candidate's generation
said (its content and tool calls as JSON text) when it has a generation id, to tell two generations under one id
apart, and ``usage_not_finite``, the usage fields the response sent as NaN or Infinity (``prompt_tokens=Infinity``,
comma-separated; None when there were none): that call's usage is unknown."""


def non_finite_usage(body: Any) -> list[str]:
    """The numbers in a response body's ``usage`` (nested details included) that are NaN or ±Infinity, as
    ``name=value``: Python's json reads those words, and no count or cost can be one."""
    usage = body.get("usage") if isinstance(body, Mapping) else None
    if isinstance(usage, Mapping) and _all_finite(usage):  # every answer's usage is read: the common case is quick
        return []
    found: list[str] = []
    if isinstance(usage, Mapping):
        _non_finite(usage, "", found)
    elif isinstance(usage, float) and not math.isfinite(usage):  # "usage": NaN itself
        found.append(f"={json.dumps(usage)}")
    return found


def _non_finite(values: Mapping[Any, Any], prefix: str, found: list[str]) -> None:
    """Add the non-finite numbers of ``values`` to ``found`` as ``name=value`` (a name is made only for what is
    found). A module function: a nested one that calls itself is a reference cycle left for the garbage collector
    after every call read."""
    for key, inner in values.items():
        if isinstance(inner, Mapping):
            _non_finite(inner, f"{prefix}{key}.", found)
        elif isinstance(inner, float) and not math.isfinite(inner):
            found.append(f"{prefix}{key}={json.dumps(inner)}")


def _all_finite(values: Mapping[Any, Any]) -> bool:
    """Whether no number in ``values`` (nested mappings included) is NaN or ±Infinity."""
    for inner in values.values():
        if isinstance(inner, float):
            if not math.isfinite(inner):
                return False
        elif isinstance(inner, Mapping) and not _all_finite(inner):
            return False
    return True


def answer_key(message: Mapping[str, Any]) -> str:
    """What an assistant message said: its content and tool calls, as canonical JSON text."""
    return canonical_json([message.get("content"), message.get("tool_calls")])


CALLS_PARTS: tuple[tuple[type, Columns], ...] = ((Call, _CALL),)
"""The record whose fields are the calls frame's columns (the docs' column page reads their docstrings)."""
