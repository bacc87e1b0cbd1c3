"""The notebook panel: `BenchmarkPanel` sets up, races, watches, rejudges and exports a benchmark without code.

A leaf of the package: it drives the public API (`Benchmark`, `Benchmark.subscribe`, `Benchmark.stops`,
`Benchmark.estimate`, `Benchmark.uncached_references`, `Benchmark.rejudge`, `BenchmarkReport`, the scorers,
`gradebench.charts`) and nothing in the core imports it. Its parts are private: ``_form`` (the controls and the
benchmark they build), ``_estimator`` (the estimate beside Run), ``_task`` (Run, Stop, Rejudge, Export, the status
line) with ``_progress``, ``_views`` (the tabs) and ``_html`` (escaped tables and transcripts). `events_html` and
`html_table` are public for notebooks that show runs themselves. `LabelPanel` (``_labels``) has a person label a
sample of a report's runs, blind to the judge and the entry, for `gradebench.BenchmarkReport.with_labels`.
"""

from ._benchmark_panel import BenchmarkPanel
from ._html import events_html, html_table
from ._labels import LabelPanel

__all__ = ["BenchmarkPanel", "LabelPanel", "events_html", "html_table"]
