"""gradebench: which models can do this job as well as the one we pinned, and at what cost and speed?"""

from . import (
    _deprecated,  # noqa: F401  (the names kept for one release attach themselves)
    scorers,
)
from ._base.errors import CacheError, CallError, CatalogError, ConfigError, GradebenchError, ToolLoopError
from ._base.vocab import ControlKind, CostSource, Design, EventKind, Role, SchemaUse, Stopped, VerdictBasis, VerdictPath
from ._calls.cache import CallCache
from ._calls.seat import Reply, Seat
from ._calls.tools import Tool, tool
from ._catalog.catalog import Catalog, Entry, Grade
from ._catalog.family import family_of
from ._catalog.openrouter import catalog_from_openrouter
from ._compare.compare import Comparison, compare
from ._judge.agreement import JudgeAgreement, JudgePair
from ._race.benchmark import Benchmark
from ._race.estimate import ControlEstimate, EntryEstimate, Estimate
from ._race.job import Job
from ._race.preflight import CatalogCheck, EntryCheck, check_catalog, check_catalog_sync
from ._race.prompt_job import PromptJob
from ._race.race import RaceEvent
from ._race.rejudge import judge_noise_report, rejudge_report
from ._records.meta import ReportMeta
from ._records.records import Call, Run, Verdict
from ._records.spec import JudgeSpec, RaceSpec
from ._report.report import BenchmarkReport
from ._verdict.controls import ControlCheck, ControlScore
from ._verdict.labels import HumanLabels
from ._version import __version__
from .scorers import Scorer


def __getattr__(name: str):
    # Leaves load when first used: gb.charts and gb.widgets (altair, ipywidgets), gb.sim (the simulated fleet),
    # gb.jobs (the example jobs) and gb.testing (a scripted endpoint for testing jobs offline).
    if name in ("charts", "jobs", "sim", "testing", "widgets"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'gradebench' has no attribute {name!r}")


__all__ = [
    "Benchmark",
    "BenchmarkReport",
    "CacheError",
    "Call",
    "CallCache",
    "CallError",
    "Catalog",
    "CatalogCheck",
    "CatalogError",
    "Comparison",
    "ConfigError",
    "ControlCheck",
    "ControlEstimate",
    "ControlKind",
    "ControlScore",
    "CostSource",
    "Design",
    "Entry",
    "EntryCheck",
    "EntryEstimate",
    "Estimate",
    "EventKind",
    "Grade",
    "GradebenchError",
    "HumanLabels",
    "Job",
    "JudgeAgreement",
    "JudgePair",
    "JudgeSpec",
    "PromptJob",
    "RaceEvent",
    "RaceSpec",
    "Reply",
    "ReportMeta",
    "Role",
    "Run",
    "SchemaUse",
    "Scorer",
    "Seat",
    "Stopped",
    "Tool",
    "ToolLoopError",
    "Verdict",
    "VerdictBasis",
    "VerdictPath",
    "__version__",
    "catalog_from_openrouter",
    "check_catalog",
    "check_catalog_sync",
    "compare",
    "family_of",
    "judge_noise_report",
    "rejudge_report",
    "scorers",
    "tool",
]
