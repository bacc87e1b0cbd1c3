"""gradebench: which models can do this job as well as the one we pinned, and at what cost and speed?"""

from . import scorers
from ._agreement import JudgeAgreement, JudgePair
from ._benchmark import Benchmark
from ._cache import CallCache
from ._catalog import Catalog, Entry, Grade
from ._check import CatalogCheck, EntryCheck
from ._compare import Comparison, compare
from ._control_check import ControlCheck, ControlScore
from ._errors import CacheError, CallError, CatalogError, ConfigError, GradebenchError, ToolLoopError
from ._estimate import ControlEstimate, EntryEstimate, Estimate
from ._family import family_of
from ._job import Job
from ._labels import HumanLabels
from ._meta import ReportMeta
from ._prompt_job import PromptJob
from ._race import RaceEvent
from ._records import Call, Run, Verdict
from ._rejudge import judge_noise_report, rejudge_report
from ._report import BenchmarkReport
from ._seat import Reply, Seat
from ._spec import RaceSpec
from ._tools import Tool, tool
from ._version import __version__
from ._vocab import ControlKind, CostSource, Design, EventKind, Role, SchemaUse, Stopped, VerdictBasis, VerdictPath
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
    "compare",
    "family_of",
    "judge_noise_report",
    "rejudge_report",
    "scorers",
    "tool",
]
