"""`LabelPanel`: a person labels a sample of a report's runs in the notebook, blind to the judge and the entry.

The runs come from `gradebench._verdict.labels.draw_runs` (seeded, stratified by entry, in an order that says nothing
about
the entry); each is shown beside the reference run of its input, drawn as the panel's Transcript tab draws runs
(`gradebench._report.page.events_html`), with every entry name and model id removed. The judge's score and the entry
are shown only once the run is answered (under "last answer"), and every answer is written to the labels file at
once (`HumanLabels.write`: whole or not at all), so a closed notebook loses no label and a panel opened again on the
same file and seed carries on where it stopped.
"""

from __future__ import annotations

import numbers
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import ipywidgets as w
import polars as pl

from .._base.vocab import Role
from .._report.report import BenchmarkReport
from .._stats.ppi import MIN_LABELS
from .._verdict.labels import FAIL_SCORE, PASS_SCORE, HumanLabels, ask_runs, asked_chances, draw_runs, labellable
from ._html import CSS, Markup, concat, events_html, flex, pre, tag

__all__ = ["ORDERS", "SCALES", "LabelPanel"]

SCALES = ("score", "pass/fail")
"""How a `LabelPanel` asks: a score 0..10 on the judge's scale, or pass/fail (10 and 0 on it)."""
ORDERS = ("random", "active")
"""Which runs a `LabelPanel` asks about: a random sample (`draw_runs`), or active labelling's order (`ask_runs`:
the runs the judge was least sure of more often, each label recorded with the chance it was asked with)."""
BUTTON_CLASS = "gb-label-button"
"""The class every answer button carries; each also has ``gb-label-<value>`` (``gb-label-7``, ``gb-label-pass``)."""


