"""`Benchmark`: the reference run, the race across the grade, the blind judge, the scorer, the report.

A benchmark is setup (the job, the catalog, the grade, inputs, candidates, rubric, scorer) plus three ways to spend
on it, all through one race engine (`gradebench._race`): `Benchmark.run` (the reference runs, then the race),
`rejudge_report` (the judge alone on stored runs) and `judge_noise_report` (more judgements of stored runs).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Literal, TypeVar

import polars as pl

from ._budget import Budget, one_currency
from ._cache import CallCache
from ._callpath import NotCached
from ._catalog import Catalog, Entry
from ._estimate import Estimate, estimate, run_costs
from ._job import JobSpec
from ._judge import JudgeSetup, judge_run
from ._keys import RunKey, benchmark_id
from ._meta import ReportMeta
from ._race import CandidateRace, RaceEvent, RaceInput, fan_out, lane_width, race_to_verdict
from ._records import Run
from ._rejudge import judge_noise_report, rejudge_report
from ._report import BenchmarkReport
from ._session import Session, mounted, run_sync
from ._stats import DEFAULT_MARGIN
from ._version import __version__
from ._vocab import Role

__all__ = ["Benchmark", "RaceEvent", "judge_noise_report", "rejudge_report"]

log = logging.getLogger("gradebench")

T = TypeVar("T")


class Benchmark:
    """Race a job across the entries of its grade and judge every run blind against the reference run.

    ``factory`` builds a fresh job per run: a `Job` subclass, a function returning a job, or a plain
    ``async def job(input, seat)``.
    """

    REPORT = "gradebench.report"
    """Key of the report in ``bench.metadata``."""

    def __init__(
        self,
        factory: Callable[..., Any],
        *,
        runs: int | Literal["auto"] = 3,
        catalog: Catalog,
        grade: str | None = None,
        salt: str = "",
        cache: CallCache | str | os.PathLike[str] | None = None,
        concurrency: int | None = None,
        judge: str | None = None,
        also: Iterable[str] = (),
        margin: float = DEFAULT_MARGIN,
        budget: float | None = None,
        max_runs: int | None = None,
        progress: bool = True,
    ):
        """``grade`` defaults to the job's declared grade. ``also`` names other grades (e.g. ``["small"]``) whose
        entries race too, against the same reference: does the job need its grade at all? ``margin`` is the
        non-inferiority margin (points of 10) behind each entry's verdict.

        ``runs="auto"`` races to a verdict (`gradebench._adaptive`): waves of paired runs until each entry's verdict
        is settled, or it has made ``max_runs`` runs (default: 4 per input). ``budget`` caps what the race may spend
        now, in the catalog's currency (`gradebench._budget`): no run starts that might not fit."""
        if runs != "auto" and (not isinstance(runs, int) or isinstance(runs, bool) or runs < 1):
            raise ValueError(f"runs must be an integer >= 1 or 'auto', got {runs!r}")
        if max_runs is not None and (not isinstance(max_runs, int) or max_runs < 1):
            raise ValueError(f"max_runs must be an integer >= 1, got {max_runs!r}")
        if budget is not None and not (isinstance(budget, int | float) and budget > 0):
            raise ValueError(f"budget must be a number > 0 (in the catalog's currency), got {budget!r}")
        self.job = JobSpec(factory)
        self.runs = runs
        self.catalog = catalog
        grade = grade or self.job.grade
        if not grade:
            raise ValueError(f"no grade: pass grade=... or declare the job's grade (job {self.job.name!r})")
        catalog.of_grade(grade)  # validates the grade
        self.grade = grade
        self.also = [g for g in also if g != grade]
        for other in self.also:
            catalog.of_grade(other)
        if not margin >= 0:
            raise ValueError(f"margin must be >= 0 (points of 10), got {margin!r}")
        self.margin = float(margin)
        self.budget = None if budget is None else float(budget)
        self.max_runs = max_runs
        self.salt = salt
        self.cache = cache if isinstance(cache, CallCache) else CallCache(cache)
        self.concurrency = concurrency or catalog.concurrency
        self.judge_entry = catalog[judge] if judge else catalog.ceiling()
        self.progress = progress
        self.rubric = self.job.rubric
        self.scorer = self.job.scorer
        self.judge_swap = False
        self.judge_reasoning = False
        self._inputs: list[RaceInput] = []
        grades = [grade, *self.also]
        self._candidates: list[Entry] = [catalog[n] for g in grades for n in self.candidates(catalog, g)]
        self._skipped: dict[str, str] = {n: why for g in grades for n, why in catalog.skipped(g).items()}
        self._report: BenchmarkReport | None = None
        self._listeners: list[Callable[[RaceEvent], None]] = []
        self._stops: dict[str, str] = {}
        self.metadata: dict[str, Any] = {}
        self._transports = mounted()  # the in-process endpoints as they are now (see gradebench.sim, .testing)

    def __repr__(self) -> str:
        return (
            f"Benchmark({self.job.name!r}, grade={self.grade!r}, runs={self.runs}, inputs={len(self._inputs)}, "
            f"candidates={[e.name for e in self._candidates]})"
        )

    # ------------------------------------------------------------------------------------------------------- setup

    @property
    def entries(self) -> list[str]:
        """The entries this benchmark will race (after `set_candidates`; uncallable ones are left out)."""
        return [e.name for e in self._candidates]

    @property
    def inputs(self) -> dict[str, Any]:
        """The inputs by id, in order."""
        return {x.id: x.value for x in self._inputs}

    @property
    def most_runs(self) -> int:
        """The most candidate runs an entry gets: ``runs`` × inputs, or ``max_runs`` racing to a verdict."""
        if self.runs == "auto":
            return self.max_runs or 4 * len(self._inputs)
        return int(self.runs) * len(self._inputs)

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
        return dict(self._skipped)

    @staticmethod
    def candidates(catalog: Catalog, grade: str) -> list[str]:
        """Names of the callable entries of a grade: the default candidates."""
        return [e.name for e in catalog.candidates(grade)]

    def set_input(self, value: Any) -> Benchmark:
        """The one input of the job."""
        return self.set_inputs([value])

    def set_inputs(self, values: Sequence[Any] | pl.DataFrame) -> Benchmark:
        """Several inputs, one race each: a list, or a polars DataFrame (one input per row, as a dict).

        An input's id is its ``id`` field when it has one, else a hash of its content; ids must be unique.
        """
        rows = values.to_dicts() if isinstance(values, pl.DataFrame) else list(values)
        self._inputs = RaceInput.parse(rows)
        return self

    def set_candidates(self, candidates: Iterable[str | Entry]) -> Benchmark:
        """Race these entries (names or `Entry` objects, e.g. ``catalog.candidates(grade)``) instead of every callable
        entry of the grade. Uncallable ones are skipped and reported."""
        entries = self.catalog.resolve(candidates)
        if not entries:
            raise ValueError("candidates must not be empty")
        self._candidates = [e for e in entries if e.callable_reason() is None]
        self._skipped = {e.name: r for e in entries if (r := e.callable_reason()) is not None}
        for name, why in self._skipped.items():
            log.warning("skipping %s: %s", name, why)
        return self

    def set_rubric(self, text: str) -> Benchmark:
        """What a good answer does for this job, beside the task itself (the judge reads it with the fixed rubric)."""
        self.rubric = text
        return self

    def set_judge_swap(self, on: bool = True) -> Benchmark:
        """The label-bias check: judge every run twice, the two transcripts in swapped order under neutral labels;
        the verdict is the mean, and ``swap_gap`` says how far the two orders disagreed."""
        self.judge_swap = bool(on)
        return self

    def set_judge_reasoning(self, on: bool = True) -> Benchmark:
        """Show the judge the models' reasoning where the providers returned it (``reasoning_content``, ``reasoning``,
        ``reasoning_details``). Off by default: the judge grades what the job did, not how the model thought."""
        self.judge_reasoning = bool(on)
        return self

    def set_scorer(self, scorer: Callable[[Any, Any], float | None] | None) -> Benchmark:
        """A score in code, 0..1 or None, of each candidate output against the reference output."""
        if scorer is not None and not callable(scorer):
            raise TypeError(f"scorer must be callable, got {scorer!r}")
        self.scorer = scorer
        return self

    @property
    def benchmark_id(self) -> str:
        return benchmark_id(self.job.name, self.grade, self.salt, self.catalog.pick(self.grade).name)

    # --------------------------------------------------------------------------------------------------------- run

    def run_sync(self) -> Any:
        """`run` for plain scripts and for notebook cells (inside a running loop it runs on a worker thread)."""
        return run_sync(self.run)

    async def run(self) -> Any:
        """Run the reference, race the candidates, judge each run; return the reference's output.

        With several inputs, the reference outputs come back as a list in input order. When a reference run fails,
        the table is logged and its own exception is raised.
        """
        reference_entry = self._check_ready()
        meta = self.meta()
        setup = JudgeSetup.from_meta(meta, self.catalog)
        budget = Budget(self.budget, self._currency()) if self.budget is not None else None
        runs: list[Run] = []
        errors: dict[str, BaseException] = {}
        self._stops = {}
        async with Session(self.catalog, self.cache, self.concurrency, self._transports) as session:
            references = await self._references(session, reference_entry, errors, budget)
            runs.extend(references)
            failed = [r for r in references if not r.ok]
            if failed or len(references) < len(self._inputs):
                self._finish(runs, meta.replace(stopped="budget") if not failed else meta)
                if failed:
                    raise errors[failed[0].run_id]
                return [r.output for r in references]
            by_input = {r.input_id: r for r in references}
            race = CandidateRace(
                session=session,
                setup=setup,
                references=by_input,
                run_once=lambda entry, item, repeat: self._one_run(session, entry, item, "candidate", repeat, errors),
                emit=self._emit,
                scorer=self.scorer,
                entries=self._candidates,
                inputs=self.inputs,
                concurrency=self.concurrency,
                budget=budget,
                desc=f"{self.job.name} race",
                progress=self.progress,
            )
            self._stops = race.stops  # the same dict: `stops` follows the race as entries stop
            try:
                if self.runs == "auto":  # waves of paired units until every verdict is settled (`_adaptive`)
                    units, stops = await race_to_verdict(
                        race,
                        self._inputs,
                        reference=reference_entry.name,
                        margin=self.margin,
                        max_runs=self.most_runs,
                        seed=f"{self.salt}:{self.benchmark_id}",
                    )
                    meta = meta.replace(
                        design="auto", runs_per_entry=None, max_runs=self.most_runs, units=units, stops=stops
                    )
                else:
                    plan = [(e, x, k) for x in self._inputs for e in self._candidates for k in range(int(self.runs))]
                    await race.run(plan)
            except asyncio.CancelledError:
                # Stopped: what finished is in the cache; the report holds the runs judged so far.
                self._finish([*runs, *race.in_plan_order(self._inputs)], meta.replace(stopped="cancelled"))
                raise
            finally:
                race.close()
            runs.extend(race.landed)
        if budget is not None and budget.stopped:
            meta = meta.replace(stopped="budget", stops={**meta.stops, **race.stops})
        self._finish(runs, meta)
        outputs = [r.output for r in references]
        return outputs[0] if len(outputs) == 1 else outputs

    async def _references(
        self, session: Session, entry: Entry, errors: dict[str, BaseException], budget: Budget | None
    ) -> list[Run]:
        """The reference run of every input. Under a budget the first runs alone, and the rest reserve what the
        dearest one so far cost (no estimate exists before a reference has run)."""

        async def one(item: RaceInput) -> Run | None:
            held = budget.reservation("(reference)", 0.0) if budget is not None else 0.0
            if budget is not None and not await budget.admit(held):
                return None
            run = await self._one_run(session, entry, item, "reference", 0, errors)
            if budget is not None:
                budget.settle("(reference)", held, run.spent_now)
            self._emit(RaceEvent(kind="reference", run=run, planned=len(self._inputs)))
            return run

        width = lane_width(self.concurrency, entry.max_concurrency)
        first = await fan_out(self._inputs[:1], one, width=1) if budget is not None else []
        rest = await fan_out(self._inputs[len(first) :], one, width=width)
        return [r for r in [*first, *rest] if r is not None]

    def _check_ready(self) -> Entry:
        if not self._inputs:
            raise ValueError("no input: call set_input(...) or set_inputs([...]) first")
        reference_entry = self.catalog.pick(self.grade)
        reference_entry.api_key()  # fail before any call when the reference cannot be called
        self.judge_entry.api_key()
        if self.budget is not None:
            self._currency()
        return reference_entry

    def _currency(self) -> str:
        """The one currency of the entries a race spends on (`one_currency`)."""
        return one_currency([self.catalog.pick(self.grade), self.judge_entry, *self._candidates])

    # ---------------------------------------------------------------------------------------------------- estimate

    async def estimate(self) -> Estimate:
        """What the race as configured will cost before any candidate runs: calls, tokens and cost (the candidates
        and the judge apart) and wall time, per entry and in all (`gradebench._estimate`).

        The reference runs come first (the estimate is built on them; cached ones cost nothing, and `run` reuses
        them from the cache). Every planned run is replayed against the cache alone: the ones it holds whole are free.
        A race to a verdict is estimated at its most: ``max_runs`` runs per entry.
        """
        reference_entry, setup = self._check_ready(), JudgeSetup.from_meta(self.meta(), self.catalog)
        errors: dict[str, BaseException] = {}
        async with Session(self.catalog, self.cache, self.concurrency, self._transports) as session:
            by_input = {r.input_id: r for r in await self._references(session, reference_entry, errors, None)}
        if failed := [r for r in by_input.values() if not r.ok]:
            raise errors[failed[0].run_id]
        repeats = max(1, round(self.most_runs / len(self._inputs)))
        plan = [(e, x, k) for x in self._inputs for e in self._candidates for k in range(repeats)]

        async def replay_run(replay: Session, planned: tuple[Entry, RaceInput, int]) -> None:
            entry, item, repeat = planned
            run = await self._one_run(replay, entry, item, "candidate", repeat, {})
            await judge_run(replay, run, by_input[item.id], item.value, setup)

        cached = await self._held_in_cache(plan, replay_run)
        costs = run_costs(by_input, self.inputs, self._candidates, setup)
        planned = [(e, x.id) for e, x, _ in plan]
        return estimate(planned, cached, costs, setup=setup, concurrency=self.concurrency, currency=self._currency())

    async def uncached_references(self) -> int:
        """How many reference runs the cache does not hold whole: what `estimate` (and `run`) would send before
        anything else. 0 means an estimate is free. Nothing is sent, nothing spent."""
        reference_entry = self._check_ready()

        async def replay_reference(replay: Session, item: RaceInput) -> None:
            await self._one_run(replay, reference_entry, item, "reference", 0, {})  # a failed run held counts

        return sum(not held for held in await self._held_in_cache(self._inputs, replay_reference))

    async def _held_in_cache(self, items: Sequence[T], replay: Callable[[Session, T], Awaitable[Any]]) -> list[bool]:
        """For each item, whether ``replay(session, item)`` completes on a session that answers from the cache alone
        (nothing is sent: a call the cache lacks raises `NotCached`)."""
        async with Session(self.catalog, self.cache, self.concurrency, self._transports, cache_only=True) as session:

            async def held(item: T) -> bool:
                try:
                    await replay(session, item)
                except NotCached:
                    return False
                return True

            return await fan_out(items, held, width=lane_width(self.concurrency))

    def estimate_sync(self) -> Estimate:
        """`estimate` for plain scripts and notebook cells."""
        return run_sync(self.estimate)

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

    async def _one_run(
        self, session: Session, entry: Entry, item: RaceInput, role: str, repeat: int, errors: dict[str, BaseException]
    ) -> Run:
        key = RunKey(
            benchmark_id=self.benchmark_id,
            user_salt=self.salt,
            input_id=item.id,
            role=Role(role),
            entry=entry.name,
            repeat=repeat,
        )
        run, error = await self.job.run_once(session, entry, key, item.value)
        if error is not None:
            errors[key.run_id] = error
        return run

    def _finish(self, runs: list[Run], meta: ReportMeta) -> None:
        self._report = BenchmarkReport(runs, meta)
        self.metadata[Benchmark.REPORT] = self._report
        log.info("benchmark %s\n%s", self.benchmark_id, self._report.table())

    def meta(self) -> ReportMeta:
        """What a race of this benchmark is measured under, as its report will carry it."""
        scorer = getattr(self.scorer, "name", getattr(self.scorer, "__name__", None)) if self.scorer else None
        return ReportMeta(
            benchmark_id=self.benchmark_id,
            job=self.job.name,
            instructions=self.job.instructions,
            grade=self.grade,
            also=list(self.also),
            margin=self.margin,
            runs_per_entry=self.runs if isinstance(self.runs, int) else None,
            design="auto" if self.runs == "auto" else "fixed",
            max_runs=self.max_runs,
            budget=self.budget,
            reference_entry=self.catalog.pick(self.grade).name,
            judge_entry=self.judge_entry.name,
            judge_params=dict(self.catalog.judge_params),
            judge_swap=self.judge_swap,
            judge_reasoning=self.judge_reasoning,
            rubric=self.rubric,
            scorer=scorer,
            salt=self.salt,
            candidates=[e.name for e in self._candidates],
            skipped=dict(self._skipped),
            inputs={x.id: x.value for x in self._inputs},
            gradebench_version=__version__,
        )

    # ------------------------------------------------------------------------------------------------------ report

    def report(self) -> BenchmarkReport:
        """The measurements of the last `run` (or `rejudge`)."""
        if self._report is None:
            raise RuntimeError("no report yet: await bench.run() first")
        return self._report

    async def rejudge(self, rubric: str | None = None, judge: str | None = None) -> BenchmarkReport:
        """Judge the cached runs again, with another rubric or judge; no candidate is called again."""
        report = await rejudge_report(
            self.report(),
            self.catalog,
            rubric=rubric,
            judge=judge,
            cache=self.cache,
            scorer=self.scorer,
            concurrency=self.concurrency,
            progress=self.progress,
        )
        if rubric is not None:
            self.rubric = rubric
        self._report = report
        self.metadata[Benchmark.REPORT] = report
        log.info("rejudged %s\n%s", self.benchmark_id, report.table())
        return report

    def rejudge_sync(self, rubric: str | None = None, judge: str | None = None) -> BenchmarkReport:
        """`rejudge` for plain scripts and notebook cells."""
        return run_sync(lambda: self.rejudge(rubric=rubric, judge=judge))

    async def judge_noise(self, k: int = 5, sample: int | Sequence[str] | None = None) -> BenchmarkReport:
        """The judge-noise floor: judge cached runs ``k`` more times with distinct salts (no candidate runs again).

        ``sample``: how many candidate runs (a seeded choice), or their run ids; default every judged run. The report
        gains ``report.noise`` (per run: the scores, their spread, whether the score moved) and the floor columns of
        ``report.models`` (``floor_std``, ``floor_range``, ``floor_moved``).
        """
        report = await judge_noise_report(
            self.report(),
            self.catalog,
            k=k,
            sample=sample,
            cache=self.cache,
            concurrency=self.concurrency,
            progress=self.progress,
        )
        self._report = report
        self.metadata[Benchmark.REPORT] = report
        return report
