"""What a report was measured under: the typed meta beside its frames (``meta.json``)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pydantic

from ._codec import dumps
from ._stats import DEFAULT_MARGIN

__all__ = ["ReportMeta"]


@dataclass(frozen=True, kw_only=True)
class ReportMeta:
    """What a report was measured under: the benchmark, its judge, its inputs (``meta.json`` beside the parquet)."""

    benchmark_id: str = ""
    """Id of the benchmark (opaque)."""
    job: str = ""
    """The job's name."""
    instructions: str = ""
    """The job's instructions: the task the judge read."""
    grade: str = ""
    """The grade raced."""
    also: list[str] = field(default_factory=list)
    """Other grades raced against the same reference."""
    margin: float = DEFAULT_MARGIN
    """The non-inferiority margin of the verdicts (points of 10)."""
    runs_per_entry: int | None = None
    """Runs per input and entry asked for."""
    reference_entry: str = ""
    """The pinned entry the reference ran on."""
    judge_entry: str = ""
    """The entry that judged."""
    judge_params: dict[str, Any] = field(default_factory=dict)
    """Inference parameters of the judge."""
    judge_swap: bool = False
    """Whether every run was judged in both presentation orders."""
    judge_reasoning: bool = False
    """Whether the judge was shown the models' reasoning."""
    rubric: str = ""
    """The benchmark's rubric, beside the fixed one."""
    scorer: str | None = None
    """The scorer in code, by name."""
    salt: str = ""
    """The user salt of the cache keys."""
    candidates: list[str] = field(default_factory=list)
    """The entries raced."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Entries left out because they cannot be called, with the reason."""
    inputs: dict[str, Any] = field(default_factory=dict)
    """The inputs by id."""
    gradebench_version: str = ""
    """The gradebench that measured it."""
    stopped: str | None = None
    """Why the race ended early (``cancelled``, ``budget``), or None when it ran to the end."""
    judge_noise_k: int | None = None
    """Extra judgements per run behind ``report.noise`` (None before `judge_noise`)."""
    design: str = "fixed"
    """``fixed`` (``runs`` per input and entry) or ``auto`` (a race to a verdict)."""
    units: list[tuple[str, int]] = field(default_factory=list)
    """A race to a verdict: its units (input id, repeat) in draw order, the order its verdicts read them in."""
    max_runs: int | None = None
    """A race to a verdict: the most runs an entry could get."""
    stops: dict[str, str] = field(default_factory=dict)
    """A race to a verdict: why each candidate stopped receiving runs (settled, max_runs, budget)."""
    budget: float | None = None
    """The most the race could spend now, or None."""

    def replace(self, **changes: Any) -> ReportMeta:
        """This meta with some fields changed."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The meta as plain JSON values (what ``meta.json`` holds)."""
        return json.loads(dumps(dataclasses.asdict(self)))

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], *, source: str = "meta") -> ReportMeta:
        """Validate a meta read back from ``meta.json``; a bad field raises a `ValueError` naming it."""
        data = dict(raw)
        if isinstance(data.get("stopped"), bool):  # reports written before the stop had a reason
            data["stopped"] = "cancelled" if data["stopped"] else None
        try:
            return _META.validate_python(data)
        except pydantic.ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(x) for x in problem["loc"]) or "meta"
            raise ValueError(f"{source}: field {where!r}: {problem['msg']}") from None


ReportMeta.__pydantic_config__ = pydantic.ConfigDict(extra="forbid")  # type: ignore[attr-defined]
_META = pydantic.TypeAdapter(ReportMeta)
