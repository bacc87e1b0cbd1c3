"""The panel's task: Run, Stop, Rejudge and Export, the asyncio task behind them, the progress and the status line.

A click starts a task on the running event loop (the kernel's, in a notebook) and returns at once, so the panel stays
responsive; ``start``/``rejudge`` are the same clicks awaited. A second click while a task runs does nothing. The
estimate beside Run (`Estimator`) rests while a task runs, and looks again when it ends.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import ipywidgets as w
import polars as pl

from .._base.vocab import Design, Role
from .._race.benchmark import Benchmark
from .._race.rejudge import rejudge_report
from .._records.spec import JudgeSpec
from .._report import present as _present
from .._report.page import REPORT_HTML
from .._report.report import REPORT_FILES, BenchmarkReport
from ._estimator import Estimator
from ._form import Form
from ._html import CSS, concat, marker, tag
from ._progress import PROGRESS_EVERY_S, Progress
from ._views import Views

__all__ = ["Task"]


class Task:
    """Runs what the form describes and hands each report to the views."""

    def __init__(self, form: Form, views: Views, estimator: Estimator):
        self.form, self.views, self.estimator = form, views, estimator
        self.progress = Progress()
        self.task: asyncio.Task[Any] | None = None
        """The running (or last) race or rejudge."""
        self.bench: Benchmark | None = None
        """The benchmark of the last race."""
        self.error: BaseException | None = None
        """What made the last action fail (also in ``status``), or None."""
        self._busy = self._stop_requested = False
        self._doing = ""
        self.run_button = w.Button(description="Run", button_style="primary", icon="play")
        self.stop_button = w.Button(description="Stop", button_style="warning", icon="stop", disabled=True)
        self.rejudge_button = w.Button(description="Rejudge", icon="gavel", tooltip="judge again: rubric as edited")
        self.export_dir = w.Text(value="out/panel", description="folder")
        self.export_button = w.Button(
            description="Export", icon="download", tooltip="write the report: parquet, meta.json and report.html"
        )
        self.status = w.HTML(tag("i", "ready"))
        self.run_button.on_click(lambda _: self.begin_race())
        self.stop_button.on_click(lambda _: self.stop())
        self.rejudge_button.on_click(lambda _: self.begin_rejudge())
        self.export_button.on_click(lambda _: self.export())

    def rows(self) -> list[w.Widget]:
        """The buttons, the status line and the progress, laid out."""
        run = w.HBox([self.run_button, self.stop_button, self.estimator.button, self.estimator.line])
        after = w.HBox([self.rejudge_button, self.export_dir, self.export_button])
        return [run, after, self.status, self.progress.bar, self.progress.table]

    # ------------------------------------------------------------------------------------------------ the clicks

    async def start(self) -> BenchmarkReport | None:
        """Click Run and wait for the race to end (while a race runs, wait for it instead of starting another)."""
        return await self._wait(self.begin_race() or (self.task if self._busy else None))

    async def rejudge(self) -> BenchmarkReport | None:
        """Click Rejudge and wait."""
        return await self._wait(self.begin_rejudge())

    def stop(self) -> bool:
        """Cancel the running race (or rejudge). What landed stays in the cache, so a rerun resumes from there."""
        if self.task is None or self.task.done():
            return False
        self._stop_requested = True
        self.say("stopping…")
        return self.task.cancel()

    def begin_race(self) -> asyncio.Task[Any] | None:
        def prepare() -> Coroutine[Any, Any, Any]:
            self.bench = bench = self.form.build_benchmark()
            inputs = len(self.form.selected_inputs())
            reference = bench.lineup.reference.name
            candidates = self.form.selected_candidates()
            open_ended = bench.spec.design.to_verdict
            self.progress.reset(
                reference, candidates, bench.most_runs, inputs, open_ended=open_ended, stops=lambda: bench.stops
            )
            return self._race(bench, len(candidates), inputs)

        task = self._spawn("run", prepare)
        if task is not None:  # until this race gives a report, the tabs show the last one's: they say so
            self.views.mark_previous()
        return task

    def begin_rejudge(self) -> asyncio.Task[Any] | None:
        def prepare() -> Coroutine[Any, Any, Any]:
            if self.views.report is None:
                raise ValueError("nothing to rejudge yet: run the benchmark first")
            judging = JudgeSpec(rubric=self.form.rubric.value, scorer=self.form.selected_scorer())
            return self._rejudge(self.views.report, judging)

        return self._spawn("rejudge", prepare)

    def export(self) -> Path | None:
        """Write the report shown to the folder in the box: `BenchmarkReport.to_parquet`'s files and the HTML report
        (`BenchmarkReport.to_html`, ``report.html``); the status names every file written and where."""
        report = self.views.report
        if report is None:
            self.say("nothing to export yet: run the benchmark first", error=True)
            return None
        try:
            path = report.to_parquet(self.export_dir.value.strip() or "out/panel").resolve()
            report.to_html(path / REPORT_HTML)
        except Exception as exc:
            self.fail("export failed", exc)
            return None
        written = [name for name in (*REPORT_FILES, REPORT_HTML) if (path / name).is_file()]
        self.say(f"wrote {', '.join(written)} to {path}")
        return path

    # ------------------------------------------------------------------------------------------------ the task

    async def _wait(self, task: asyncio.Task[Any] | None) -> BenchmarkReport | None:
        if task is None:
            return None
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:  # whoever awaited us was cancelled: stop the race too
            self.stop()
            raise
        return None if task.cancelled() else task.result()

    def _spawn(self, what: str, prepare: Callable[[], Coroutine[Any, Any, Any]]) -> asyncio.Task[Any] | None:
        if self._busy:  # a second click while running does nothing, even if the button was not yet disabled
            return None
        try:
            work = prepare()  # first, so a setting that cannot work is what the status names
        except Exception as exc:  # a setting: the progress shown is still the last race's, and stays as it was
            self.fail(f"cannot {what}", exc)
            return None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            work.close()
            self.say(f"cannot {what}: no running event loop (in a script, use `await panel.start()`)", error=True)
            return None
        self._busy, self._stop_requested, self.error, self._doing = True, False, None, what
        self.estimator.pause(race=what == "run")  # the race runs the reference runs itself; after it, it is free
        self._set_buttons()
        self.task = loop.create_task(work)
        self.task.add_done_callback(self._task_done)
        return self.task

    async def _race(self, bench: Benchmark, candidates: int, inputs: int) -> BenchmarkReport | None:
        started, unsubscribe = time.perf_counter(), bench.subscribe(self.progress.on_event)
        plural = _present.plural
        if bench.spec.design is Design.FIXED:
            runs = plural(int(bench.spec.runs), "run")
            self.say(f"racing {plural(candidates, 'candidate')} × {runs} × {plural(inputs, 'input')}…")
        else:
            self.say(
                f"racing {plural(candidates, 'candidate')} to a verdict on {plural(inputs, 'input')}, "
                f"at most {plural(bench.most_runs, 'run')} an entry…"
            )
        ticker = asyncio.get_running_loop().create_task(self._tick())  # a stop shows between runs too
        try:
            await bench.run()
        except asyncio.CancelledError:
            if self._stop_requested:
                return None  # _task_done says so
            raise
        except Exception as exc:  # e.g. the reference failed: show what there is, say why
            partial = bench.metadata.get(Benchmark.REPORT)
            if partial is not None:
                self._show(partial)
            else:  # nothing of this race to show: the tabs still hold the race before it
                self.views.mark_previous("PREVIOUS RACE — the race started after it failed (see the status line)")
            reference_failed = partial is not None and not partial.runs.filter(role=Role.REFERENCE)["ok"].all()
            self.fail("the reference run failed" if reference_failed else "the race failed", exc)
            self.progress.finish(bench.stops, complete=False)
            self.progress.bar.bar_style = "danger"  # this race failed: its own bar says so
            return None
        finally:
            ticker.cancel()
            unsubscribe()
            self.progress.draw(force=True)
        report = bench.report()
        self.progress.finish(bench.stops, complete=not report.meta.stopped)
        if report.meta.stopped:  # the budget ran out: the bar says the race did not end as planned
            self.progress.bar.bar_style = "warning"
        self._show(report)
        self.say(
            f"done in {time.perf_counter() - started:.1f}s: {done_runs(report)} · {_present.totals(report)}",
            stop=report,
        )
        return report

    async def _tick(self) -> None:
        """Redraw the progress while the race runs, so what changed between events (an entry settled) shows."""
        while True:
            await asyncio.sleep(PROGRESS_EVERY_S)
            self.progress.draw()

    async def _rejudge(self, shown: BenchmarkReport, judging: JudgeSpec) -> BenchmarkReport | None:
        n = shown.runs.filter(role=Role.CANDIDATE).height
        self.say(f"rejudging {n} runs under the rubric as edited (only the judge is called)…")
        try:
            if self.bench is not None and self.bench.metadata.get(Benchmark.REPORT) is shown:
                report = await self.bench.rejudge(judging)
            else:  # the last race was stopped, so its bench has no report: rejudge the report on screen
                report = await rejudge_report(shown, self.form.catalog, judging, cache=self.form.cache, progress=False)
        except asyncio.CancelledError:
            if self._stop_requested:
                return None
            raise
        except Exception as exc:
            self.fail("rejudge failed", exc)
            return None
        self._show(report)
        self.say(f"rejudged {n} runs under the edited rubric · {_present.totals(report)}", stop=report)
        return report

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._busy = False
        self._set_buttons()
        self.estimator.resume()
        if (task.cancelled() or self._stop_requested) and self._doing == "rejudge":
            self.say("rejudge stopped: the report shown is unchanged")
        elif task.cancelled() or self._stop_requested:
            partial = self.bench.metadata.get(Benchmark.REPORT) if self.bench is not None else None
            if partial is not None and partial.meta.stopped:
                self._show(partial)  # the runs judged before the stop
            else:  # stopped before the reference runs landed: nothing of this race to show
                self.views.clear(concat(CSS, marker("STOPPED before any run was judged: nothing to show")))
            self.say(
                f"stopped: {self.progress.landed()} of {self.progress.planned()} runs had landed (the tabs show those "
                "judged); what finished is in the cache, so Run with the same settings resumes from there"
            )
            self.progress.finish(self.bench.stops if self.bench is not None else {}, complete=False)
            self.progress.bar.bar_style = "warning"
        elif task.exception() is not None:  # not expected: _race and _rejudge report their own errors
            self.fail("unexpected error", task.exception())  # type: ignore[arg-type]
        self._stop_requested = False

    # ----------------------------------------------------------------------------------------------- the status

    def _show(self, report: BenchmarkReport) -> None:
        self.views.show(report, self.fail)

    def _set_buttons(self) -> None:
        self.run_button.disabled = self.rejudge_button.disabled = self._busy
        self.stop_button.disabled = not self._busy

    def say(self, text: str, *, error: bool = False, stop: BenchmarkReport | None = None) -> None:
        """The status line (and, for a report from a stopped race, its stop marker)."""
        line = tag("span", text, class_="gb-bad" if error else None)
        self.status.value = concat(CSS, line, marker(_present.stopped(stop)) if stop is not None else None)

    def fail(self, what: str, exc: BaseException) -> None:
        """Say what failed and why; ``error`` keeps it. The progress bar is left to the race it shows."""
        self.error = exc
        self.say(f"{what}: {type(exc).__name__}: {exc}", error=True)


def done_runs(report: BenchmarkReport) -> str:
    """The runs of a race as the done line counts them: the raced (candidate) runs, as the estimate beside Run
    counts them, with the reference runs apart (``10 runs (8 raced + 2 reference), 1 failed, 2 entries``)."""
    raced = report.runs.filter(pl.col("role") == Role.CANDIDATE)
    references = report.runs.height - raced.height
    failed = report.runs.filter(~pl.col("ok")).height
    return (
        f"{_present.plural(report.runs.height, 'run')} ({raced.height} raced + {references} reference), "
        f"{failed} failed, {report.models.height} {'entry' if report.models.height == 1 else 'entries'}"
    )
