"""`BenchmarkPanel`: the form, the task and the tabs, laid out as one widget."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import ipywidgets as w

from .._calls.cache import CallCache
from .._catalog.catalog import Catalog, Entry
from .._race.benchmark import Benchmark
from .._race.estimate import Estimate
from .._report.report import BenchmarkReport
from ._estimator import Estimator
from ._form import Form
from ._task import Task
from ._views import Views

__all__ = ["BenchmarkPanel"]


class BenchmarkPanel(w.VBox):
    """A benchmark in a notebook: pick job, grade, candidates, runs (or race to a verdict), a budget, inputs,
    rubric, scorer and salt; read the estimate beside Run; Run, watch the progress, Stop, Rejudge with an edited
    rubric, Export; read the runs, models, charts, transcripts and diagnostics.

    ``jobs``: job factories offered beside the example jobs. ``inputs``: ``{job name: [input, ...]}`` (the example
    jobs default to their example inputs). ``cache``: a `CallCache` or folder (default ``$GRADEBENCH_CACHE``).
    Everything a click does is also a method or attribute: `start`, `stop`, `rejudge`, `export`, `estimate`,
    `build_benchmark`, ``task``, ``bench``, ``report``, ``error`` and every widget. The parts are ``form`` (the
    controls), ``estimator`` (the estimate beside Run), ``views`` (the tabs) and ``runner`` (the buttons, the task,
    the progress and the status line).
    """

    def __init__(
        self,
        catalog: Catalog,
        jobs: Sequence[Callable[..., Any]] | None = None,
        inputs: Mapping[str, Sequence[Any]] | None = None,
        cache: CallCache | str | Path | None = None,
    ):
        super().__init__()
        self.catalog = catalog
        self.form = Form(catalog, jobs, inputs, cache if isinstance(cache, CallCache) else CallCache(cache))
        self.views = Views()
        self.estimator = Estimator(self.form)
        self.runner = Task(self.form, self.views, self.estimator)
        f, v, r = self.form, self.views, self.runner
        # every widget, by the name a test or a notebook reaches it
        self.job, self.grade, self.candidates, self.candidates_note = f.job, f.grade, f.candidates, f.candidates_note
        self.runs, self.all_inputs, self.n_inputs, self.inputs_note = f.runs, f.all_inputs, f.n_inputs, f.inputs_note
        self.to_verdict, self.max_runs = f.to_verdict, f.max_runs
        self.budget, self.budget_note = f.budget, f.budget_note
        self.estimate_button, self.estimate_line = self.estimator.button, self.estimator.line
        self.scorer, self.scorer_path, self.salt, self.rubric = f.scorer, f.scorer_path, f.salt, f.rubric
        self.run_button, self.stop_button, self.rejudge_button = r.run_button, r.stop_button, r.rejudge_button
        self.export_dir, self.export_button, self.status = r.export_dir, r.export_button, r.status
        self.progress_bar, self.progress_table = r.progress.bar, r.progress.table
        self.runs_sort, self.runs_ascending, self.runs_table = v.runs_sort, v.runs_ascending, v.runs_table
        self.models_table, self.cost_chart, self.latency_chart = v.models_table, v.cost_chart, v.latency_chart
        self.transcript_run, self.transcript, self.diagnostics_table = (
            v.transcript_run,
            v.transcript,
            v.diagnostics_table,
        )
        self.tabs = v.tabs
        self.specs = f.specs
        self.children = [*f.rows(), *r.rows(), self.tabs]

    # ------------------------------------------------------------------------------------------------ the state

    @property
    def task(self) -> asyncio.Task[Any] | None:
        """The running (or last) race or rejudge."""
        return self.runner.task

    @property
    def bench(self) -> Benchmark | None:
        """The benchmark of the last race."""
        return self.runner.bench

    @property
    def report(self) -> BenchmarkReport | None:
        """The report the tabs show."""
        return self.views.report

    @property
    def error(self) -> BaseException | None:
        """What made the last action fail (also in ``status``), or None."""
        return self.runner.error

    # ----------------------------------------------------------------------------------------------- the clicks

    async def start(self) -> BenchmarkReport | None:
        """Click Run and wait for the race to end: its report, or None when it failed (see ``status``, ``error``)
        or was stopped. While a race runs, this waits for it instead of starting a second one."""
        return await self.runner.start()

    async def rejudge(self) -> BenchmarkReport | None:
        """Click Rejudge and wait: judge the shown report's runs again under the rubric (and scorer) as now set;
        no candidate is called. None when it could not (see ``status``)."""
        return await self.runner.rejudge()

    async def estimate(self) -> Estimate | None:
        """Click Estimate and wait: what the race as set up will cost and take (`Benchmark.estimate`), also shown
        beside Run. It runs the reference runs the cache lacks first (those spend; Run then reuses them). None when
        it could not (the line beside Run says why)."""
        return await self.estimator.estimate()

    def stop(self) -> bool:
        """Cancel the running race (or rejudge). What landed stays in the cache, so a rerun resumes from there."""
        return self.runner.stop()

    def export(self) -> Path | None:
        """Write the report shown (`BenchmarkReport.to_parquet`) to the folder in the box; the status lists every
        file written and where."""
        return self.runner.export()

    # ------------------------------------------------------------------------------------------------ the form

    def entry_label(self, entry: Entry) -> str:
        """An entry as the candidates list shows it: name, grade, prices per 1M tokens and whether it is callable."""
        return self.form.entry_label(entry)

    def selected_inputs(self) -> list[Any]:
        """The inputs the controls select: all of the job's, or the first n."""
        return self.form.selected_inputs()

    def selected_scorer(self) -> Any:
        """The scorer the controls name (None for none); a bad path raises ValueError."""
        return self.form.selected_scorer()

    def build_benchmark(self) -> Benchmark:
        """The `Benchmark` the controls describe (what Run races); a setting that cannot work raises, saying why."""
        return self.form.build_benchmark()
