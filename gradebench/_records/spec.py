"""One race spec: everything that defines a race, with every default and every check in one place.

A `RaceSpec` is a value: the `Benchmark` keywords fill one, a run config file (``gradebench run``) parses into one, the
panel's form edits one, a report's meta carries the one that made it (``report.meta.spec``), and rejudging reads the
judge options from it, changed where a `JudgeSpec` says. A new option is one field here. `RaceSpec.lineup` holds a spec
against a catalog: which entries race, which one is the reference and which one judges.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pydantic

from .._base.canonical import canonical_json
from .._base.tomlfile import UNKNOWN_FIELD, problem_text
from .._base.vocab import Design
from .._catalog.catalog import Catalog, Entry
from .._stats.paired import DEFAULT_MARGIN
from .codec import dumps

__all__ = [
    "DEFAULT_CONTROLS",
    "DEFAULT_RUNS",
    "JOB_SCORER",
    "MAX_RUNS_PER_INPUT",
    "NO_SCORER",
    "JudgeSpec",
    "Lineup",
    "RaceSpec",
    "Runs",
]

DEFAULT_RUNS = 3
"""Runs per input and entry when none is asked for."""
DEFAULT_CONTROLS = 3
"""Negative controls a race plants when none is asked for: one of each kind (`gradebench._records.planted`)."""
MAX_RUNS_PER_INPUT = 4
"""A race to a verdict gives an entry at most this many runs per input unless ``max_runs`` says otherwise."""
Runs = int | Literal["auto", "gsd"]
"""What ``runs`` takes: runs per input and entry, or a race to a verdict: ``gsd`` (`Design.GROUP_SEQUENTIAL`: eight
planned looks) or ``auto`` (`Design.AUTO`: another name for the same race)."""
JOB_SCORER = "job"
"""``scorer`` naming the job's own scorer."""
NO_SCORER = "none"
"""``scorer`` asking for no scorer at all (None asks for the job's own, when it has one)."""


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True, kw_only=True)
class RaceSpec:
    """Everything that defines a race: the job, the grade and who races, how many runs, the verdict's margin, the
    budget, what the judge reads and how it judges, the scorer and the salt. Checked when made."""

    job: str | None = None
    """The job: an example job's name (order-agent, selecting-agent), module:attribute, or prompt:{...} (a job without
    code, as its fields). Unset when it was given as code that cannot be imported by name (then
    `gradebench.Benchmark.from_report` needs job=...)."""
    catalog: str | None = None
    """The catalog: sim for the simulated fleet, or a catalog TOML file. Unset when it was built in code (then
    `gradebench.Benchmark.from_report` needs catalog=...)."""
    grade: str | None = None
    """The grade to race (its pick is the reference); unset: the grade the job declares."""
    also: tuple[str, ...] = ()
    """Other grades whose entries race too, against the same reference: does the job need its grade at all?"""
    candidates: tuple[str, ...] | None = None
    """Entry names to race; unset: every callable entry of the grade (and of also)."""
    runs: Runs = DEFAULT_RUNS
    """Runs per input and entry, or race to a verdict: gsd (in eight planned looks; auto is another name for it)."""
    max_runs: int | None = None
    """Racing to a verdict (runs = gsd or auto): the most runs an entry gets; unset: 4 per input
    (`MAX_RUNS_PER_INPUT`)."""
    margin: float = DEFAULT_MARGIN
    """The non-inferiority margin of the verdicts, in points of 10."""
    budget: float | None = None
    """The most the race may spend now, in the catalog's currency; unset: no cap."""
    rubric: str | None = None
    """What a good answer does, beside the fixed rubric the judge reads; unset: the job's own."""
    scorer: str | None = None
    """job (the job's own), none, or a spec: field_equals:PATH, numeric_close:PATH, set_f1:PATH, choice_letter[:PATH],
    each with @GOLD to compare with the input's gold label (see `gradebench.scorers.SPECS`); a scorer given as code is
    recorded by its name. Unset: the job's own, when it has one."""
    judge: str | None = None
    """The entry that judges; unset: the catalog's ceiling."""
    judges: tuple[str, ...] | None = None
    """A panel of judges (entry names, best of other families): every run is judged by each, its score is their mean,
    and their agreement is reported. Unset: judge alone. One name is the same as judge."""
    judge_swap: bool = False
    """The label-bias check: judge every run in both presentation orders."""
    judge_reasoning: bool = False
    """Show the judge the models' reasoning where providers returned it."""
    judge_batch: bool = False
    """Send the verdict requests through the judge provider's Batch API (its entry's batch, else OpenAI's shape): at
    the batch price, within the provider's completion window (verdicts land when the batch does). An entry whose
    catalog batch is set batches whatever this says."""
    salt: str = ""
    """The user salt of the cache keys: a new salt draws fresh samples."""
    concurrency: int | None = None
    """Requests in flight at once; unset: the catalog's concurrency."""
    controls: int = DEFAULT_CONTROLS
    """Negative controls: planted runs known to be wrong (another input's answer, an empty answer, the answer cut in
    half), judged blind among the real runs; a judge that scores them as high as right answers voids the verdicts.
    0: none."""

    def __post_init__(self) -> None:
        if self.runs not in (Design.AUTO, Design.GROUP_SEQUENTIAL) and not _positive_int(self.runs):
            raise ValueError(f"runs must be an integer >= 1, 'gsd' or 'auto', got {self.runs!r}")
        if self.max_runs is not None and not _positive_int(self.max_runs):
            raise ValueError(f"max_runs must be an integer >= 1, got {self.max_runs!r}")
        if self.budget is not None and not (_number(self.budget) and self.budget > 0):
            raise ValueError(f"budget must be a number > 0 (in the catalog's currency), got {self.budget!r}")
        if not (_number(self.margin) and self.margin >= 0):
            raise ValueError(f"margin must be >= 0 (points of 10), got {self.margin!r}")
        if not (isinstance(self.controls, int) and not isinstance(self.controls, bool) and self.controls >= 0):
            raise ValueError(f"controls must be an integer >= 0, got {self.controls!r}")
        if self.concurrency is not None and not _positive_int(self.concurrency):
            raise ValueError(f"concurrency must be an integer >= 1, got {self.concurrency!r}")
        for name in ("also", "candidates"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"{name} must be a list of names, got {value!r}")
            object.__setattr__(self, name, tuple(value))  # a list given is kept as a tuple: the spec is a value
        if self.candidates is not None and not self.candidates:
            raise ValueError("candidates must not be empty")
        self._check_judges()
        object.__setattr__(self, "margin", float(self.margin))
        if self.budget is not None:
            object.__setattr__(self, "budget", float(self.budget))

    def _check_judges(self) -> None:
        """``judges`` as a tuple of distinct names, at least one; one name is ``judge`` (so a one-judge spec is the
        spec it always was), and a panel with ``judge`` beside it is refused (which of them would judge?)."""
        judge, judges = _checked_judges(self.judge, self.judges)
        object.__setattr__(self, "judge", judge)
        object.__setattr__(self, "judges", judges)

    @property
    def design(self) -> Design:
        """``fixed`` (``runs`` per input and entry), ``gsd`` or ``auto`` (a race to a verdict)."""
        return Design(self.runs) if isinstance(self.runs, str) else Design.FIXED

    def most_runs(self, inputs: int) -> int:
        """The most candidate runs an entry gets over ``inputs`` inputs: ``runs`` × inputs, or ``max_runs`` racing to
        a verdict (default `MAX_RUNS_PER_INPUT` per input)."""
        if self.design.to_verdict:
            return self.max_runs or MAX_RUNS_PER_INPUT * inputs
        return int(self.runs) * inputs

    def replace(self, **changes: Any) -> RaceSpec:
        """This spec with some fields changed (checked again)."""
        return dataclasses.replace(self, **changes)

    def lineup(self, catalog: Catalog) -> Lineup:
        """Who races under this spec on ``catalog``: the reference (the grade's pick), the judge, the candidates that
        can be called and those that cannot, with why. A grade, entry or judge the catalog lacks raises, naming it."""
        if self.grade is None:
            raise ValueError("no grade: pass grade=... or declare the job's grade")
        grades = [self.grade, *(g for g in self.also if g != self.grade)]
        for grade in grades:
            catalog.of_grade(grade)  # raises naming the grade
        if self.candidates is None:
            asked = [e for g in grades for e in catalog.of_grade(g)]
        else:
            asked = catalog.resolve(self.candidates)
        judges = tuple(catalog[name] for name in self.judges) if self.judges else ()
        _distinct_judges(judges)
        return Lineup(
            reference=catalog.pick(self.grade),
            judge=judges[0] if judges else catalog[self.judge] if self.judge else catalog.ceiling(),
            judges=judges,
            candidates=tuple(e for e in asked if e.callable_reason() is None),
            skipped={e.name: why for e in asked if (why := e.callable_reason()) is not None},
        )

    def to_dict(self) -> dict[str, Any]:
        """The spec as plain JSON values (what a report's ``meta.json`` holds under ``spec``). ``judge_batch`` is
        written only when on: a race that does not batch writes the very meta it wrote before the option existed."""
        made = json.loads(dumps(dataclasses.asdict(self)))
        if not self.judge_batch:
            del made["judge_batch"]
        return made

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], *, source: str = "spec", also_known: Iterable[str] = ()) -> RaceSpec:
        """A spec from plain values (a run config, ``meta.json``); an unknown or bad field raises a `ValueError` that
        names ``source`` and the field (and, for a misspelt one, the field it most likely meant among the spec's and
        ``also_known``)."""
        try:  # strict, from JSON: a flag is no number and "yes" no flag, while an array is a tuple
            return _SPEC.validate_json(json.dumps(dict(raw), default=str))
        except pydantic.ValidationError as exc:
            problems = exc.errors()
            unknown = ("unexpected_keyword_argument", "extra_forbidden")
            problem = next((p for p in problems if p["type"] in unknown), problems[0])
            what = str(problem["msg"]).removeprefix("Value error, ")
            # a check of __post_init__ has no location; its message starts with the field's name
            where = str(problem["loc"][0]) if problem["loc"] else what.split(" ", 1)[0]
            if problem["type"] in unknown:
                known = [f.name for f in dataclasses.fields(RaceSpec)] + list(also_known)
                near = difflib.get_close_matches(where, known, n=1)
                what = UNKNOWN_FIELD + (f" (did you mean {near[0]!r}?)" if near else "")
            raise ValueError(f"{source}: {problem_text(where, what)}") from None

    @classmethod
    def describe(cls) -> dict[str, str]:
        """Each field with the first sentence of its docstring, in order (for ``gradebench run --help``)."""
        return {name: _first_sentence(text) for name, text in _FIELD_DOCS.items()}


