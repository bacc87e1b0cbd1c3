"""`BenchmarkPanel`: set up, race, watch, rejudge and export a benchmark in a notebook, without writing code.

A leaf of the package: it drives the public API (`Benchmark`, `Benchmark.subscribe`, `Benchmark.rejudge`,
`BenchmarkReport`, the scorers, `gradebench.charts`) and nothing in the core imports it. Everything it renders is
escaped: outputs and transcripts are untrusted text.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any

import ipywidgets as w
import polars as pl

from . import scorers
from ._benchmark import Benchmark, RaceEvent, rejudge_report
from ._cache import CallCache
from ._catalog import Catalog, Entry
from ._job import JobSpec
from ._panel_html import CSS, FLEX, esc, events_html, html_table, pre, scroll, td, text
from ._records import ReportMeta
from ._report import BenchmarkReport
from .jobs import EXAMPLE_INPUTS, EXAMPLE_JOBS, load_inputs

__all__ = ["BenchmarkPanel", "events_html", "html_table"]  # the HTML helpers, for notebooks that show runs themselves

RUN_COLUMNS = (
    "entry",
    "role",
    "input_id",
    "repeat",
    "ok",
    "score",
    "accuracy",
    "work",
    "scorer",
    "calls",
    "tool_calls",
    "input_tokens",
    "output_tokens",
    "latency_s",
    "wall_s",
    "cost",
    "currency",
    "cached",
    "judge_path",
    "reason",
    "error",
    "judge_error",
    "scorer_error",
    "run_id",
)
"""The columns of the Runs tab, each one a sort key."""
MODEL_COLUMNS = (
    "entry",
    "verdict",
    "score [95% CI]",
    "mean_diff",
    "lower",
    "n_pairs",
    "cost_ratio",
    "latency_ratio",
    "floor_std",
    "swap_gap_mean",
    "model",
    "simulated",
    "runs",
    "ok_rate",
    "accuracy_mean",
    "work_mean",
    "scorer_mean",
    "calls_mean",
    "input_tokens_mean",
    "output_tokens_mean",
    "latency_s_mean",
    "wall_s_mean",
    "cost_per_run",
    "spent_now",
    "currency",
    "judged",
)
"""The columns of the Models tab."""
PATH_SCORERS: dict[str, Callable[[str], Any]] = {
    "field_equals": scorers.field_equals,
    "numeric_close": scorers.numeric_close,
    "set_f1": scorers.set_f1,
}
"""Scorers the dropdown offers that read a dotted path (typed in the box beside it)."""
PROGRESS_EVERY_S = 0.1
"""The progress display is redrawn at most this often (and always when the race ends)."""

# ----------------------------------------------------------------------------------------------------------- panel


class BenchmarkPanel(w.VBox):
    """A benchmark in a notebook: pick job, grade, candidates, runs, inputs, rubric, scorer and salt; Run, watch the
    progress, Stop, Rejudge with an edited rubric, Export; read the runs, models, charts, transcripts and diagnostics.

    ``jobs``: job factories offered beside the example jobs. ``inputs``: ``{job name: [input, ...]}`` (the example
    jobs default to their example inputs). ``cache``: a `CallCache` or folder (default ``$GRADEBENCH_CACHE``).
    Everything a click does is also a method or attribute: `start`, `stop`, `rejudge`, `export`,
    `build_benchmark`, ``task``, ``bench``, ``report``, ``error`` and every widget.
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
        self.specs: dict[str, JobSpec] = {}
        """Job name -> what the benchmark will know of it (name, rubric, scorer)."""
        self.factories: dict[str, Callable[..., Any]] = {}
        offered: list[Callable[..., Any]] = [*EXAMPLE_JOBS.values(), *(jobs or [])]
        for factory in offered:
            spec = JobSpec(factory)
            self.specs[spec.name], self.factories[spec.name] = spec, factory
        self._given_inputs = {k: list(v) for k, v in (inputs or {}).items()}
        self._cache = cache if isinstance(cache, CallCache) else CallCache(cache)
        self.task: asyncio.Task[Any] | None = None
        """The running (or last) race or rejudge."""
        self.bench: Benchmark | None = None
        """The benchmark of the last race."""
        self.report: BenchmarkReport | None = None
        """The report the tabs show."""
        self.error: BaseException | None = None
        """What made the last action fail (also in ``status``), or None."""
        self._busy = self._stop_requested = False
        self._doing = ""
        self._counts: dict[str, list[int]] = {}  # progress row -> [planned, landed, judged, failed]
        self._inputs, self._reference = 0, ""
        self._drawn_at = 0.0

        def px(width: str) -> w.Layout:
            return w.Layout(width=width)

        self.job = w.Dropdown(options=list(self.specs), description="job")
        self.grade = w.Dropdown(
            options=[
                (f"{g} (reference {catalog.picks[g]})" if g in catalog.picks else f"{g} (no pick)", g)
                for g in catalog.grades
            ],
            value=self._default_grade(),
            description="grade",
        )
        self.candidates = w.SelectMultiple(description="candidates", rows=6, layout=px("100%"))
        self.candidates_note = w.HTML()
        self.runs = w.BoundedIntText(value=3, min=1, max=1000, description="runs/entry", layout=px("160px"))
        self.all_inputs = w.Checkbox(value=False, description="all inputs", indent=False, layout=px("100px"))
        self.n_inputs = w.BoundedIntText(value=5, min=1, max=10**6, description="first n", layout=px("150px"))
        self.inputs_note = w.HTML()
        self.scorer = w.Dropdown(description="scorer")
        self.scorer_path = w.Text(placeholder="path, e.g. decision", layout=px("180px"))
        self.salt = w.Text(description="cache salt", placeholder="blank: reuse cached answers")
        self.rubric = w.Textarea(description="rubric", layout=w.Layout(width="100%", height="80px"))
        self.run_button = w.Button(description="Run", button_style="primary", icon="play")
        self.stop_button = w.Button(description="Stop", button_style="warning", icon="stop", disabled=True)
        self.rejudge_button = w.Button(description="Rejudge", icon="gavel", tooltip="judge again: rubric as edited")
        self.export_dir = w.Text(value="out/panel", description="folder")
        self.export_button = w.Button(description="Export", icon="download", tooltip="write the report as parquet")
        self.status = w.HTML("<i>ready</i>")
        self.progress_bar = w.IntProgress(value=0, min=0, max=1, description="judged", layout=px("50%"))
        self.progress_table = w.HTML()
        self.runs_sort = w.Dropdown(options=list(RUN_COLUMNS), value="entry", description="sort by")
        self.runs_ascending = w.ToggleButton(value=True, description="ascending", icon="sort-amount-asc")
        self.runs_table, self.models_table, self.transcript, self.diagnostics_table = (w.HTML() for _ in range(4))
        self.cost_chart, self.latency_chart = w.VBox(), w.VBox()
        self.transcript_run = w.Dropdown(description="run", layout=px("70%"))
        self.tabs = w.Tab(
            children=[
                w.VBox([w.HBox([self.runs_sort, self.runs_ascending]), self.runs_table]),
                self.models_table,
                self.cost_chart,
                self.latency_chart,
                w.VBox([self.transcript_run, self.transcript]),
                self.diagnostics_table,
            ]
        )
        self.tabs.titles = ("Runs", "Models", "Cost vs quality", "Latency vs quality", "Transcript", "Diagnostics")
        hint = "<i>Run the benchmark to fill this tab.</i>"
        for widget in (self.runs_table, self.models_table, self.transcript, self.diagnostics_table):
            widget.value = hint
        self.cost_chart.children = self.latency_chart.children = (w.HTML(hint),)

        for widget, react in (
            (self.job, self._job_changed),
            (self.grade, self._grade_changed),
            (self.candidates, self._candidates_changed),
            (self.all_inputs, self._inputs_changed),
            (self.n_inputs, self._inputs_changed),
            (self.scorer, self._scorer_changed),
            (self.runs_sort, self._draw_runs),
            (self.runs_ascending, self._draw_runs),
            (self.transcript_run, self._draw_transcript),
        ):
            widget.observe(lambda _, react=react: react(), "value")
        self.run_button.on_click(lambda _: self._begin_race())
        self.stop_button.on_click(lambda _: self.stop())
        self.rejudge_button.on_click(lambda _: self._begin_rejudge())
        self.export_button.on_click(lambda _: self.export())
        self._job_changed()
        self._grade_changed()
        self.children = [
            w.HBox([self.job, self.grade]),
            self.candidates,
            self.candidates_note,
            w.HBox([self.runs, self.all_inputs, self.n_inputs, self.inputs_note]),
            w.HBox([self.scorer, self.scorer_path, self.salt]),
            self.rubric,
            w.HBox([self.run_button, self.stop_button, self.rejudge_button, self.export_dir, self.export_button]),
            self.status,
            self.progress_bar,
            self.progress_table,
            self.tabs,
        ]

    # ------------------------------------------------------------------------------------------------- controls

    def entry_label(self, entry: Entry) -> str:
        """An entry as the candidates list shows it: name, grade, prices per 1M tokens and whether it is callable."""
        why = entry.callable_reason()
        mark = "★ " if self.catalog.picks.get(entry.grade) == entry.name else ""
        price = f"{entry.price_in:g} in / {entry.price_out:g} out {entry.currency} per 1M"
        callable_ = f"NOT CALLABLE: {why}" if why else "callable"
        return f"{mark}{entry.name} · {entry.grade} · {price}{' · sim' if entry.simulated else ''} · {callable_}"

    def _default_grade(self) -> str:
        """The grade the selected job declares, when the catalog pins an entry for it; else the first pinned grade."""
        declared = self.specs[self.job.value].grade if self.job.value in self.specs else ""
        if declared in self.catalog.picks and declared in self.catalog.grades:
            return declared
        return next((g for g in self.catalog.grades if g in self.catalog.picks), self.catalog.grades[0])

    def _job_changed(self) -> None:
        spec = self.specs[self.job.value]
        if hasattr(self, "grade") and spec.grade in self.catalog.picks:  # follow the grade the job declares
            self.grade.value = spec.grade
        self.rubric.value = spec.rubric
        own = (
            [(f"the job's own: {getattr(spec.scorer, 'name', spec.scorer)}", "job")] if spec.scorer is not None else []
        )
        paths = [(f"{name}(path)", name) for name in PATH_SCORERS]
        self.scorer.options = [("none", "none"), *own, *paths, ("choice_letter", "choice_letter")]
        self.scorer.value = "job" if own else "none"
        self._scorer_changed()
        self._inputs_changed()

    def _grade_changed(self) -> None:
        entries = self.catalog.of_grade(self.grade.value)
        self.candidates.options = [(self.entry_label(e), e.name) for e in entries]
        self.candidates.value = tuple(e.name for e in entries if e.callable_reason() is None)
        self._candidates_changed()

    def _candidates_changed(self) -> None:
        uncallable = {e.name: r for e in self.catalog.of_grade(self.grade.value) if (r := e.callable_reason())}
        dropped = [n for n in self.candidates.value if n in uncallable]
        if dropped:  # a SelectMultiple cannot disable an option: take it out again, visibly
            self.candidates.value = tuple(n for n in self.candidates.value if n not in uncallable)
        notes = [f"ignored {', '.join(dropped)}: not callable"] if dropped else []
        notes += [f"not callable, so not selectable: {n} ({why})" for n, why in uncallable.items()]
        self.candidates_note.value = CSS + "<br>".join(f'<span class="gb-bad">{esc(n)}</span>' for n in notes)

    def _inputs_changed(self) -> None:
        self.n_inputs.disabled = self.all_inputs.value
        try:
            total, chosen = len(self._inputs_for(self.job.value)), len(self.selected_inputs())
        except Exception as exc:
            self.inputs_note.value = f'{CSS}<span class="gb-bad">{esc(exc)}</span>'
        else:
            self.inputs_note.value = f"{chosen} of {total} inputs"

    def _scorer_changed(self) -> None:
        self.scorer_path.disabled = self.scorer.value not in (*PATH_SCORERS, "choice_letter")
        optional = self.scorer.value == "choice_letter"
        self.scorer_path.placeholder = "optional path" if optional else "path, e.g. decision"

    def _inputs_for(self, job: str) -> list[Any]:
        if job not in self._given_inputs:
            if job not in EXAMPLE_INPUTS:
                raise ValueError(f"no inputs for job {job!r}: pass inputs={{{job!r}: [...]}} to the panel")
            self._given_inputs[job] = load_inputs(EXAMPLE_INPUTS[job])
        return self._given_inputs[job]

    def selected_inputs(self) -> list[Any]:
        """The inputs the controls select: all of the job's, or the first n."""
        values = self._inputs_for(self.job.value)
        return list(values if self.all_inputs.value else values[: self.n_inputs.value])

    def selected_scorer(self) -> Any:
        """The scorer the controls name (None for none); a bad path raises ValueError."""
        kind, path = self.scorer.value, self.scorer_path.value.strip()
        if kind in ("none", "job"):
            return self.specs[self.job.value].scorer if kind == "job" else None
        return scorers.choice_letter(path=path or None) if kind == "choice_letter" else PATH_SCORERS[kind](path)

    def build_benchmark(self) -> Benchmark:
        """The `Benchmark` the controls describe (what Run races); a setting that cannot work raises, saying why."""
        chosen = [n for n in self.candidates.value if self.catalog[n].callable_reason() is None]
        if not chosen:
            raise ValueError("no candidate selected: pick at least one callable entry")
        values, scorer = self.selected_inputs(), self.selected_scorer()
        bench = Benchmark(
            self.factories[self.job.value],
            runs=self.runs.value,
            catalog=self.catalog,
            grade=self.grade.value,
            salt=self.salt.value,
            cache=self._cache,
            progress=False,
        )
        return bench.set_inputs(values).set_candidates(chosen).set_rubric(self.rubric.value).set_scorer(scorer)

    # ---------------------------------------------------------------------------------------------- run / stop

    async def start(self) -> BenchmarkReport | None:
        """Click Run and wait for the race to end: its report, or None when it failed (see ``status``, ``error``)
        or was stopped. While a race runs, this waits for it instead of starting a second one."""
        return await self._wait(self._begin_race() or (self.task if self._busy else None))

    async def rejudge(self) -> BenchmarkReport | None:
        """Click Rejudge and wait: judge the shown report's runs again under the rubric (and scorer) as now set;
        no candidate is called. None when it could not (see ``status``)."""
        return await self._wait(self._begin_rejudge())

    def stop(self) -> bool:
        """Cancel the running race (or rejudge). What landed stays in the cache, so a rerun resumes from there."""
        if self.task is None or self.task.done():
            return False
        self._stop_requested = True
        self._say("stopping…")
        return self.task.cancel()

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
        except Exception as exc:
            self._fail(f"cannot {what}", exc)
            return None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            work.close()
            self._say(f"cannot {what}: no running event loop (in a script, use `await panel.start()`)", error=True)
            return None
        self._busy, self._stop_requested, self.error, self._doing = True, False, None, what
        self._set_buttons()
        self.task = loop.create_task(work)
        self.task.add_done_callback(self._task_done)
        return self.task

    def _begin_race(self) -> asyncio.Task[Any] | None:
        def prepare() -> Coroutine[Any, Any, Any]:
            self.bench = self.build_benchmark()
            self._reset_progress(self.bench)
            return self._race(self.bench)

        return self._spawn("run", prepare)

    async def _race(self, bench: Benchmark) -> BenchmarkReport | None:
        started, unsubscribe = time.perf_counter(), bench.subscribe(self._on_event)
        self._say(f"racing {len(self._counts) - 1} candidates × {bench.runs} runs × {self._inputs} inputs…")
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
            reference_failed = partial is not None and not partial.runs.filter(role="reference")["ok"].all()
            self._fail("the reference run failed" if reference_failed else "the race failed", exc)
            return None
        finally:
            unsubscribe()
            self._draw_progress(force=True)
        report = bench.report()
        self._show(report)
        failed = report.runs.filter(~pl.col("ok")).height
        self._say(
            f"done in {time.perf_counter() - started:.1f}s: {report.runs.height} runs ({failed} failed), "
            f"{report.models.height} entries · {report.totals()}"
        )
        return report

    def _begin_rejudge(self) -> asyncio.Task[Any] | None:
        def prepare() -> Coroutine[Any, Any, Any]:
            if self.report is None:
                raise ValueError("nothing to rejudge yet: run the benchmark first")
            return self._rejudge(self.report, self.rubric.value, self.selected_scorer())

        return self._spawn("rejudge", prepare)

    async def _rejudge(self, shown: BenchmarkReport, rubric: str, scorer: Any) -> BenchmarkReport | None:
        n = shown.runs.filter(role="candidate").height
        self._say(f"rejudging {n} runs under the rubric as edited (only the judge is called)…")
        try:
            if self.bench is not None and self.bench.metadata.get(Benchmark.REPORT) is shown:
                report = await self.bench.set_scorer(scorer).rejudge(rubric=rubric)
            else:  # the last race was stopped, so its bench has no report: rejudge the report on screen
                report = await rejudge_report(
                    shown, self.catalog, rubric=rubric, cache=self._cache, scorer=scorer, progress=False
                )
        except asyncio.CancelledError:
            if self._stop_requested:
                return None
            raise
        except Exception as exc:
            self._fail("rejudge failed", exc)
            return None
        self._show(report)
        self._say(f"rejudged {n} runs under the edited rubric · {report.totals()}")
        return report

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._busy = False
        self._set_buttons()
        if (task.cancelled() or self._stop_requested) and self._doing == "rejudge":
            self._say("rejudge stopped: the report shown is unchanged")
        elif task.cancelled() or self._stop_requested:
            landed = sum(c[1] for name, c in self._counts.items() if name != "reference")
            partial = self.bench.metadata.get(Benchmark.REPORT) if self.bench is not None else None
            if partial is not None and partial.meta.stopped:
                self._show(partial)  # the runs judged before the stop
            self._say(
                f"stopped: {landed} of {self.progress_bar.max} runs had landed (the tabs show those judged); "
                "what finished is in the cache, so Run with the same settings resumes from there"
            )
            self.progress_bar.bar_style = "warning"
        elif task.exception() is not None:  # not expected: _race and _rejudge report their own errors
            self._fail("unexpected error", task.exception())  # type: ignore[arg-type]
        self._stop_requested = False

    def _set_buttons(self) -> None:
        self.run_button.disabled = self.rejudge_button.disabled = self._busy
        self.stop_button.disabled = not self._busy

    def _say(self, text: str, *, error: bool = False) -> None:
        self.status.value = f"{CSS}<span{' class=gb-bad' if error else ''}>{esc(text)}</span>"

    def _fail(self, what: str, exc: BaseException) -> None:
        self.error = exc
        self._say(f"{what}: {type(exc).__name__}: {exc}", error=True)
        self.progress_bar.bar_style = "danger"

    # -------------------------------------------------------------------------------------------------- progress

    def _reset_progress(self, bench: Benchmark) -> None:
        self._inputs = len(self.selected_inputs())
        candidates = [n for n in self.candidates.value if self.catalog[n].callable_reason() is None]
        self._counts = {"reference": [self._inputs, 0, 0, 0]} | {
            n: [bench.runs * self._inputs, 0, 0, 0] for n in candidates
        }
        self._reference = self.catalog.picks.get(bench.grade, "-")
        self.progress_bar.max = max(1, len(candidates) * bench.runs * self._inputs)
        self.progress_bar.value, self.progress_bar.bar_style = 0, ""
        self._draw_progress(force=True)

    def _on_event(self, event: RaceEvent) -> None:
        counts = self._counts.setdefault("reference" if event.kind == "reference" else event.run.entry, [0] * 4)
        if event.kind == "judged":
            counts[2] += 1
        else:  # a reference or a candidate run landed
            counts[1] += 1
            counts[3] += not event.run.ok
        self._draw_progress()

    def _draw_progress(self, force: bool = False) -> None:
        if not force and time.perf_counter() - self._drawn_at < PROGRESS_EVERY_S:
            return
        self._drawn_at = time.perf_counter()
        judged = sum(c[2] for c in self._counts.values())
        self.progress_bar.value = min(judged, self.progress_bar.max)
        if judged and judged >= self.progress_bar.max:
            self.progress_bar.bar_style = "success"
        rows = []
        for name, (planned, landed, done, failed) in self._counts.items():
            label = f"reference ({self._reference})" if name == "reference" else name
            share = 100 * (landed if name == "reference" else done) / planned if planned else 0
            bar = (
                f'<div style="width:120px;background:#eee"><div style="width:{share:.0f}%;height:8px;background:#4a8">'
            )
            judged_cell = "–" if name == "reference" else done
            rows.append(
                f"<tr>{td(label)}{td(f'{landed} / {planned}')}{td(judged_cell)}{td(failed)}"
                f"<td>{bar}</div></div></td></tr>"
            )
        head = "".join(f"<th>{h}</th>" for h in ("entry", "landed", "judged", "failed", ""))
        self.progress_table.value = f'{CSS}<table class="gb-t"><tr>{head}</tr>{"".join(rows)}</table>'

    # --------------------------------------------------------------------------------------------------- results

    def _show(self, report: BenchmarkReport) -> None:
        """Fill every tab from ``report`` (a tab that cannot be drawn says why in the status instead)."""
        self.report = report
        for draw in (self._draw_runs, self._draw_models, self._draw_charts, self._fill_runs, self._draw_diagnostics):
            try:
                draw()
            except Exception as exc:  # one broken view must not hide the others
                self._fail(f"could not draw {draw.__name__.removeprefix('_')}", exc)

    def _header(self) -> str:
        m = self.report.meta if self.report is not None else ReportMeta()
        return (
            f"<p><b>{esc(m.job)}</b> · grade {esc(m.grade)} · reference "
            f"{esc(m.reference_entry)} · judge {esc(m.judge_entry)} · salt "
            f"{esc(repr(m.salt))} · scorer {esc(m.scorer or 'none')}</p>"
        )

    def _draw_runs(self) -> None:
        if self.report is None:
            return
        up = self.runs_ascending.value
        runs = self.report.runs.sort(self.runs_sort.value, descending=not up, nulls_last=True, maintain_order=True)
        self.runs_ascending.icon = "sort-amount-asc" if up else "sort-amount-desc"
        rubric = pre(self.report.meta.rubric or "(none)")
        caption = f"<details><summary>judged under this rubric</summary>{rubric}</details>"
        self.runs_table.value = self._header() + caption + scroll(html_table(runs, RUN_COLUMNS))

    def _draw_models(self) -> None:
        assert self.report is not None
        star = pl.when(pl.col("is_reference")).then(pl.lit("★ ")).otherwise(pl.lit(""))
        interval = pl.format("{} [{}–{}]", *(pl.col(c).round(2) for c in ("score_mean", "score_lo", "score_hi")))
        models = self.report.models.with_columns(
            star.add(pl.col("entry")).alias("entry"),
            interval.fill_null(pl.col("score_mean").round(2).cast(pl.String)).alias("score [95% CI]"),
        )
        skipped = "".join(f"<li>skipped {esc(e)}: {esc(r)}</li>" for e, r in (self.report.meta.skipped).items())
        table = html_table(models, MODEL_COLUMNS, empty="no candidate runs")
        self.models_table.value = (
            f"{self._header()}{self._verdicts_html()}{table}<ul>{skipped}</ul><p>{esc(self.report.totals())}</p>"
        )

    def _verdicts_html(self) -> str:
        """Each tested entry's verdict as a coloured badge with its evidence, and the recommendation."""
        from .charts import VERDICT_COLOURS

        assert self.report is not None
        items = []
        for r in self.report.models.filter(pl.col("verdict").is_not_null()).iter_rows(named=True):
            colour = VERDICT_COLOURS.get(r["verdict"], "#999")
            badge = f'<b style="color:{colour}">■ {esc(r["verdict"])}</b>'
            items.append(f"<li>{badge} {esc(r['entry'])}: {esc(r['verdict_reason'] or '')}</li>")
        if not items:
            return ""
        pick = self.report.recommend()
        line = f"<p><b>recommendation</b>: {esc(pick.sentence)}</p>" if pick is not None else ""
        margin = self.report.meta.margin
        return f"<p>verdict against the reference, margin {margin:g} of 10:</p><ul>{''.join(items)}</ul>{line}"

    def _draw_charts(self) -> None:
        for box, name in ((self.cost_chart, "cost_quality"), (self.latency_chart, "latency_quality")):
            try:
                from . import charts

                box.children = (charts.offline_widget(getattr(charts, name)(self.report)),)
            except Exception as exc:
                note = f"chart unavailable: {type(exc).__name__}: {exc}"
                box.children = (w.HTML(f'{CSS}<p class="gb-bad">{esc(note)}</p>'),)

    def _fill_runs(self) -> None:
        assert self.report is not None

        def label(r: dict[str, Any]) -> str:
            how = f"score {r['score']}" if r["score"] is not None else "failed" if not r["ok"] else "unjudged"
            return f"{r['entry']} · input {r['input_id']} · repeat {r['repeat']} · {how}"

        candidates = self.report.runs.filter(role="candidate").iter_rows(named=True)
        options, keep = [(label(r), r["run_id"]) for r in candidates], self.transcript_run.value
        self.transcript_run.options = options
        ids = [v for _, v in options]
        self.transcript_run.value = keep if keep in ids else (ids[0] if ids else None)
        self._draw_transcript()

    def _draw_transcript(self) -> None:
        report, run_id = self.report, self.transcript_run.value
        if report is None:
            return
        if run_id is None:
            self.transcript.value = "<i>no candidate run to show</i>"
            return
        row = report.runs.filter(run_id=run_id).row(0, named=True)
        refs = report.runs.filter(role="reference", input_id=row["input_id"])

        def side(r: dict[str, Any] | None, title: str) -> str:
            if r is None:
                return f"{FLEX}<h4>{title}</h4><i>missing</i></div>"
            events = report.transcript(r["run_id"])
            facts = (
                f"{r['entry']} ({r['model']}) · input {r['input_id']} · repeat {r['repeat']} · "
                f"{'ok' if r['ok'] else 'FAILED'} · {r['calls']} calls · {r['tool_calls']} tool calls · "
                f"{text(r['latency_s'])}s · cost {text(r['cost'])} {r['currency']}"
            )
            return f"{FLEX}<h4>{title}</h4><p>{esc(facts)}</p>{events_html(events)}</div>"

        t = {k: esc(text(row[k])) for k in ("score", "accuracy", "work", "judge_entry", "judge_path", "scorer")}
        verdict = (
            f"<p><b>verdict</b>: score {t['score']}/10 (accuracy {t['accuracy']}/7, work {t['work']}/3) · "
            f"judge {t['judge_entry']} via {t['judge_path']} · scorer {t['scorer']}</p>"
            f"{pre(row['reason'] or '')}"
        )
        for key in ("judge_error", "scorer_error"):
            verdict += f'<p class="gb-bad">{key}: {esc(row[key])}</p>' if row[key] else ""
        sides = side(row, "candidate") + side(refs.row(0, named=True) if refs.height else None, "reference")
        self.transcript.value = f"{CSS}{verdict}<div style='display:flex;gap:16px'>{sides}</div>"

    def _draw_diagnostics(self) -> None:
        assert self.report is not None
        found = html_table(self.report.diagnostics(), empty="nothing to flag")
        self.diagnostics_table.value = self._header() + scroll(found)

    # ---------------------------------------------------------------------------------------------------- export

    def export(self) -> Path | None:
        """Write the report shown (`BenchmarkReport.to_parquet`) to the folder in the box; the status says where."""
        if self.report is None:
            self._say("nothing to export yet: run the benchmark first", error=True)
            return None
        try:
            path = self.report.to_parquet(self.export_dir.value.strip() or "out/panel").resolve()
        except Exception as exc:
            self._fail("export failed", exc)
            return None
        self._say(f"wrote runs.parquet, models.parquet, calls.parquet and meta.json to {path}")
        return path
