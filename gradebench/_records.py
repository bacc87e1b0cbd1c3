"""The record of one run of a job on one entry, and the judge's verdict on it."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ._seat import Call
from ._tooldiff import ToolDiff

__all__ = ["Run", "Verdict"]


@dataclass(frozen=True, kw_only=True)
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
    path: str | None = None
    """``schema`` when the strict JSON schema was honoured, ``fallback`` when the verdict was parsed from prose."""
    schema: str | None = None
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

    @property
    def score(self) -> float | None:
        """accuracy + work, 0..10."""
        if self.accuracy is None or self.work is None:
            return None
        return self.accuracy + self.work


@dataclass(frozen=True, kw_only=True)
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
    role: str
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
    """Wall time of the run."""
    verdict: Verdict | None = None
    """The judge's verdict (None for the reference, or before judging)."""
    scorer: float | None = None
    """Score in code, 0..1, or None."""
    scorer_error: str | None = None
    """Why the scorer raised, or None."""
    tool_diff: ToolDiff | None = None
    """How the run's tool calls differ from the reference's, checked in code (candidates only)."""

    @property
    def tool_calls(self) -> int:
        return sum(len(c.tool_results) for c in self.calls)

    @property
    def input_tokens(self) -> int | None:
        """Prompt tokens of every call; None when a call that answered reported no usage (unknown stays unknown)."""
        return _total(c.input_tokens for c in self._answered)

    @property
    def output_tokens(self) -> int | None:
        return _total(c.output_tokens for c in self._answered)

    @property
    def cached_input_tokens(self) -> int | None:
        return _total(c.cached_input_tokens for c in self._answered)

    @property
    def reasoning_tokens(self) -> int | None:
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
    def cost_source(self) -> str | None:
        """``provider``, ``price_table``, ``mixed`` (some of each), or None when a call's cost is unknown."""
        sources = {c.cost_source for c in self._answered}
        if None in sources or not sources:
            return None
        return sources.pop() if len(sources) == 1 else "mixed"

    @property
    def spent_now(self) -> float | None:
        """What the run cost this time (cache hits cost nothing); None when a call's cost is unknown."""
        return _total(c.spent_now for c in self._answered)

    @property
    def cached(self) -> bool:
        """True when every call of the run came from the cache."""
        return bool(self.calls) and all(c.cache_hit for c in self.calls)

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
        """The first refusal a model gave in this run, or None."""
        for c in self.calls:
            value = c.message.get("refusal")
            if isinstance(value, str) and value:
                return value
        return None

    @property
    def refused(self) -> bool:
        """True when a model refused in this run."""
        return self.refusal is not None

    @property
    def _answered(self) -> list[Call]:
        """Calls that got a response (a failed call has no usage to miss and costs nothing)."""
        return [c for c in self.calls if c.response is not None]

    @property
    def output_json(self) -> str | None:
        return None if self.output is None and not self.ok else json.dumps(self.output, ensure_ascii=False, default=str)


def _total(values: Iterable[Any]) -> Any:
    """The sum, or None when any value is None."""
    total: Any = 0
    for v in values:
        if v is None:
            return None
        total += v
    return total
