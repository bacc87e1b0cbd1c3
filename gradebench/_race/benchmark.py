"""`Benchmark`: a job, a catalog and a race spec, with the three ways to spend on them.

A benchmark holds the `RaceSpec` (given as ``spec=`` or filled by its keywords, changed by `Benchmark.set_spec`), the
job, the catalog, the inputs and the cache. `run` races it (`gradebench._race.race`), `estimate` says what that will
cost first (`gradebench._race.estimate`), and `rejudge` / `judge_noise` judge the stored runs again
(`gradebench._race.rejudge`, as a `JudgeSpec` says): the three stand side by side over one `RacePlan` and one fan-out.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import polars as pl

from .._base.sync import run_sync
from .._calls.cache import CallCache
from .._calls.session import mounted
from .._catalog.catalog import Catalog, Entry
from .._judge.judge import AnyScorer
from .._records.inputs import RaceInput
from .._records.meta import ReportMeta
from .._records.records import Run
from .._records.spec import JudgeSpec, Lineup, RaceSpec, Runs
from .._report.report import BenchmarkReport
from .estimate import Estimate, estimate_race, uncached_references
from .job import JobSpec
from .plan import RacePlan, for_job, resolve_scorer
from .prompt_job import PromptJob
from .race import RaceEvent, run_race
from .rejudge import judge_noise_report, judging_of, rejudge_report
from .setting import changed_spec, keyword_spec, rerun_spec

__all__ = ["Benchmark", "RaceEvent", "judge_noise_report", "rejudge_report"]

log = logging.getLogger("gradebench")

_KEEP: Any = object()
"""`from_report`'s scorer when none is given: the one the report's spec names."""


class Benchmark:
    """Race a job across the entries of its grade and judge every run blind against the reference run.

    ``factory`` builds a fresh job per run: a `Job` subclass, a function returning a job, or a plain
    ``async def job(input, seat)``. The race is a `RaceSpec`: pass one as ``spec``, or the most used of its fields as
    keywords (a keyword left None keeps the spec's value; see `RaceSpec` for every field and its default); change
    any field later with `set_spec`.
    """

    REPORT = "gradebench.report"
    """Key of the report in ``bench.metadata``."""

    def __init__(
        self,
        factory: Callable[..., Any] | PromptJob,
        *,
        catalog: Catalog,
        runs: Runs | None = None,
        grade: str | None = None,
        also: Iterable[str] | None = None,
        candidates: Iterable[str | Entry] | None = None,
        margin: float | None = None,
        budget: float | None = None,
        max_runs: int | None = None,
        judge: str | None = None,
        judges: Iterable[str] | None = None,
        judge_batch: bool | None = None,
        salt: str | None = None,
        concurrency: int | None = None,
        controls: int | None = None,
        spec: RaceSpec | None = None,
        cache: CallCache | str | os.PathLike[str] | None = None,
        progress: bool = True,
    ):
        """``grade`` defaults to the job's declared grade, ``candidates`` to every callable entry of the grade; ``also``
        names other grades (e.g. ``["small"]``) whose entries race too, against the same reference. ``runs="gsd"``
        (or ``"auto"``) races to a verdict, with at most ``max_runs`` runs an entry; ``budget`` caps what the race may
        spend now. ``judges`` (entry names) is a panel: every run is judged by each, the score is their mean (see
        `RaceSpec`); ``controls`` negative controls are judged blind among the runs (default 3, 0: none; see
        `RaceSpec.controls`). ``judge_batch=True`` sends the verdicts through the judge provider's Batch API, at its
        batch price."""
        given: dict[str, Any] = dict(runs=runs, grade=grade, also=also, candidates=candidates, margin=margin)
        given.update(budget=budget, max_runs=max_runs, judge=judge, judges=judges, judge_batch=judge_batch)
        spec = keyword_spec(spec, catalog, dict(given, salt=salt, concurrency=concurrency, controls=controls))
        self.job, self.catalog, self.progress = JobSpec(factory), catalog, progress
        self.cache = cache if isinstance(cache, CallCache) else CallCache(cache)
        self.metadata: dict[str, Any] = {}
        self.scorer: AnyScorer | None = None
        """The scorer in code, or None."""
        self.spec = spec
        """The race as it will be raced: every option, the job's grade, rubric and scorer filled in."""
        self.lineup = self._adopt(spec, resolve_scorer(spec.scorer, self.job))
        """Who races: the reference, the judge, the candidates and the entries skipped."""
        self._inputs: list[RaceInput] = []
        self._report: BenchmarkReport | None = None
        self._listeners: list[Callable[[RaceEvent], None]] = []
        self._stops: dict[str, str] = {}
        self._transports = mounted()  # the in-process endpoints as they are now (see gradebench.sim, .testing)

    @classmethod
    def from_report(
        cls,
        report: BenchmarkReport,
        catalog: Catalog | None = None,
        *,
        job: Callable[..., Any] | PromptJob | None = None,
        scorer: AnyScorer | None = _KEEP,
        cache: CallCache | str | os.PathLike[str] | None = None,
        progress: bool = True,
    ) -> Benchmark:
        """The benchmark that made ``report`` (its spec and inputs), ready to run again: with the same salt every call
        is a cache hit. The job and the catalog are found again from the spec (a job given as code in a script, a
        catalog built in code: pass ``job=`` or ``catalog=``); a scorer given as code is passed as ``scorer=``."""
        factory, catalog, spec = rerun_spec(report, catalog, job, keep_scorer=scorer is _KEEP)
        made = cls(factory, catalog=catalog, spec=spec, cache=cache, progress=progress)
        if scorer is not _KEEP and scorer is not None:
            made.set_spec(scorer=scorer)
        return made.set_inputs(list(report.meta.inputs.values()))

    def __repr__(self) -> str:
        return (
            f"Benchmark({self.job.name!r}, grade={self.spec.grade!r}, runs={self.spec.runs}, "
            f"inputs={len(self._inputs)}, candidates={self.entries})"
        )

    # ------------------------------------------------------------------------------------------------------- setup

    @property
    def entries(self) -> list[str]:
        """The entries this benchmark will race (uncallable ones are left out)."""
        return [e.name for e in self.lineup.candidates]

    @property
    def judge_entry(self) -> Entry:
        """The entry that judges (a panel's first judge; `judges` has them all)."""
        return self.lineup.judge

    @property
    def judges(self) -> list[Entry]:
        """Every entry that judges: the panel, or the one judge."""
        return list(self.lineup.judges)

    @property
    def inputs(self) -> dict[str, Any]:
        """The inputs by id, in order."""
        return {x.id: x.value for x in self._inputs}

    @property
    def most_runs(self) -> int:
        """The most candidate runs an entry gets: ``runs`` × inputs, or ``max_runs`` racing to a verdict."""
        return self.spec.most_runs(len(self._inputs))

    @property
    def stops(self) -> dict[str, str]:
        """Entries the race under way (or the last one) has stopped giving runs, and why: ``settled: as good after
        24 runs``, ``max_runs: 64 runs made`` (a race to a verdict), ``budget: the next runs would not fit``. Filled
        as each entry stops, so a progress display can say so at once; the report's ``stopped`` column says the same.
        """
        return dict(self._stops)

    @property
    def skipped(self) -> dict[str, str]:
        """Entries left out because they cannot be called, with the reason."""
        return dict(self.lineup.skipped)

    @property
    def benchmark_id(self) -> str:
        return self.plan(check=False).benchmark_id

    @staticmethod
    def candidates(catalog: Catalog, grade: str) -> list[str]:
        """Names of the callable entries of a grade: the default candidates."""
        return [e.name for e in catalog.candidates(grade)]

    def set_input(self, value: Any) -> Benchmark:
        """The one input of the job."""
        return self.set_inputs([value])

    def set_inputs(self, values: Sequence[Any] | pl.DataFrame) -> Benchmark:
        """Several inputs, one race each: a list, or a polars DataFrame (one input per row, as a dict).

        An input's id is its ``id`` field when it has one, else a hash of its content; ids must be unique. An input
        the job refuses (a prompt job's template reads a field it lacks) raises a `ValueError` naming it, before
        anything is sent.
        """
        rows = values.to_dicts() if isinstance(values, pl.DataFrame) else list(values)
        inputs = RaceInput.parse(rows)
        for x in inputs:
            self.job.check_input(x.value, input_id=x.id)
        self._inputs = inputs
        return self

    def set_spec(self, **changes: Any) -> Benchmark:
        """Change fields of the race spec, checked again: e.g. ``salt="fresh"``, ``margin=1.5``, ``rubric=...``,
        ``judge_swap=True``, ``judge_reasoning=True``, ``judge_batch=True`` (see `RaceSpec` for every field).

        ``candidates`` takes entry names or `Entry` objects (e.g. ``catalog.candidates(grade)``): uncallable ones
        are skipped, with a warning in the log. ``scorer`` takes a spec (`RaceSpec.scorer`) or a scorer in code.
        ``judges`` given alone replaces the one ``judge``, and ``judge`` alone a panel."""
        self.lineup = self._adopt(*changed_spec(self.spec, changes, self.catalog, self.job, self.scorer))
        for name, why in self.lineup.skipped.items() if "candidates" in changes else ():
            log.warning("skipping %s: %s", name, why)
        return self

    def _adopt(self, spec: RaceSpec, scorer: AnyScorer | None) -> Lineup:
        """Take ``spec`` and ``scorer`` as the race (the job's grade, rubric and scorer filled in, see `for_job`)."""
        self.spec, self.scorer = for_job(spec, self.job, self.catalog, scorer), scorer
        self.lineup = self.spec.lineup(self.catalog)
        return self.lineup

    def plan(self, *, check: bool = True) -> RacePlan:
        """The race as set up now (``check``: first make sure it can run, see `RacePlan.check`)."""
        made = RacePlan(
            spec=self.spec,
            catalog=self.catalog,
            lineup=self.lineup,
            job=self.job,
            scorer=self.scorer,
            inputs=tuple(self._inputs),
            cache=self.cache,
            transports=self._transports,
            progress=self.progress,
        )
        return made.ready() if check else made

    def meta(self) -> ReportMeta:
        """What a race of this benchmark is measured under, as its report will carry it."""
        return self.plan(check=False).meta()

    # --------------------------------------------------------------------------------------------------------- run

    def run_sync(self) -> Any:
        """`run` for plain scripts and for notebook cells (inside a running loop it runs on a worker thread)."""
        return run_sync(self.run)

    async def run(self) -> Any:
        """Run the reference, race the candidates, judge each run; return the reference's output.

        With several inputs, the reference outputs come back as a list in input order. When a reference run fails,
        the table is logged and its own exception is raised.
        """
        outputs = await run_race(self.plan(), emit=self._emit, stops=self._stops, finish=self._finish)
        return outputs[0] if len(outputs) == 1 else outputs

    async def estimate(self) -> Estimate:
        """What the race as configured will cost before any candidate runs: calls, tokens and cost (the candidates
        and the judge apart) and wall time, per entry and in all (`gradebench._race.estimate`).

        The reference runs come first (the estimate is built on them; cached ones cost nothing, and `run` reuses
        them from the cache). Every planned run is replayed against the cache alone: the ones it holds whole are free.
        A race to a verdict is estimated at its most: ``max_runs`` runs per entry.
        """
        return await estimate_race(self.plan(), finish=self._finish)

    def estimate_sync(self) -> Estimate:
        """`estimate` for plain scripts and notebook cells."""
        return run_sync(self.estimate)

    async def uncached_references(self) -> int:
        """How many reference runs the cache does not hold whole: what `estimate` (and `run`) would send before
        anything else. 0 means an estimate is free. Nothing is sent, nothing spent."""
        return await uncached_references(self.plan())

    def subscribe(self, listener: Callable[[RaceEvent], None]) -> Callable[[], None]:
        """Call ``listener`` with a `RaceEvent` as each reference run lands, each candidate run lands and each is
        judged (in the race's event loop; keep it quick). Returns a function that unsubscribes it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _emit(self, event: RaceEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # a broken listener must not cost the race its results
                log.exception("a race listener raised on a %s event; the race goes on", event.kind)

    def _finish(self, runs: list[Run], meta: ReportMeta) -> None:
        self._show(BenchmarkReport(runs, meta), "benchmark")

    def _show(self, report: BenchmarkReport, what: str) -> BenchmarkReport:
        self._report = report
        self.metadata[Benchmark.REPORT] = report
        if log.isEnabledFor(logging.INFO):  # the table is laid out for the log only when the log will show it
            log.info("%s %s\n%s", what, report.meta.benchmark_id, report.table())
        return report

    # ------------------------------------------------------------------------------------------------------ report

    def report(self) -> BenchmarkReport:
        """The measurements of the last `run` (or `rejudge`)."""
        if self._report is None:
            raise RuntimeError("no report yet: await bench.run() first")
        return self._report

    async def rejudge(self, judging: JudgeSpec | None = None, **old: Any) -> BenchmarkReport:
        """Judge the cached runs again as ``judging`` says: another rubric, judge or panel, the label-bias check, a
        scorer in code (see `JudgeSpec`; a field unset judges as the report's race did, with this benchmark's scorer
        and Batch API setting). No candidate is called again. The rubric and the scorer given become this
        benchmark's. (The keywords ``rubric``, ``judge``, ``judges`` are deprecated: give a `JudgeSpec`.)"""
        judging = judging_of(judging, old, "Benchmark.rejudge", "bench.rejudge(")
        given = {"rubric": judging.rubric, "scorer": judging.scorer}
        judging = judging.replace(
            scorer=self.scorer if judging.scorer is None else judging.scorer,
            batch=self.spec.judge_batch if judging.batch is None else judging.batch,
        )
        report = await rejudge_report(self.report(), self.catalog, judging, **self._engine())
        if any(v is not None for v in given.values()):
            self.set_spec(**{k: v for k, v in given.items() if v is not None})
        return self._show(report, "rejudged")

    def rejudge_sync(self, judging: JudgeSpec | None = None, **old: Any) -> BenchmarkReport:
        """`rejudge` for plain scripts and notebook cells."""
        judging = judging_of(judging, old, "Benchmark.rejudge_sync", "bench.rejudge_sync(")
        return run_sync(lambda: self.rejudge(judging))

    async def judge_noise(self, k: int = 5, sample: int | Sequence[str] | None = None) -> BenchmarkReport:
        """The judge-noise floor: judge cached runs ``k`` more times with distinct salts (no candidate runs again).

        ``sample``: how many candidate runs (a seeded choice), or their run ids; default every judged run. The report
        gains ``report.noise`` (per run: the scores, their spread, whether the score moved) and the floor columns of
        ``report.models`` (``floor_std``, ``floor_range``, ``floor_moved``).
        """
        batch = JudgeSpec(batch=self.spec.judge_batch)
        report = await judge_noise_report(self.report(), self.catalog, batch, k=k, sample=sample, **self._engine())
        self._report = self.metadata[Benchmark.REPORT] = report
        return report

    def _engine(self) -> dict[str, Any]:
        """How judging stored runs again calls the judges from this benchmark: its cache, concurrency and progress."""
        return dict(
            cache=self.cache, concurrency=self.spec.concurrency or self.catalog.concurrency, progress=self.progress
        )
