"""gradebench: which models can do this job as well as the one we pinned, and at what cost and speed?"""

from . import (
    _deprecated,  # noqa: F401  (the names kept for one release attach themselves)
    results,
    scorers,
    vocab,
)
from ._base.errors import CacheError, CallError, CatalogError, ConfigError, GradebenchError, ToolLoopError
from ._calls.seat import Reply, Seat
from ._calls.tools import Tool, tool
from ._catalog.catalog import Catalog, Entry, Grade
from ._catalog.family import family_of
from ._catalog.openrouter import catalog_from_openrouter
from ._compare.compare import compare
from ._race.benchmark import Benchmark
from ._race.job import Job
from ._race.preflight import check_catalog, check_catalog_sync
from ._race.prompt_job import PromptJob
from ._race.rejudge import judge_noise_report, rejudge_report
from ._records.spec import JudgeSpec, RaceSpec
from ._report.report import BenchmarkReport
from ._verdict.labels import HumanLabels
from ._version import __version__


def __getattr__(name: str):
    # Leaves load when first used: gb.charts and gb.widgets (altair, ipywidgets), gb.sim (the simulated fleet),
    # gb.replay (recorded outputs as entries), gb.jobs (the example jobs) and gb.testing (a scripted endpoint for
    # testing jobs offline).
    if name in ("charts", "jobs", "replay", "sim", "testing", "widgets"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    if name in _deprecated.MOVED:  # a name that left the root: still there for one release, with a warning
        return _deprecated.moved(name)
    raise AttributeError(f"module 'gradebench' has no attribute {name!r}")


__all__ = [
    "Benchmark",
    "BenchmarkReport",
    "CacheError",
    "CallError",
    "Catalog",
    "CatalogError",
    "ConfigError",
    "Entry",
    "Grade",
    "GradebenchError",
    "HumanLabels",
    "Job",
    "JudgeSpec",
    "PromptJob",
    "RaceSpec",
    "Reply",
    "Seat",
    "Tool",
    "ToolLoopError",
    "__version__",
    "catalog_from_openrouter",
    "check_catalog",
    "check_catalog_sync",
    "compare",
    "family_of",
    "judge_noise_report",
    "rejudge_report",
    "results",
    "scorers",
    "tool",
    "vocab",
]
