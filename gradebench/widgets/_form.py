"""The panel's form: the controls that describe a benchmark, and the `Benchmark` they build.

Job, grade, candidates, runs per entry (or a race to a verdict in planned looks, with its most runs an
entry), a budget, inputs, scorer, cache salt, rubric, the judges, the negative controls and whether the
judge goes through its Batch API. The form knows nothing of running: `Form.build_benchmark` is all the task and the
estimate ask of it, and `Form.on_change` tells them when the settings moved.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ipywidgets as w

from .. import scorers
from .._base.vocab import Design
from .._calls.cache import CallCache
from .._catalog.catalog import Catalog, Entry
from .._race.benchmark import Benchmark
from .._race.job import JobSpec
from .._race.plan import resolve_scorer
from .._records.spec import DEFAULT_CONTROLS, DEFAULT_RUNS, JOB_SCORER, MAX_RUNS_PER_INPUT, NO_SCORER, RaceSpec
from ..jobs import EXAMPLE_INPUTS, EXAMPLE_JOBS, load_inputs
from ._html import CSS, concat, esc, join, tag

__all__ = ["Form"]

FIRST_INPUTS = 10
"""Inputs the panel races at first: more than the 8 a verdict needs (`gradebench._stats.paired.MIN_INPUTS`)."""
PATH_KINDS = tuple(spec.split(":")[0] for spec in scorers.SPECS if spec.endswith(":PATH"))
"""Scorer kinds that read a dotted path (typed in the box beside the dropdown), from the one registry."""
OPTIONAL_PATH = tuple(spec.split("[")[0] for spec in scorers.SPECS if spec.endswith("[:PATH]"))
"""Scorer kinds whose path may be left blank."""


def _px(width: str) -> w.Layout:
    return w.Layout(width=width)


def _fits(labels: Sequence[str]) -> w.Layout:
    """A dropdown wide enough for its longest label (beside its description and the arrow)."""
    longest = max((len(label) for label in labels), default=10)
    return w.Layout(width=f"calc(var(--jp-widgets-inline-label-width) + {longest}ch + 32px)")


class Form:
    """The controls that describe a benchmark, kept consistent as they change: the grade follows the job's, the
    candidates follow the grade (every callable entry selected), the scorer choices follow the job."""

    def __init__(
        self,
        catalog: Catalog,
        jobs: Sequence[Callable[..., Any]] | None = None,
        inputs: Mapping[str, Sequence[Any]] | None = None,
        cache: CallCache | None = None,
    ):
        self.catalog = catalog
        self.cache = cache if cache is not None else CallCache()
        self.specs: dict[str, JobSpec] = {}
        """Job name -> what the benchmark will know of it (name, rubric, scorer)."""
        self.factories: dict[str, Callable[..., Any]] = {}
        # yours first, so the panel opens on the first of them; an example job of the same name gives way to yours
        offered: list[Callable[..., Any]] = [*(jobs or []), *EXAMPLE_JOBS.values()]
        for factory in offered:
            spec = JobSpec(factory)
            if spec.name not in self.specs:
                self.specs[spec.name], self.factories[spec.name] = spec, factory
        self._given_inputs = {k: list(v) for k, v in (inputs or {}).items()}

        self.job = w.Dropdown(options=list(self.specs), description="job", layout=_fits(list(self.specs)))
        grades = [
            (f"{g} (reference {catalog.picks[g]})" if g in catalog.picks else f"{g} (no pick)", g)
            for g in catalog.grades
        ]
        declared = self.specs[self.job.value].grade if self.job.value in self.specs else ""
        self.grade = w.Dropdown(
            options=grades,
            value=_default_grade(catalog, declared),
            description="grade",
            layout=_fits([g for g, _ in grades]),
        )
        self.candidates = w.SelectMultiple(description="candidates", rows=6, layout=_px("100%"))
        self.candidates_note = w.HTML()
        self.runs = w.BoundedIntText(value=DEFAULT_RUNS, min=1, max=1000, description="runs/entry", layout=_px("160px"))
        self.to_verdict = w.Checkbox(
            value=False,
            description="race to a verdict",
            indent=False,
            layout=_px("150px"),
            tooltip="waves of paired runs until each entry's verdict is settled (or it made max runs)",
        )
        self.max_runs = w.BoundedIntText(
            value=1, min=1, max=10**6, description="max runs", disabled=True, layout=_px("170px")
        )
        self._max_runs_follow = True  # 4 runs an input selected, until someone edits it
        self.verdict_design = w.Dropdown(
            options=[("8 planned looks", Design.GROUP_SEQUENTIAL.value), ("auto: the same 8 looks", Design.AUTO.value)],
            value=Design.GROUP_SEQUENTIAL.value,
            description="looks",
            disabled=True,
            layout=_px("230px"),
            tooltip="the race looks 8 times, planned before it starts; auto is another name for the same race",
        )
        self.budget = w.Text(description="budget", placeholder="none", layout=_px("190px"))
        self.budget_note = w.HTML()
        self.all_inputs = w.Checkbox(value=False, description="all inputs", indent=False, layout=_px("100px"))
        # enough inputs for a verdict to settle (a verdict needs MIN_INPUTS): with fewer, every one is inconclusive
        self.n_inputs = w.BoundedIntText(
            value=FIRST_INPUTS, min=1, max=10**6, description="first n", layout=_px("150px")
        )
        self.inputs_note = w.HTML()
        self.scorer = w.Dropdown(description="scorer")
        self.scorer_path = w.Text(placeholder="path, e.g. decision", layout=_px("180px"))
        self.salt = w.Text(description="cache salt", placeholder="blank: reuse cached answers")
        self.rubric = w.Textarea(description="rubric", layout=w.Layout(width="100%", height="80px"))
        judges = [e.name for e in catalog.entries if e.callable_reason() is None or e.name == catalog.ceiling_name]
        self.judges = w.SelectMultiple(
            options=judges, value=(catalog.ceiling_name,), description="judges", rows=3, layout=_px("100%")
        )
        self.controls = w.BoundedIntText(
            value=DEFAULT_CONTROLS,
            min=0,
            max=100,
            description="controls",
            layout=_px("160px"),
            tooltip="planted wrong answers the judge must score low, or its verdicts are void (0: none)",
        )
        self.judge_batch = w.Checkbox(
            value=False,
            description="judge through the Batch API (half price, verdicts within hours)",
            indent=False,
            layout=_px("430px"),
        )

        self._listeners: list[Callable[[], None]] = []
        for widget, react in (
            (self.job, self._job_changed),
            (self.grade, self._grade_changed),
            (self.candidates, self._candidates_changed),
            (self.to_verdict, self._design_changed),
            (self.max_runs, self._max_runs_edited),
            (self.all_inputs, self._inputs_changed),
            (self.n_inputs, self._inputs_changed),
            (self.scorer, self._scorer_changed),
            (self.budget, self._budget_changed),
        ):
            widget.observe(lambda _, react=react: react(), "value")
        self._job_changed()
        self._grade_changed()
        for widget in self.settings():
            widget.observe(lambda _: self._changed(), "value")

    def settings(self) -> list[w.Widget]:
        """Every control whose value shapes the benchmark (what `on_change` listens to)."""
        return [
            self.job,
            self.grade,
            self.candidates,
            self.runs,
            self.to_verdict,
            self.max_runs,
            self.budget,
            self.all_inputs,
            self.n_inputs,
            self.scorer,
            self.scorer_path,
            self.salt,
            self.rubric,
            self.verdict_design,
            self.judges,
            self.controls,
            self.judge_batch,
        ]

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` after any setting changed (one change of job moves several: expect bursts)."""
        self._listeners.append(listener)

    def _changed(self) -> None:
        for listener in list(self._listeners):
            listener()

    def rows(self) -> list[w.Widget]:
        """The form laid out, one row of controls per widget."""
        return [
            w.HBox([self.job, self.grade]),
            self.candidates,
            self.candidates_note,
            w.HBox([self.runs, self.to_verdict, self.verdict_design, self.max_runs, self.budget, self.budget_note]),
            w.HBox([self.all_inputs, self.n_inputs, self.inputs_note]),
            w.HBox([self.scorer, self.scorer_path, self.salt]),
            self.rubric,
            self.judges,
            w.HBox([self.controls, self.judge_batch]),
        ]

    # ------------------------------------------------------------------------------------------------- controls

    def entry_label(self, entry: Entry) -> str:
        """An entry as the candidates list shows it: name, grade, prices per 1M tokens and whether it is callable."""
        why = entry.callable_reason()
        mark = "★ " if self.catalog.picks.get(entry.grade) == entry.name else ""
        price = entry.prices_text()
        callable_ = f"NOT CALLABLE: {why}" if why else "callable"
        return f"{mark}{entry.name} · {entry.grade} · {price}{' · sim' if entry.simulated else ''} · {callable_}"

    def _job_changed(self) -> None:
        spec = self.specs[self.job.value]
        if hasattr(self, "grade") and spec.grade in self.catalog.picks:  # follow the grade the job declares
            self.grade.value = spec.grade
        self.rubric.value = spec.rubric
        with self.scorer.hold_sync():  # the options and the value reach the browser in one message
            self.scorer.options = _scorer_options(spec)
            self.scorer.value = NO_SCORER if spec.scorer is None else JOB_SCORER
        self._scorer_changed()
        self._inputs_changed()

    def _grade_changed(self) -> None:
        entries = self.catalog.of_grade(self.grade.value)
        # One message to the browser with the new options and the new selection: sent apart, the options would land
        # while the old selection still points past their end ("Cannot set properties of undefined").
        with self.candidates.hold_sync():
            self.candidates.value = ()
            self.candidates.options = [(self.entry_label(e), e.name) for e in entries]
            self.candidates.value = tuple(e.name for e in entries if e.callable_reason() is None)
        self._candidates_changed()
        self._budget_changed()  # the currency is the grade's

    def _candidates_changed(self) -> None:
        uncallable = {e.name: r for e in self.catalog.of_grade(self.grade.value) if (r := e.callable_reason())}
        dropped = [n for n in self.candidates.value if n in uncallable]
        if dropped:  # a SelectMultiple cannot disable an option: take it out again, visibly
            self.candidates.value = tuple(n for n in self.candidates.value if n not in uncallable)
        notes = [f"ignored {', '.join(dropped)}: not callable"] if dropped else []
        notes += [f"not callable, so not selectable: {n} ({why})" for n, why in uncallable.items()]
        self.candidates_note.value = concat(CSS, join((tag("span", n, class_="gb-bad") for n in notes), tag("br")))

    def _inputs_changed(self) -> None:
        self.n_inputs.disabled = self.all_inputs.value
        try:
            total, chosen = len(self._inputs_for(self.job.value)), len(self.selected_inputs())
        except Exception as exc:
            self.inputs_note.value = concat(CSS, tag("span", exc, class_="gb-bad"))
        else:
            self.inputs_note.value = esc(f"{chosen} of {total} inputs")
            if self._max_runs_follow:
                self._max_runs_follow = False  # not an edit: set it, then follow again
                self.max_runs.value = MAX_RUNS_PER_INPUT * chosen
                self._max_runs_follow = True

    def _design_changed(self) -> None:
        self.runs.disabled = self.to_verdict.value
        self.max_runs.disabled = self.verdict_design.disabled = not self.to_verdict.value

    def _max_runs_edited(self) -> None:
        if self._max_runs_follow:  # someone set it: it no longer follows the inputs
            self._max_runs_follow = False

    def _budget_changed(self) -> None:
        pick = self.catalog.picks.get(self.grade.value)
        currency = self.catalog[pick].currency if pick else ""
        try:
            budget = self.selected_budget()
        except ValueError as exc:
            self.budget_note.value = concat(CSS, tag("span", exc, class_="gb-bad"))
        else:
            said = [currency] if budget is not None else [currency, "empty: no budget"]
            self.budget_note.value = esc(" · ".join(part for part in said if part))

    def _scorer_changed(self) -> None:
        self.scorer_path.disabled = self.scorer.value not in (*PATH_KINDS, *OPTIONAL_PATH)
        optional = self.scorer.value in OPTIONAL_PATH
        self.scorer_path.placeholder = "optional path" if optional else "path, e.g. decision"

    def _inputs_for(self, job: str) -> list[Any]:
        if job not in self._given_inputs:
            if job not in EXAMPLE_INPUTS:
                raise ValueError(f"no inputs for job {job!r}: pass inputs={{{job!r}: [...]}} to the panel")
            self._given_inputs[job] = load_inputs(EXAMPLE_INPUTS[job])
        return self._given_inputs[job]

    # ---------------------------------------------------------------------------------------------------- reads

    def selected_inputs(self) -> list[Any]:
        """The inputs the controls select: all of the job's, or the first n."""
        values = self._inputs_for(self.job.value)
        return list(values if self.all_inputs.value else values[: self.n_inputs.value])

    def selected_budget(self) -> float | None:
        """The budget in the box (None when it is empty); anything but a number > 0 raises ValueError."""
        return _budget(self.budget.value)

    def selected_candidates(self) -> list[str]:
        """The selected entries that can be called."""
        return [n for n in self.candidates.value if self.catalog[n].callable_reason() is None]

    def selected_scorer_spec(self) -> str:
        """The scorer the controls name, as a spec (``none``, ``job``, ``field_equals:decision``, ...)."""
        return _scorer_spec(self.scorer.value, self.scorer_path.value.strip())

    def selected_scorer(self) -> Any:
        """The scorer the controls name (None for none); a bad path raises ValueError."""
        return resolve_scorer(self.selected_scorer_spec(), self.specs[self.job.value])

    def spec(self) -> RaceSpec:
        """The race the controls describe; a setting that cannot work raises, saying why."""
        chosen = self.selected_candidates()
        if not chosen:
            raise ValueError("no candidate selected: pick at least one callable entry")
        reference = self.catalog.picks.get(self.grade.value)
        if self.to_verdict.value and reference is not None and reference not in chosen:
            raise ValueError(
                f"a race to a verdict pairs each run with a run of the reference entry {reference}: select it too"
            )
        self.selected_scorer()  # a bad scorer path is this form's to say
        judges = tuple(self.judges.value)
        if not judges:
            raise ValueError("no judge selected: pick at least one entry to judge")
        return RaceSpec(
            grade=self.grade.value,
            candidates=tuple(chosen),
            runs=self.verdict_design.value if self.to_verdict.value else self.runs.value,
            max_runs=self.max_runs.value if self.to_verdict.value else None,
            budget=self.selected_budget(),
            rubric=self.rubric.value,
            scorer=self.selected_scorer_spec(),
            salt=self.salt.value,
            judges=None if judges == (self.catalog.ceiling_name,) else judges,  # the ceiling alone: the default judge
            controls=self.controls.value,
            judge_batch=self.judge_batch.value,
        )

    def build_benchmark(self) -> Benchmark:
        """The `Benchmark` the controls describe (what Run races); a setting that cannot work raises, saying why."""
        spec, values = self.spec(), self.selected_inputs()
        bench = Benchmark(
            self.factories[self.job.value], catalog=self.catalog, spec=spec, cache=self.cache, progress=False
        )
        return bench.set_inputs(values)


