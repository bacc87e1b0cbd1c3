"""Names kept for one release after they moved, each a thin alias that says what to use instead.

They are attached here, at the top of the house, so the catalog (the ground floor every package stands on) never
imports the preflight check or the OpenRouter reader above it. `Benchmark`'s per-field setters are aliases of its one
way to change a spec field, `Benchmark.set_spec`. (The rejudge functions' old judge keywords, now a `JudgeSpec`, are
taken by the functions themselves: `gradebench._race.rejudge.judging_of`.) The names that left the package's root
(`MOVED`) are answered by its module ``__getattr__``, through `moved`.
"""

from __future__ import annotations

import functools
import importlib
import warnings
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ._catalog.catalog import Catalog, Entry
from ._catalog.openrouter import catalog_from_openrouter
from ._race.benchmark import Benchmark
from ._race.preflight import CatalogCheck, check_catalog, check_catalog_sync
from ._records.spec import NO_SCORER
from ._report.report import BenchmarkReport
from ._verdict.controls import ControlOutcome
from ._verdict.labels import HumanLabels

F = TypeVar("F", bound=Callable[..., Any])

MOVED: dict[str, str] = {
    **dict.fromkeys(
        [
            "ControlKind",
            "CostSource",
            "Design",
            "EventKind",
            "Role",
            "SchemaUse",
            "Stopped",
            "VerdictBasis",
            "VerdictPath",
        ],
        "gradebench.vocab",
    ),
    **dict.fromkeys(
        [
            "Call",
            "CallCache",
            "CatalogCheck",
            "Comparison",
            "ControlCheck",
            "ControlEstimate",
            "ControlScore",
            "EntryCheck",
            "EntryEstimate",
            "Estimate",
            "JudgeAgreement",
            "JudgePair",
            "RaceEvent",
            "ReportMeta",
            "Run",
            "Verdict",
        ],
        "gradebench.results",
    ),
    "Scorer": "gradebench.scorers",
}
"""The names that left ``gradebench``'s root, each to the public module that holds it now: ``gradebench.Role`` still
answers for one release, with a `DeprecationWarning` that names ``gradebench.vocab.Role``."""


RENAMED: dict[str, str] = {"Verdict": "JudgeScore", "VerdictPath": "ScorePath", "ControlCheck": "ControlOutcome"}
"""Names that moved under a new name: a judge's score of one run is not a verdict (the verdict is an entry's, against
the reference), and the controls' outcome is not a check (a check is the preflight)."""


def moved(name: str, module: str = "gradebench") -> Any:
    """The name ``name`` of ``module`` from its new home (see `MOVED` and `RENAMED`), with a `DeprecationWarning`
    naming that home."""
    home = MOVED.get(name, module) if module == "gradebench" else module
    new = RENAMED.get(name, name)
    # stacklevel 3: past this function and the module's __getattr__, to the line that read <module>.<name>
    warnings.warn(f"{module}.{name} is deprecated; use {home}.{new}", DeprecationWarning, stacklevel=3)
    return getattr(importlib.import_module(home), new)


def deprecated(old: str, new: str) -> Callable[[F], F]:
    """Mark ``old`` as a thin alias of ``new``: a `DeprecationWarning` at each call, naming both."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def alias(*args: Any, **kwargs: Any) -> Any:
            warnings.warn(f"{old} is deprecated; use {new}", DeprecationWarning, stacklevel=2)
            return fn(*args, **kwargs)

        return alias  # type: ignore[return-value]

    return wrap


@deprecated("Catalog.check()", "gradebench.check_catalog(catalog)")
def _check(self: Catalog, *, grades: Iterable[str] | None = None) -> Any:
    return check_catalog(self, grades=grades)


@deprecated("Catalog.check_sync()", "gradebench.check_catalog_sync(catalog)")
def _check_sync(self: Catalog, *, grades: Iterable[str] | None = None) -> CatalogCheck:
    return check_catalog_sync(self, grades=grades)


@deprecated("Catalog.from_openrouter()", "gradebench.catalog_from_openrouter()")
def _from_openrouter(cls: type[Catalog], grades: Any, **kwargs: Any) -> Catalog:
    return catalog_from_openrouter(grades, **kwargs)


Catalog.check = _check  # type: ignore[attr-defined]
Catalog.check_sync = _check_sync  # type: ignore[attr-defined]
Catalog.from_openrouter = classmethod(_from_openrouter)  # type: ignore[attr-defined]


@deprecated("Benchmark.set_candidates(candidates)", "bench.set_spec(candidates=candidates)")
def _set_candidates(self: Benchmark, candidates: Iterable[str | Entry]) -> Benchmark:
    return self.set_spec(candidates=candidates)


@deprecated("Benchmark.set_rubric(text)", "bench.set_spec(rubric=text)")
def _set_rubric(self: Benchmark, text: str) -> Benchmark:
    return self.set_spec(rubric=text)


@deprecated("Benchmark.set_judge_swap(on)", "bench.set_spec(judge_swap=on)")
def _set_judge_swap(self: Benchmark, on: bool = True) -> Benchmark:
    return self.set_spec(judge_swap=bool(on))


@deprecated("Benchmark.set_judge_reasoning(on)", "bench.set_spec(judge_reasoning=on)")
def _set_judge_reasoning(self: Benchmark, on: bool = True) -> Benchmark:
    return self.set_spec(judge_reasoning=bool(on))


@deprecated("Benchmark.set_judge_batch(on)", "bench.set_spec(judge_batch=on)")
def _set_judge_batch(self: Benchmark, on: bool = True) -> Benchmark:
    return self.set_spec(judge_batch=bool(on))


@deprecated("Benchmark.set_scorer(scorer)", "bench.set_spec(scorer=scorer) (no scorer: scorer='none')")
def _set_scorer(self: Benchmark, scorer: Any) -> Benchmark:
    if scorer is not None and not callable(scorer):
        raise TypeError(f"scorer must be callable, got {scorer!r}")
    return self.set_spec(scorer=NO_SCORER if scorer is None else scorer)


Benchmark.set_candidates = _set_candidates  # type: ignore[attr-defined]
Benchmark.set_rubric = _set_rubric  # type: ignore[attr-defined]
Benchmark.set_judge_swap = _set_judge_swap  # type: ignore[attr-defined]
Benchmark.set_judge_reasoning = _set_judge_reasoning  # type: ignore[attr-defined]
Benchmark.set_judge_batch = _set_judge_batch  # type: ignore[attr-defined]
Benchmark.set_scorer = _set_scorer  # type: ignore[attr-defined]


@deprecated("BenchmarkReport.control_check()", "report.controls_outcome()")
def _control_check(self: BenchmarkReport) -> ControlOutcome:
    return self.controls_outcome()


@deprecated("HumanLabels.check(runs)", "labels.validate(runs)")
def _labels_check(self: HumanLabels, runs: Any) -> None:
    self.validate(runs)


BenchmarkReport.control_check = _control_check  # type: ignore[attr-defined]
HumanLabels.check = _labels_check  # type: ignore[attr-defined]
