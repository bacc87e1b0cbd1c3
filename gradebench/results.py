"""What gradebench hands back, as types: the records a report is made of, and what an estimate, a check, a panel of
judges, the negative controls, a comparison or a race's listener give you.

You rarely make one yourself: each comes from a call on something you hold, and its fields are what you read.

- ``report.to_runs()``: `Run` records, each with its `Call` records and the judge's `JudgeScore`;
  ``report.model_rows()``: `EntrySummary` records, the rows of ``report.models``; ``report.meta``: `ReportMeta`;
  ``report.recommend()``: a `Recommendation`; ``report.controls_outcome()``: a `ControlOutcome` of `ControlScore` rows;
  ``report.judge_agreement()``: a `JudgeAgreement` of `JudgePair` figures.
- ``await bench.estimate()``: an `Estimate` of `EntryEstimate` rows and a `ControlEstimate`.
- ``gradebench.check_catalog(catalog)``: a `CatalogCheck` of `EntryCheck` rows.
- ``gradebench.compare(before, after)``: a `Comparison`.
- ``bench.subscribe(fn)``: ``fn`` is called with a `RaceEvent` as the race goes.
- ``bench.cache``: the `CallCache` every model call goes through (``Benchmark(cache=...)`` takes one, or a folder).
"""

from ._base.renamed import renamed
from ._calls.cache import CallCache
from ._compare.compare import Comparison
from ._judge.agreement import JudgeAgreement, JudgePair
from ._race.estimate import ControlEstimate, EntryEstimate, Estimate
from ._race.preflight import CatalogCheck, EntryCheck
from ._race.race import RaceEvent
from ._records.meta import ReportMeta
from ._records.records import Call, JudgeScore, Run
from ._report.models import EntrySummary
from ._verdict.controls import ControlOutcome, ControlScore
from ._verdict.recommend import Recommendation

__all__ = [
    "Call",
    "CallCache",
    "CatalogCheck",
    "Comparison",
    "ControlEstimate",
    "ControlOutcome",
    "ControlScore",
    "EntryCheck",
    "EntryEstimate",
    "EntrySummary",
    "Estimate",
    "JudgeAgreement",
    "JudgePair",
    "JudgeScore",
    "RaceEvent",
    "Recommendation",
    "ReportMeta",
    "Run",
]

_RENAMED = {"Verdict": "JudgeScore", "ControlCheck": "ControlOutcome"}
"""Renamed in this release; the old name answers for one release, with a warning (see `gradebench._deprecated`)."""


def __getattr__(name: str) -> object:
    return renamed(__name__, _RENAMED, name, globals())