class LabelPanel(w.VBox):
    """Label a sample of ``report``'s runs, one at a time, each beside its input's reference run.

    ``path``: the labels file (parquet), written after every answer; labels already there are kept and their runs
    skipped. ``n``: how many runs to draw (default `MIN_LABELS` a tested entry, the number a label-corrected verdict
    needs to act on), drawn with ``seed`` (`gradebench._verdict.labels.draw_runs`: the same seed and a larger n extend
    the sample).
    ``scale``: ``"score"`` (buttons 0..10) or ``"pass/fail"``. ``labeller``: recorded with each label. ``order``:
    ``"random"`` or ``"active"`` (`ORDERS`). After each answer the panel says where each verdict stands and what
    would settle it (``progress``). ``entries``: ask only about these entries' runs (a verdict needs its entry's and
    the reference entry's labels; default every entry).
    Everything a click does is a method: `answer` (also the buttons: ``buttons``, by their value), `extend`.
    """

    def __init__(
        self,
        report: BenchmarkReport,
        path: str | os.PathLike[str],
        *,
        n: int | None = None,
        seed: int = 0,
        scale: str = "score",
        labeller: str | None = None,
        order: str = "random",
        entries: Sequence[str] | None = None,
    ):
        super().__init__()
        if scale not in SCALES:
            raise ValueError(f"scale must be one of {list(SCALES)}, got {scale!r}")
        if order not in ORDERS:
            raise ValueError(f"order must be one of {list(ORDERS)}, got {order!r}")
        self.order = order
        self.entries: list[str] | None = None if entries is None else list(entries)
        """The entries whose runs are asked about (None: every entry)."""
        self.report, self.path, self.seed, self.scale, self.labeller = report, Path(path), seed, scale, labeller
        self.labels: HumanLabels = HumanLabels.read(self.path) if self.path.is_file() else HumanLabels()
        """The labels given so far (the file's, then this panel's)."""
        self.labels.validate(report.runs)
        if self.entries is not None and (unknown := set(self.entries) - set(report.runs["entry"].unique())):
            raise ValueError(f"entries {sorted(unknown)} did not race in this report")
        count = self._pool().filter(labellable())["entry"].n_unique()
        if not count:
            raise ValueError("nothing to label: the report has no candidate run that succeeded and was judged")
        self.queue: list[str] = self._draw_runs(n if n is not None else MIN_LABELS * count)
        """The runs drawn to label, in the order shown."""
        self.last: dict[str, Any] | None = None
        """The run answered last, with the judge's score and the entry (what `revealed` shows)."""
        self.title, self.status, self.revealed, self.progress = w.HTML(), w.HTML(), w.HTML(), w.HTML()
        self.candidate_view, self.reference_view = w.HTML(), w.HTML()
        values: list[Any] = list(range(11)) if scale == "score" else ["pass", "fail"]
        self.buttons: dict[Any, w.Button] = {v: self._button(v) for v in values}
        """The answer buttons by value (0..10, or ``"pass"``/``"fail"``)."""
        views = w.HBox([self.candidate_view, self.reference_view], layout=w.Layout(width="100%"))
        for view in (self.candidate_view, self.reference_view):
            view.layout = w.Layout(flex="1 1 0", min_width="0")
        buttons = w.HBox(list(self.buttons.values()))
        self.children = [self.title, buttons, self.status, self.revealed, self.progress, views]
        self.add_class("gb-label-panel")
        self._draw()

    # ----------------------------------------------------------------------------------------------------- state

    @property
    def current(self) -> str | None:
        """The run shown to label now: the first drawn run not labelled yet; None when all are."""
        return next((r for r in self.queue if r not in self.labels), None)

    @property
    def answered(self) -> int:
        """How many of the drawn runs are labelled."""
        return sum(r in self.labels for r in self.queue)

    def labelled_report(self) -> BenchmarkReport:
        """The report with these labels (`BenchmarkReport.with_labels`): the agreement and corrected verdicts."""
        return self.report.with_labels(self.labels)

    # ---------------------------------------------------------------------------------------------------- clicks

    def answer(self, score: int | float | str | bool) -> HumanLabels:
        """Label the run shown with ``score`` (0..10, or ``"pass"``/``"fail"``), write the file, show the next run
        and what the judge said of this one. A bad score raises and labels nothing; so does a panel with nothing left
        to label."""
        run_id = self.current
        if run_id is None:
            raise RuntimeError(f"every drawn run is labelled ({len(self.queue)}): extend(k) draws k more")
        if self.scale == "pass/fail" and not (isinstance(score, bool) or score in ("pass", "fail")):
            raise ValueError(f"this panel asks pass/fail: answer 'pass' or 'fail', got {score!r}")
        if self.scale == "score" and (isinstance(score, bool | str) or not isinstance(score, numbers.Real)):
            raise ValueError(f"this panel asks a score from 0 to 10, got {score!r}")
        labels = self.labels.added(run_id, score, labeller=self.labeller)
        if self.order == "active":  # every answer so far was asked with the chances of this many a side
            labels = labels.with_chances(asked_chances(self.report.runs, [r for r in self.queue if r in labels]))
        labels.write(self.path)  # written before it counts: a label the file lacks was never given
        self.labels = labels
        row = self.report.runs.filter(pl.col("run_id") == run_id).row(0, named=True)
        self.last = {**row, "label": labels.scores[run_id]}
        self._draw()
        return labels

    def extend(self, k: int) -> list[str]:
        """Draw ``k`` more runs to label (the same seeded sample, extended: still a random sample of each entry)."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be an integer >= 1, got {k!r}")
        self.queue = self._draw_runs(len(self.queue) + k)
        self._draw()
        return self.queue

    def _pool(self) -> pl.DataFrame:
        """The runs asked about: every entry's, or those of ``entries``."""
        runs = self.report.runs
        return runs if self.entries is None else runs.filter(pl.col("entry").is_in(self.entries))

    def _draw_runs(self, n: int) -> list[str]:
        # each entry's order is seeded by its name alone, so leaving entries out does not change the others' sample
        pick = ask_runs if self.order == "active" else draw_runs
        return pick(self._pool(), n, seed=self.seed)

    def standing(self) -> list[str]:
        """Where each tested entry's verdict stands on the labels so far, one line each: the verdict and its reason
        (how many labels it rests on, its bounds, and how many more labels would likely settle it, or why there is
        no label-corrected verdict yet)."""
        models = self.labelled_report().models.filter(pl.col("verdict").is_not_null())
        return [f"{e}: {v} · {r}" for e, v, r in models.select("entry", "verdict", "verdict_reason").iter_rows()]

    def _button(self, value: Any) -> w.Button:
        counts = PASS_SCORE if value == "pass" else FAIL_SCORE
        tip = f"score {value} of 10" if isinstance(value, int) else f"{value} (counts {counts:g} of 10)"
        button = w.Button(description=str(value), tooltip=tip, layout=w.Layout(width="auto", min_width="36px"))
        button.add_class(BUTTON_CLASS)
        button.add_class(f"gb-label-{value}")
        button.on_click(self._clicked(value))
        return button

    def _clicked(self, value: Any) -> Callable[[w.Button], None]:
        def click(_: w.Button) -> None:
            try:
                self.answer(value)
            except Exception as exc:  # a click has no caller to raise to: say it where the person looks
                why = f"not saved: {type(exc).__name__}: {exc}"
                self.status.value = concat(CSS, tag("p", why, class_="gb-bad"))

        return click

    # ------------------------------------------------------------------------------------------------------ view

    def _draw(self) -> None:
        run_id, total = self.current, len(self.queue)
        saved = f"{len(self.labels)} labels in {self.path}"
        if run_id is None:
            self.title.value = concat(tag("b", f"all {total} drawn runs are labelled"), f" · {saved}")
            how = ("Nothing left to label: ", tag("code", "panel.labelled_report()"), ", or ", tag("code", "extend(k)"))
            self.candidate_view.value, self.reference_view.value = tag("i", *how, "."), Markup()
        else:
            place = self.answered + 1
            said = f" · score it as the judge would, against the reference · {saved}"
            self.title.value = concat(tag("b", f"run {place} of {total} to label"), said)
            self.candidate_view.value, self.reference_view.value = self._pair(run_id)
        for button in self.buttons.values():
            button.disabled = run_id is None
        self.status.value = Markup()
        self.revealed.value = self._reveal()
        lines = self.standing() if len(self.labels) else []
        self.progress.value = concat(*(tag("p", line, class_="gb-label-standing") for line in lines))

    def _pair(self, run_id: str) -> tuple[Markup, Markup]:
        """The run to label and its input's reference run, blind: no entry, model or judge score in either."""
        runs = self.report.runs
        row = runs.filter(pl.col("run_id") == run_id).row(0, named=True)
        refs = runs.filter((pl.col("role") == Role.REFERENCE) & (pl.col("input_id") == row["input_id"]))
        names = [str(n) for n in (*runs["entry"].unique(), *runs["model"].unique()) if n]
        task = self.report.meta.instructions or "(no instructions)"
        rubric = self.report.meta.spec.rubric or "(none)"
        mine = flex(
            CSS,
            tag("details", tag("summary", "the task and the rubric"), pre(task), pre(rubric)),
            tag("h4", f"the run to label · input {row['input_id']}"),
            events_html(_blind(self.report.transcript(run_id), names)),
        )
        if not refs.height:
            return mine, tag("i", "no reference run for this input")
        theirs = events_html(_blind(self.report.transcript(refs["run_id"][0]), names))
        return mine, flex(tag("h4", "the reference run (the yardstick)"), theirs)

    def _reveal(self) -> Markup:
        last = self.last
        if last is None:
            return Markup()
        judged = (
            f"the judge gave {last['score']:g} (accuracy {last['accuracy']:g}/7, work {last['work']:g}/3)"
            if last["score"] is not None
            else "the judge gave no score"
        )
        text = f"last answer: you gave {last['label']:g}; {judged}; it was {last['entry']}"
        return concat(CSS, tag("p", text, class_="gb-label-revealed"), pre(last["reason"] or ""))


def _blind(events: Any, names: list[str]) -> Any:
    """``events`` with every name in ``names`` replaced by ``[redacted]``, wherever a string holds one."""
    words = sorted({n for n in names if len(n) >= 3}, key=len, reverse=True)
    if not words:
        return events
    pattern = re.compile("|".join(re.escape(n) for n in words), re.IGNORECASE)

    def scrub(value: Any) -> Any:
        if isinstance(value, str):
            return pattern.sub("[redacted]", value)
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in value.items()}
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return value

    return scrub(events)