def _default_grade(catalog: Catalog, declared: str) -> str:
    """The grade a job declares, when the catalog pins an entry for it; else the catalog's first pinned grade."""
    if declared in catalog.picks and declared in catalog.grades:
        return declared
    return next((g for g in catalog.grades if g in catalog.picks), catalog.grades[0])


def _scorer_options(job: JobSpec) -> list[tuple[str, str]]:
    """The scorer dropdown's choices for a job: none, the job's own when it has one, then every ready kind."""
    own = [(f"the job's own: {getattr(job.scorer, 'name', job.scorer)}", JOB_SCORER)] if job.scorer is not None else []
    paths = [(f"{kind}(path)", kind) for kind in PATH_KINDS]
    return [("none", NO_SCORER), *own, *paths, *((kind, kind) for kind in OPTIONAL_PATH)]


def _scorer_spec(kind: str, path: str) -> str:
    """A scorer kind and the path typed beside it, as a spec (``none``, ``job``, ``field_equals:decision``, ...)."""
    if kind in (NO_SCORER, JOB_SCORER):
        return kind
    return f"{kind}:{path}" if path or kind in PATH_KINDS else kind


def _budget(text: str) -> float | None:
    """A budget typed in a box (None when it is empty); anything but a number > 0 raises ValueError."""
    if not text.strip():
        return None
    try:
        value: Any = float(text)
    except ValueError:
        value = text.strip()  # the spec's check says what is wrong with it
    return RaceSpec(budget=value).budget