@dataclass(frozen=True, kw_only=True)
class JudgeSpec:
    """How stored runs are judged again (`gradebench.rejudge_report`, `gradebench.Benchmark.rejudge`): the rubric,
    the judge or a panel of judges, the label-bias check, the reasoning shown, the Batch API and a scorer in code. A
    field left unset judges as the report's race did; `JudgeSpec()` judges the runs again exactly so. Checked when
    made. (A race's own judging is set on its `RaceSpec`: ``rubric``, ``judge``, ``judges``, ``judge_swap``,
    ``judge_reasoning``, ``judge_batch`` and ``scorer``.)"""

    rubric: str | None = None
    """What a good answer does, beside the fixed rubric the judge reads; unset: the report's."""
    judge: str | None = None
    """The entry that judges, in place of the report's judge (or panel); unset: the report's."""
    judges: tuple[str, ...] | None = None
    """A panel of judges (entry names) in place of the report's judge (or panel): every run is judged by each, its
    score is their mean. One name is the same as judge. Unset: the report's."""
    swap: bool | None = None
    """The label-bias check: judge every run in both presentation orders. Unset: as the report's race did."""
    reasoning: bool | None = None
    """Show the judge the models' reasoning where providers returned it. Unset: as the report's race did."""
    batch: bool | None = None
    """Send the verdict requests through the judges' Batch API, at the batch price (an entry whose catalog batch is
    set batches whatever this says). Unset: as the report's race did."""
    scorer: Callable[..., Any] | None = None
    """A scorer in code (`gradebench.Scorer`, e.g. one of `gradebench.scorers`) that scores every run again; unset:
    the scores stand (they do not depend on the judge)."""

    def __post_init__(self) -> None:
        for name in ("rubric", "judge"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{name} must be text, got {value!r}")
        if self.judge == "":
            raise ValueError("judge must name an entry, got ''")
        for name in ("swap", "reasoning", "batch"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, bool):
                raise ValueError(f"{name} must be True, False or None (as the report's race), got {value!r}")
        if self.scorer is not None and not callable(self.scorer):
            raise ValueError(f"scorer must be a scorer in code (a callable), got {self.scorer!r}")
        judge, judges = _checked_judges(self.judge, self.judges)
        object.__setattr__(self, "judge", judge)
        object.__setattr__(self, "judges", judges)

    def replace(self, **changes: Any) -> JudgeSpec:
        """This judge spec with some fields changed (checked again)."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, kw_only=True)
class Lineup:
    """A spec held against a catalog: who races."""

    reference: Entry
    """The grade's pick: the reference run's entry."""
    judge: Entry
    """The entry that judges (a panel's first judge)."""
    candidates: tuple[Entry, ...]
    """The entries that race (callable ones only), in catalog order or the order asked."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Entries asked for that cannot be called now, with why."""
    judges: tuple[Entry, ...] = ()
    """Every entry that judges: the panel, or ``judge`` alone (filled in when not given)."""

    def __post_init__(self) -> None:
        if not self.judges:
            object.__setattr__(self, "judges", (self.judge,))


def _checked_judges(judge: str | None, judges: Iterable[str] | None) -> tuple[str | None, tuple[str, ...] | None]:
    """``judge`` and ``judges`` as a spec holds them: a panel as a tuple of distinct names, at least one; one name is
    ``judge``; a panel with another ``judge`` beside it refused (which of them would judge?)."""
    if judges is None:
        return judge, None
    if isinstance(judges, str) or not all(isinstance(v, str) and v for v in judges):
        raise ValueError(f"judges must be a list of entry names, got {judges!r}")
    panel = tuple(judges)
    if not panel:
        raise ValueError("judges must name at least one entry")
    twice = sorted({j for j in panel if panel.count(j) > 1})
    if twice:
        raise ValueError(f"judges names {twice[0]!r} twice: its second verdict would be its first, from the cache")
    if judge is not None and panel != (judge,):
        raise ValueError(f"judges {list(panel)} and judge {judge!r}: give one of them (judges alone)")
    return (panel[0], None) if len(panel) == 1 else (None, panel)


def _distinct_judges(judges: tuple[Entry, ...]) -> None:
    """Refuse two judges that are one model on one endpoint: their verdicts would be one cached answer (a cache key
    holds the entry's identity, not its name), and their agreement a perfect one that means nothing."""
    seen: dict[str, str] = {}
    for judge in judges:
        who = canonical_json(judge.identity())
        if who in seen:
            raise ValueError(
                f"judges {seen[who]!r} and {judge.name!r} are one model on one endpoint: their verdicts would be one "
                "cached answer; a panel needs judges that differ"
            )
        seen[who] = judge.name


RaceSpec.__pydantic_config__ = pydantic.ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True)  # type: ignore[attr-defined]
_SPEC = pydantic.TypeAdapter(RaceSpec)


def _field_docs() -> dict[str, str]:
    properties = _SPEC.json_schema()["properties"]
    return {f.name: str(properties.get(f.name, {}).get("description", "")) for f in dataclasses.fields(RaceSpec)}


def _first_sentence(text: str) -> str:
    flat = " ".join(text.replace("`", "").split())
    end = flat.find(". ")
    return flat if end < 0 else flat[: end + 1]


_FIELD_DOCS: dict[str, str] = _field_docs()
