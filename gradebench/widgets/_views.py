"""The panel's tabs: Runs, Models, the two charts, Transcript and Diagnostics, each drawn from one report.

What the tabs say in words comes from the presenter (`gradebench._report.present`): the header line, the stop marker,
the
entries not judged, the verdict lines, the recommendation, the cost line and the number formats. Here they are only
laid out as HTML.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as w
import polars as pl

from .._base.vocab import Role
from .._judge.agreement import judges_lines
from .._records.meta import ReportMeta
from .._report import present as _present
from .._report.label_view import agreement_html
from .._report.report import BenchmarkReport
from ._html import CSS, Markup, concat, html_table, marker, pre, run_pair, scroll, tag

__all__ = ["MODEL_COLUMNS", "RUN_COLUMNS", "TAB_TITLES", "Views"]

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
RUN_CUT = 60
"""Runs tab cells longer than this many characters are cut to keep one line per row (whole in the tooltip)."""
RUN_ROWS = 1000
"""Runs the Runs tab shows at most, in its order (sort it to see the others' ends): a race of 200,000 runs as one
HTML table would stall the browser."""
MODEL_COLUMNS = (
    "entry",
    "verdict",
    "verdict_basis",
    "score [95% CI]",
    "mean_diff",
    "lower",
    "n_pairs",
    "stopped",
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
TAB_TITLES = ("Runs", "Models", "Cost vs quality", "Latency vs quality", "Transcript", "Diagnostics")
HINT = tag("i", "Run the benchmark to fill this tab.")
PREVIOUS = "PREVIOUS RACE — a new one is running: the tabs show the last race's report until it ends"
"""What every tab says at its top while a new race runs (`Views.mark_previous`)."""


class Views:
    """The tabs, and the report they show (``report``; None until a race or rejudge gave one)."""

    def __init__(self) -> None:
        self.report: BenchmarkReport | None = None
        self.banner = ""
        """What every tab says above the report (`mark_previous`); '' while the report shown is the latest."""
        self.runs_sort = w.Dropdown(options=list(RUN_COLUMNS), value="entry", description="sort by")
        self.runs_ascending = w.ToggleButton(value=True, description="ascending", icon="sort-amount-asc")
        self.runs_table, self.models_table, self.transcript, self.diagnostics_table = (w.HTML() for _ in range(4))
        self.cost_chart, self.latency_chart = w.VBox(), w.VBox()
        self.transcript_run = w.Dropdown(description="run", layout=w.Layout(width="70%"))
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
        self.tabs.titles = TAB_TITLES
        self.clear(HINT)
        for widget, react in (
            (self.runs_sort, self.draw_runs),
            (self.runs_ascending, self.draw_runs),
            (self.transcript_run, self.draw_transcript),
        ):
            widget.observe(lambda _, react=react: react(), "value")

    def clear(self, note: Markup) -> None:
        """Every tab says ``note`` instead of a report."""
        self.report, self.banner = None, ""
        for widget in (self.runs_table, self.models_table, self.transcript, self.diagnostics_table):
            widget.value = note
        self.cost_chart.children = self.latency_chart.children = (w.HTML(note),)
        with self.transcript_run.hold_sync():
            self.transcript_run.options = []

    def show(self, report: BenchmarkReport, failed: Callable[[str, Exception], None]) -> None:
        """Fill every tab from ``report``; a tab that cannot be drawn is handed to ``failed`` (the others still are)."""
        self.report, self.banner = report, ""
        for name, draw in (
            ("runs", self.draw_runs),
            ("models", self.draw_models),
            ("charts", self.draw_charts),
            ("transcript", self.fill_transcripts),
            ("diagnostics", self.draw_diagnostics),
        ):
            try:
                draw()
            except Exception as exc:  # one broken view must not hide the others
                failed(f"could not draw {name}", exc)

    def mark_previous(self, note: str = PREVIOUS) -> None:
        """The report shown is no longer the latest (a new race runs, or the one after it failed): every tab says
        ``note`` at its top, the charts too, until the next report is shown or the tabs are cleared."""
        if self.report is None:
            return
        self.banner = note
        for draw in (self.draw_runs, self.draw_models, self.draw_transcript, self.draw_diagnostics):
            draw()
        for box in (self.cost_chart, self.latency_chart):
            box.children = (w.HTML(concat(CSS, marker(note))), box.children[-1])  # [-1]: the chart drawn

    # ---------------------------------------------------------------------------------------------------- heads

    def _head(self) -> Markup:
        """The presenter's header line, what the panel adds (salt, scorer), the stop marker and the headlines."""
        report = self.report
        assert report is not None
        m: ReportMeta = report.meta
        facts = f"salt {m.spec.salt!r} · scorer {m.spec.scorer or 'none'}"
        judge = (tag("p", tag("b", line), class_="gb-bad") for line in _present.headlines(report))
        head = tag("p", tag("b", _present.header(report)), f" · {facts}")
        return concat(CSS, marker(self.banner), head, marker(_present.stopped(report)), *judge)

    def _not_judged(self) -> Markup:
        assert self.report is not None
        absent = _present.not_judged(self.report)
        if not absent:
            return Markup()
        return tag("p", tag("b", _present.NOT_JUDGED), " (no judged run): ", ", ".join(absent))

    # ----------------------------------------------------------------------------------------------------- runs

    def draw_runs(self) -> None:
        up = self.runs_ascending.value
        self.runs_ascending.description = "ascending" if up else "descending"
        self.runs_ascending.icon = "sort-amount-asc" if up else "sort-amount-desc"
        if self.report is None:
            return
        runs = self.report.runs.sort(self.runs_sort.value, descending=not up, nulls_last=True, maintain_order=True)
        rubric = pre(self.report.meta.spec.rubric or "(none)")
        caption = [tag("details", tag("summary", "judged under this rubric"), rubric)]
        if runs.height > RUN_ROWS:
            order = f"{self.runs_sort.value}, {'ascending' if up else 'descending'}"
            first = f"the first {RUN_ROWS:,} of {runs.height:,} runs, sorted by {order}: sort the other way for "
            caption.append(tag("p", first, "the other end; ", tag("code", "report.runs"), " holds every one"))
            runs = runs.head(RUN_ROWS)
        table = html_table(runs, RUN_COLUMNS, cut=RUN_CUT)
        self.runs_table.value = concat(self._head(), *caption, scroll(table))

    # --------------------------------------------------------------------------------------------------- models

    def draw_models(self) -> None:
        report = self.report
        assert report is not None
        star = pl.when(pl.col("is_reference")).then(pl.lit("★ ")).otherwise(pl.lit(""))
        scores = [_present.score_interval(r) for r in report.model_rows()]
        models = report.models.with_columns(
            star.add(pl.col("entry")).alias("entry"),
            pl.Series("score [95% CI]", scores, dtype=pl.String),
        )
        skipped = (tag("li", f"skipped {e}: {r}") for e, r in report.meta.skipped.items())
        table = html_table(models, MODEL_COLUMNS, empty="no candidate runs", fit=True)
        self.models_table.value = concat(
            self._head(),
            self._verdicts(),
            agreement_html(report.agreement),
            self._not_judged(),
            tag("div", table, style="overflow-x:auto"),
            tag("ul", *skipped),
            tag("p", _present.totals(report)),
        )

    def _verdicts(self) -> Markup:
        """Each tested entry's verdict line as a coloured badge with its evidence, and the recommendation."""
        from .._report.charts import VERDICT_COLOURS

        report = self.report
        assert report is not None
        lines = _present.verdict_lines(report)
        pick = _present.recommendation(report)
        recommendation = tag("p", tag("b", pick)) if pick is not None else Markup()
        if not lines:
            return recommendation
        items = []
        for v in lines:
            badge = tag("b", f"■ {v.verdict}", style=f"color:{VERDICT_COLOURS.get(v.verdict, '#999')}")
            items.append(tag("li", badge, f" {v.entry}: {v.evidence()}"))
        agreement, planted = _present.self_agreement(report), report.controls_outcome().sentence()
        items += [tag("li", line) for line in (agreement, planted) if line]
        items += [tag("li", line) for line in judges_lines(report)]  # a panel's judges
        title = concat(tag("h4", "verdict against the reference"), tag("p", _present.verdicts_title(report)))
        return concat(title, tag("ul", *items), recommendation)

    # --------------------------------------------------------------------------------------------------- charts

    def draw_charts(self) -> None:
        for box, name in ((self.cost_chart, "cost_quality"), (self.latency_chart, "latency_quality")):
            try:
                from .._report import charts

                box.children = (charts.offline_widget(getattr(charts, name)(self.report)),)
            except Exception as exc:
                note = f"chart unavailable: {type(exc).__name__}: {exc}"
                box.children = (w.HTML(concat(CSS, tag("p", note, class_="gb-bad"))),)

    # ----------------------------------------------------------------------------------------------- transcript

    def fill_transcripts(self) -> None:
        """Offer every candidate run in the Transcript tab (keeping the one shown when it is still there)."""
        assert self.report is not None

        def label(r: dict[str, Any]) -> str:
            how = "failed" if not r["ok"] else f"score {r['score']}" if r["score"] is not None else "unjudged"
            return f"{r['entry']} · input {r['input_id']} · repeat {r['repeat']} · {how}"

        candidates = self.report.runs.filter(role=Role.CANDIDATE).iter_rows(named=True)
        options, keep = [(label(r), r["run_id"]) for r in candidates], self.transcript_run.value
        ids = [v for _, v in options]
        with self.transcript_run.hold_sync():
            self.transcript_run.options = options
            self.transcript_run.value = keep if keep in ids else (ids[0] if ids else None)
        self.draw_transcript()

    def draw_transcript(self) -> None:
        report, run_id = self.report, self.transcript_run.value
        if report is None:
            return
        if run_id is None:
            self.transcript.value = concat(self._head(), tag("i", "no candidate run to show"))
            return
        self.transcript.value = concat(self._head(), run_pair(report, run_id))

    # ---------------------------------------------------------------------------------------------- diagnostics

    def draw_diagnostics(self) -> None:
        assert self.report is not None
        found = html_table(self.report.diagnostics(), empty="nothing to flag")
        self.diagnostics_table.value = concat(self._head(), scroll(found))
