"""What a report was measured under: the spec that made it, and what happened (``meta.json`` beside its frames)."""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pydantic

from .._base.vocab import Design, Stopped
from .._catalog.catalog import Entry
from .codec import dumps
from .planted import ControlPlant
from .spec import DEFAULT_RUNS, RaceSpec

__all__ = ["ReportMeta", "entry_terms", "utc_stamp"]


@dataclass(frozen=True, kw_only=True)
class ReportMeta:
    """A report's meta: the `RaceSpec` that made it (``spec``) and what the race made of it — the benchmark, its
    reference and judge, the entries raced, the inputs, whether and why it stopped early."""

    spec: RaceSpec = field(default_factory=RaceSpec)
    """The race as it was asked for, with the job's grade, rubric and scorer filled in: rerun it with
    `gradebench.Benchmark.from_report`."""
    benchmark_id: str = ""
    """Id of the benchmark (opaque)."""
    job: str = ""
    """The job's name (it labels the rows)."""
    instructions: str = ""
    """The job's instructions: the task the judge read."""
    reference_entry: str = ""
    """The pinned entry the reference ran on."""
    judge_entry: str = ""
    """The entry that judged."""
    judge_params: dict[str, Any] = field(default_factory=dict)
    """Inference parameters of the judge (the catalog's ``judge_params``)."""
    candidates: list[str] = field(default_factory=list)
    """The entries raced."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Entries left out because they cannot be called, with the reason."""
    inputs: dict[str, Any] = field(default_factory=dict)
    """The inputs by id."""
    gradebench_version: str = ""
    """The gradebench that measured it."""
    started_at: str = ""
    """When the race started, ISO 8601 in UTC (``2026-12-02T06:12:12Z``; `utc_stamp`); empty in a report written
    before it was kept. A race served from the cache is stamped when it was served: its runs may be older."""
    finished_at: str = ""
    """When the race ended (stopped early or not), as ``started_at``."""
    rejudged_at: str = ""
    """When its cached runs were last judged again (`gradebench.Benchmark.rejudge`), as ``started_at``; empty when
    they never were."""
    stopped: Stopped | None = None
    """Why the race ended early (``cancelled``, ``budget``), or None when it ran to the end."""
    stops: dict[str, str] = field(default_factory=dict)
    """Why each candidate stopped receiving runs before the plan's end (settled, max_runs, budget)."""
    units: list[tuple[str, int]] = field(default_factory=list)
    """A race to a verdict: its units (input id, repeat) in draw order, the order its verdicts read them in."""
    judge_noise_k: int | None = None
    """Extra judgements per run behind ``report.noise`` (None before `judge_noise`)."""
    controls: list[ControlPlant] = field(default_factory=list)
    """The negative controls planted (``spec.controls`` asked for them; `gradebench._records.planted`): their verdicts
    are the
    rows of ``report.controls``, and a planted control without one was not judged."""
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The catalog's terms of every entry that ran or judged, as they were (`entry_terms`): what `gradebench.compare`
    holds two races to (empty in a report written before they were kept)."""
    families: dict[str, str] = field(default_factory=dict)
    """The family of each entry of the race whose family is known (the judges, the reference and the candidates):
    what the ``judge_family`` diagnostic reads."""

    @property
    def judges(self) -> list[str]:
        """Every entry that judged: the spec's panel, or the one judge (empty when not known)."""
        if self.spec.judges:
            return list(self.spec.judges)
        return [self.judge_entry] if self.judge_entry else []

    @property
    def max_runs(self) -> int:
        """The most candidate runs an entry could get."""
        return self.spec.most_runs(len(self.inputs))

    def replace(self, **changes: Any) -> ReportMeta:
        """This meta with some fields changed."""
        return dataclasses.replace(self, **changes)

    def with_spec(self, **changes: Any) -> ReportMeta:
        """This meta with some fields of its spec changed (e.g. ``margin``, ``rubric``)."""
        return dataclasses.replace(self, spec=self.spec.replace(**changes))

    def to_dict(self) -> dict[str, Any]:
        """The meta as plain JSON values (what ``meta.json`` holds; its spec as `RaceSpec.to_dict` writes it)."""
        made = json.loads(dumps(dataclasses.asdict(self)))
        made["spec"] = self.spec.to_dict()
        return made

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], *, source: str = "meta") -> ReportMeta:
        """Validate a meta read back from ``meta.json`` (also one written before the spec had a field of its own); a
        bad field raises a `ValueError` naming it."""
        data = _upgraded(dict(raw))
        try:
            spec = RaceSpec.from_dict(data.pop("spec", {}), source=f"{source}: spec")
            return _META.validate_python({**data, "spec": spec})
        except pydantic.ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(x) for x in problem["loc"]) or "meta"
            raise ValueError(f"{source}: field {where!r}: {problem['msg']}") from None


def utc_stamp() -> str:
    """Now, ISO 8601 in UTC to the second: ``2026-12-02T06:12:12Z`` (a report's times)."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def entry_terms(entry: Entry) -> dict[str, Any]:
    """What the catalog said of an entry that shapes its answers and their cost: the model and endpoint, the routing
    pin, the default params (and those renamed or dropped), the prices its calls are priced at (genai-prices' for an
    entry the database prices, `Entry.prices_used`) and where they come from, and its Batch API (only when it has one:
    the terms of an entry without are those written before batches)."""
    batch = {"batch": entry.batch} if entry.batch else {}
    own = (entry.price_in, entry.price_out, entry.price_cached_in)
    price_in, price_out, price_cached_in = entry.prices_used() if entry.priced_by_database else own
    return batch | {
        "model": entry.model,
        "base_url": entry.base_url.rstrip("/"),
        "routing": dict(entry.routing),
        "params": dict(entry.params),
        "rename_params": dict(entry.rename_params),
        "drop_params": list(entry.drop_params),
        "price_in": price_in,
        "price_out": price_out,
        "price_cached_in": price_cached_in,
        "currency": entry.currency,
        "price_source": entry.price_source,
    }


_SPEC_FIELDS = {f.name for f in dataclasses.fields(RaceSpec)}


def _upgraded(data: dict[str, Any]) -> dict[str, Any]:
    """A ``meta.json`` as this version writes it. Before the spec, its fields stood beside the outcome's, the design
    and the runs apart (``design``, ``runs_per_entry``), and ``stopped`` was once a flag."""
    if isinstance(data.get("stopped"), bool):
        data["stopped"] = Stopped.CANCELLED if data["stopped"] else None
    if isinstance(data.get("spec"), dict) and "controls" not in data["spec"]:
        data["spec"] = {**data["spec"], "controls": 0}  # written before negative controls: it planted none
    if "spec" in data:
        return data
    design, runs = data.pop("design", Design.FIXED), data.pop("runs_per_entry", None)
    # the job stood by its name only: where to import it from is not known (a rerun passes job=...)
    spec = {name: data.pop(name) for name in list(data) if name in _SPEC_FIELDS - {"job", "candidates", "judge"}}
    spec["runs"] = Design.AUTO.value if design == Design.AUTO else runs or DEFAULT_RUNS
    spec["judge"] = data.get("judge_entry") or None
    spec["controls"] = 0
    if data.get("candidates"):
        spec["candidates"] = data["candidates"]
    return {**data, "spec": spec}


ReportMeta.__pydantic_config__ = pydantic.ConfigDict(extra="forbid")  # type: ignore[attr-defined]
_META = pydantic.TypeAdapter(ReportMeta)
