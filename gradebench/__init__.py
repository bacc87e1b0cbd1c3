"""gradebench: which models can do this job as well as the one we pinned, and at what cost and speed?"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._base.errors import CacheError, CallError, CatalogError, ConfigError, GradebenchError, ToolLoopError
from ._version import __version__

if TYPE_CHECKING:  # what the root answers, loaded when first read (see `__getattr__`)
    from . import results, scorers, vocab  # (the leaves — charts, widgets, sim, ... — stand above the root's names)
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

HOMES: dict[str, str] = {
    "Benchmark": "._race.benchmark",
    "BenchmarkReport": "._report.report",
    "Catalog": "._catalog.catalog",
    "Entry": "._catalog.catalog",
    "Grade": "._catalog.catalog",
    "HumanLabels": "._verdict.labels",
    "Job": "._race.job",
    "JudgeSpec": "._records.spec",
    "PromptJob": "._race.prompt_job",
    "RaceSpec": "._records.spec",
    "Reply": "._calls.seat",
    "Seat": "._calls.seat",
    "Tool": "._calls.tools",
    "catalog_from_openrouter": "._catalog.openrouter",
    "check_catalog": "._race.preflight",
    "check_catalog_sync": "._race.preflight",
    "compare": "._compare.compare",
    "family_of": "._catalog.family",
    "judge_noise_report": "._race.rejudge",
    "rejudge_report": "._race.rejudge",
    "tool": "._calls.tools",
}
"""Where each name of the root lives. ``import gradebench`` loads none of them — polars, numpy, pydantic's models and
the openai SDK load with the first name read — so a command or a script that needs little starts quickly."""

SUBMODULES = ("charts", "jobs", "replay", "results", "scorers", "sim", "testing", "vocab", "widgets")
"""The public modules, loaded when first read: gb.charts and gb.widgets (altair, ipywidgets), gb.sim (the simulated
fleet), gb.replay (recorded outputs as entries), gb.jobs (the example jobs), gb.testing (a scripted endpoint),
gb.results, gb.scorers and gb.vocab."""


def __getattr__(name: str) -> Any:
    if name in HOMES:
        # the names kept for one release (Benchmark.set_rubric, ...) attach themselves to the classes they extend
        importlib.import_module(f"{__name__}._deprecated")
        value = getattr(importlib.import_module(HOMES[name], __name__), name)
    elif name in SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        from . import _deprecated

        if name not in _deprecated.MOVED:
            raise AttributeError(f"module 'gradebench' has no attribute {name!r}")
        return _deprecated.moved(name)  # a name that left the root: still there for one release, with a warning
    globals()[name] = value  # read once: the next read is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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
