"""`Benchmark`: the reference run, the race across the grade, the blind judge, the scorer, the report.

A benchmark is setup (the job, the catalog, the grade, inputs, candidates, rubric, scorer) plus three ways to spend
on it, all through one race engine (`gradebench._race`): `Benchmark.run` (the reference runs, then the race),
`rejudge_report` (the judge alone on stored runs) and `judge_noise_report` (more judgements of stored runs).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import polars as pl
from tqdm.auto import tqdm

from . import __version__
from ._adaptive import Unit, VerdictRace
from ._budget import Budget
from ._cache import CallCache, canonical_json
from ._catalog import Catalog, Entry
from ._estimate import Estimate, estimate, run_costs
from ._job import JobSpec
from ._judge import JudgeSetup, Scorer, judge_again, judge_run
from ._race import fan_out, lane_width
from ._records import ReportMeta, Run
from ._redact import scrub
from ._report import BenchmarkReport
from ._seat import NotCached
from ._session import Session, mounted
from ._stats import DEFAULT_MARGIN

__all__ = ["Benchmark", "RaceEvent", "judge_noise_report", "rejudge_report"]

log = logging.getLogger("gradebench")

BUDGET_STOP = "budget: the next runs would not fit"
"""Why an entry got no more runs when the budget ran out (its ``stopped`` in the report)."""


@dataclass(frozen=True, kw_only=True)
class RaceEvent:
    """What a race listener hears (see `Benchmark.subscribe`)."""

    kind: str
    """``reference`` (a reference run landed), ``landed`` (a candidate run finished), ``judged`` (and was judged)."""
    run: Run
    """The run, with its verdict and score once ``judged``."""
    planned: int
    """How many runs of this kind the race plans (inputs for references, candidate runs otherwise)."""


@dataclass(frozen=True, kw_only=True)
class _Input:
    id: str
    value: Any


def _short_hash(*parts: Any) -> str:
    return hashlib.sha256(canonical_json(list(parts)).encode()).hexdigest()[:12]


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
        self._inputs: list[_Input] = []
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
        if not rows:
            raise ValueError("inputs must not be empty")
        inputs = []
        for i, value in enumerate(rows):
            try:  # strict: an input that is not JSON would hash a memory address and miss the cache on every rerun
                json.dumps(value, allow_nan=False)
            except (TypeError, ValueError) as exc:
                ident = value.get("id") if isinstance(value, Mapping) else None
                name = f"input {i}" + (f" (id {ident!r})" if ident is not None else "")
                raise ValueError(f"{name} is not JSON: {exc}; give plain dicts, lists, strings and numbers") from None
            ident = value.get("id") if isinstance(value, Mapping) else None
            inputs.append(_Input(id=str(ident) if ident is not None else _short_hash(value), value=value))
        ids = [x.id for x in inputs]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"input ids must be unique; repeated: {dupes}")
        self._inputs = inputs
        return self

    def set_candidates(self, candidates: Iterable[str | Entry]) -> Benchmark:
        """Race these entries (names or `Entry` objects, e.g. ``catalog.candidates(grade)``) instead of every callable
        entry of the grade. Uncallable ones are skipped and reported."""
        items = list(candidates)
        if not items:
            raise ValueError("candidates must not be empty")
        for item in items:
            if not isinstance(item, str | Entry):
                raise TypeError(f"a candidate is an entry name or an Entry, got {item!r}")
        # KeyError names the unknown entry; an Entry must be this catalog's own
        entries = [self.catalog[item if isinstance(item, str) else item.name] for item in items]
        foreign = [e.name for e, item in zip(entries, items, strict=True) if isinstance(item, Entry) and item != e]
        if foreign:
            raise ValueError(f"candidates {foreign} differ from the catalog's entries of the same name")
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
        return _short_hash("benchmark", self.job.name, self.grade, self.salt, self.catalog.pick(self.grade).name)

    # --------------------------------------------------------------------------------------------------------- run

    def run_sync(self) -> Any:
        """`run` for plain scripts and for notebook cells (inside a running loop it runs on a worker thread)."""
        return _run_sync(self.run)

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
            race = _Race(self, session, setup, by_input, errors, budget)
            try:
                if self.runs == "auto":
                    meta = await self._race_to_verdict(race, meta)
                else:
                    plan = [(e, x, k) for x in self._inputs for e in self._candidates for k in range(int(self.runs))]
                    await race.run(plan)
            except asyncio.CancelledError:
                # Stopped: what finished is in the cache; the report holds the runs judged so far.
                self._finish([*runs, *self._in_plan_order(race.done)], meta.replace(stopped="cancelled"))
                raise
            finally:
                race.close()
            runs.extend(race.landed)
        if budget is not None and budget.stopped:
            meta = meta.replace(stopped="budget", stops={**meta.stops, **race.budget_stops()})
        self._finish(runs, meta)
        outputs = [r.output for r in references]
        return outputs[0] if len(outputs) == 1 else outputs

    def _in_plan_order(self, runs: list[Run]) -> list[Run]:
        """Runs of a stopped race in the order the race planned them (input, entry, repeat)."""
        inputs = {x.id: i for i, x in enumerate(self._inputs)}
        entries = {e.name: i for i, e in enumerate(self._candidates)}
        return sorted(runs, key=lambda r: (inputs.get(r.input_id, 0), entries.get(r.entry, 0), r.repeat))

    async def _race_to_verdict(self, race: _Race, meta: ReportMeta) -> ReportMeta:
        """Waves of paired units until every candidate's verdict is settled (`gradebench._adaptive`)."""
        reference = self.catalog.pick(self.grade).name
        max_runs = self.most_runs
        verdicts = VerdictRace(
            [e.name for e in self._candidates],
            reference,
            [x.id for x in self._inputs],
            margin=self.margin,
            max_runs=max_runs,
            seed=f"{self.salt}:{self.benchmark_id}",
        )
        by_id = {x.id: x for x in self._inputs}
        by_name = {e.name: e for e in self._candidates}

        def note_stops() -> None:  # live, for `stops`: as each entry stops, not when the race ends
            self._stops.update({name: why for name, why in verdicts.stops().items() if why})

        while not verdicts.done:
            wave = verdicts.next_wave()
            note_stops()
            if not wave:
                break
            landed = await race.run([(by_name[name], by_id[u.input_id], u.repeat) for name, u in wave])
            scores = {(r.entry, Unit(r.input_id, r.repeat)): _score(r) for r in landed if r is not None}
            verdicts.land(scores)
            spent = race.budget is not None and race.budget.stopped
            if spent:
                verdicts.stop_all(BUDGET_STOP)
            note_stops()
            if spent:
                break
        return meta.replace(
            design="auto",
            runs_per_entry=None,
            max_runs=max_runs,
            units=[(u.input_id, u.repeat) for u in verdicts.units],
            stops=verdicts.stops(),
        )

    async def _references(
        self, session: Session, entry: Entry, errors: dict[str, BaseException], budget: Budget | None
    ) -> list[Run]:
        """The reference run of every input. Under a budget the first runs alone, and the rest reserve what the
        dearest one so far cost (no estimate exists before a reference has run)."""

        async def one(item: _Input) -> Run | None:
            held = budget.reservation("(reference)", 0.0) if budget is not None else 0.0
            if budget is not None and not budget.reserve(held):
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
        """The one currency of the entries a race spends on (a budget in several currencies would mean nothing)."""
        used = {e.name: e.currency for e in [self.catalog.pick(self.grade), self.judge_entry, *self._candidates]}
        currencies = sorted(set(used.values()))
        if len(currencies) > 1:
            by = ", ".join(f"{name} ({cur})" for name, cur in used.items())
            raise ValueError(f"a budget needs one currency; these entries are priced in {currencies}: {by}")
        return currencies[0]

    # ---------------------------------------------------------------------------------------------------- estimate

    async def estimate(self) -> Estimate:
        """What the race as configured will cost before any candidate runs: calls, tokens and cost (the candidates
        and the judge apart) and wall time, per entry and in all (`gradebench._estimate`).

        The reference runs come first (the estimate is built on them; cached ones cost nothing, and `run` reuses
        them from the cache). Every planned run is replayed against the cache alone: the ones it holds whole are free.
        A race to a verdict is estimated at its most: ``max_runs`` runs per entry.
        """
        reference_entry = self._check_ready()
        meta = self.meta()
        setup = JudgeSetup.from_meta(meta, self.catalog)
        errors: dict[str, BaseException] = {}
        async with Session(self.catalog, self.cache, self.concurrency, self._transports) as session:
            references = await self._references(session, reference_entry, errors, None)
        failed = [r for r in references if not r.ok]
        if failed:
            raise errors[failed[0].run_id]
        by_input = {r.input_id: r for r in references}
        repeats = max(1, round(self.most_runs / len(self._inputs)))
        plan = [(e, x, k) for x in self._inputs for e in self._candidates for k in range(repeats)]
        async with Session(self.catalog, self.cache, self.concurrency, self._transports, cache_only=True) as replay:

            async def held(planned: tuple[Entry, _Input, int]) -> bool:
                entry, item, repeat = planned
                try:
                    run = await self._one_run(replay, entry, item, "candidate", repeat, {})
                    await judge_run(replay, run, by_input[item.id], item.value, setup)
                except NotCached:
                    return False
                return True

            cached = await fan_out(plan, held, width=lane_width(self.concurrency))
        costs = run_costs(by_input, {x.id: x.value for x in self._inputs}, self._candidates, setup)
        return estimate(
            [(e, x.id) for e, x, _ in plan],
            cached,
            costs,
            setup=setup,
            concurrency=self.concurrency,
            currency=self._currency(),
        )

    async def uncached_references(self) -> int:
        """How many reference runs the cache does not hold whole: what `estimate` (and `run`) would send before
        anything else. 0 means an estimate is free. Found by replaying each reference run against the cache alone:
        nothing is sent, nothing spent."""
        reference_entry = self._check_ready()
        async with Session(self.catalog, self.cache, self.concurrency, self._transports, cache_only=True) as replay:

            async def missing(item: _Input) -> bool:
                try:
                    await self._one_run(replay, reference_entry, item, "reference", 0, {})
                except NotCached:
                    return True
                return False  # answered from the cache (even when the run failed on what it was served)

            found = await fan_out(self._inputs, missing, width=lane_width(self.concurrency))
        return sum(found)

    def estimate_sync(self) -> Estimate:
        """`estimate` for plain scripts and notebook cells."""
        return _run_sync(self.estimate)

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

    def _run_id(self, entry: Entry, item: _Input, role: str, repeat: int) -> str:
        return _short_hash("run", self.benchmark_id, item.id, role, entry.name, repeat)

    async def _one_run(
        self, session: Session, entry: Entry, item: _Input, role: str, repeat: int, errors: dict[str, BaseException]
    ) -> Run:
        run_id = self._run_id(entry, item, role, repeat)
        seat = session.seat(
            entry,
            run_id=run_id,
            role=role,
            benchmark_id=self.benchmark_id,
            salt={"user": self.salt, "input": item.id, "role": role, "repeat": repeat},
            job_params=self.job.params,
            fixed_params=self.job.fixed_params,
            max_steps=self.job.max_steps,
        )
        made: dict[str, Any] = dict(
            benchmark_id=self.benchmark_id,
            job=self.job.name,
            input_id=item.id,
            run_id=run_id,
            role=role,
            entry=entry.name,
            model=entry.model,
            grade=entry.grade,
            simulated=entry.simulated,
            repeat=repeat,
            currency=entry.currency,
        )
        started = time.perf_counter()
        limit = asyncio.timeout(self.job.timeout_s)
        try:
            async with limit:
                output = await self.job.build().run(item.value, seat)
            json.dumps(output)
        except Exception as exc:  # a failed run is a row that says why
            if isinstance(exc, TimeoutError) and limit.expired():
                exc = TimeoutError(f"{entry.name}: the run took longer than the job's timeout_s={self.job.timeout_s:g}")
            elif isinstance(exc, TypeError) and "JSON serializable" in str(exc):
                exc = TypeError(f"{self.job.name}: the job's output is not JSON-serialisable: {exc}")
            errors[run_id] = exc
            error = scrub(f"{type(exc).__name__}: {exc}")
            wall = time.perf_counter() - started
            return Run(**made, ok=False, error=error, calls=list(seat.calls), wall_s=wall)
        return Run(**made, ok=True, output=output, calls=list(seat.calls), wall_s=time.perf_counter() - started)

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
        return _run_sync(lambda: self.rejudge(rubric=rubric, judge=judge))

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


class _Race:
    """The candidate runs of one race: each run is started (under the budget), landed, judged and reported on."""

    def __init__(
        self,
        bench: Benchmark,
        session: Session,
        setup: JudgeSetup,
        references: dict[str, Run],
        errors: dict[str, BaseException],
        budget: Budget | None,
    ):
        self.bench, self.session, self.setup, self.references, self.errors = bench, session, setup, references, errors
        self.budget = budget
        self.done: list[Run] = []
        """Every run judged so far, in the order they landed."""
        self.landed: list[Run] = []
        """The runs of every finished `run` call, in plan order: the rows of the report."""
        self._costs = run_costs(references, bench.inputs, bench._candidates, setup) if budget is not None else {}
        self._counts = {"landed": 0, "judged": 0, "failed": 0}
        self._bar: Any = None
        self._refused: set[str] = set()

    async def run(self, plan: Sequence[tuple[Entry, _Input, int]]) -> list[Run | None]:
        """Race ``plan`` (entry, input, repeat): the runs in plan order; None for one the budget did not start."""
        if self._bar is None:
            self._bar = tqdm(desc=f"{self.bench.job.name} race", unit="run", disable=not self.bench.progress)
        self._bar.total = (self._bar.total or 0) + len(plan)
        bench = self.bench
        by_name = {e.name: e for e in bench._candidates}
        results = await fan_out(
            plan,
            self._one,
            lane=lambda planned: planned[0].name,
            width=lambda name: lane_width(bench.concurrency, by_name[str(name)].max_concurrency),
        )
        self.landed.extend(r for r in results if r is not None)
        return results

    async def _one(self, planned: tuple[Entry, _Input, int]) -> Run | None:
        entry, item, repeat = planned
        bench, budget, total = self.bench, self.budget, self._bar.total
        held = 0.0
        if budget is not None:
            held = budget.reservation(entry.name, self._costs[(entry.name, item.id)].total)
            if budget.stopped or not budget.reserve(held):
                self._refused.add(entry.name)
                bench._stops.setdefault(entry.name, BUDGET_STOP)
                return None
        run = await bench._one_run(self.session, entry, item, "candidate", repeat, self.errors)
        self._counts["landed"] += 1
        self._counts["failed"] += not run.ok
        self._bar.set_postfix(self._counts, refresh=False)
        bench._emit(RaceEvent(kind="landed", run=run, planned=total))
        run = await judge_run(self.session, run, self.references[item.id], item.value, self.setup, bench.scorer)
        if budget is not None:
            budget.settle(entry.name, held, _spent(run))
        self._counts["judged"] += 1
        self._bar.set_postfix(self._counts, refresh=False)
        self._bar.update(1)
        bench._emit(RaceEvent(kind="judged", run=run, planned=total))
        self.done.append(run)
        return run

    def budget_stops(self) -> dict[str, str]:
        """Entries some of whose runs the budget did not start."""
        return dict.fromkeys(sorted(self._refused), BUDGET_STOP)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _spent(run: Run) -> float | None:
    """What a run and its verdict spent now (None when a call's cost is unknown)."""
    own = run.spent_now
    judge = [c.spent_now for c in run.verdict.calls] if run.verdict is not None else []
    if own is None or any(v is None for v in judge):
        return None
    return own + sum(v for v in judge if v is not None)


def _score(run: Run) -> float | None:
    """A run's score for a paired difference: 0 when it failed, None when the judge gave no verdict."""
    if not run.ok:
        return 0.0
    return run.verdict.score if run.verdict is not None else None


# -------------------------------------------------------------------------------------------------- stored reports


def _taken_up(report: BenchmarkReport) -> tuple[dict[str, Run], list[Run]]:
    """A report's runs taken up again: the references by input, and the candidates. None of their model calls is
    made now, so none costs anything now."""
    runs = [replace(r, calls=[replace(c, cache_hit=True) for c in r.calls]) for r in report.to_runs()]
    return {r.input_id: r for r in runs if r.role == "reference"}, [r for r in runs if r.role == "candidate"]


async def _judge_each(
    report: BenchmarkReport,
    catalog: Catalog,
    runs: Sequence[Run],
    work: Callable[[Session, Run], Any],
    *,
    cache: CallCache | str | os.PathLike[str] | None,
    concurrency: int | None,
    progress: bool,
    desc: str,
) -> list[Any]:
    """``work(session, run)`` for each stored run, through the race engine, with a progress bar."""
    store = cache if isinstance(cache, CallCache) else CallCache(cache)
    limit = concurrency or catalog.concurrency
    bar = tqdm(total=len(runs), desc=desc, unit="run", disable=not progress)
    async with Session(catalog, store, limit, mounted()) as session:

        async def one(run: Run) -> Any:
            result = await work(session, run)
            bar.update(1)
            return result

        try:
            return await fan_out(runs, one, width=lane_width(limit))
        finally:
            bar.close()


async def judge_noise_report(
    report: BenchmarkReport,
    catalog: Catalog,
    *,
    k: int = 5,
    sample: int | Sequence[str] | None = None,
    cache: CallCache | str | os.PathLike[str] | None = None,
    concurrency: int | None = None,
    progress: bool = True,
) -> BenchmarkReport:
    """`Benchmark.judge_noise` for any report (e.g. one read back from parquet): that report with its noise floor."""
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    setup = JudgeSetup.from_meta(report.meta, catalog)
    setup.entry.api_key()  # fail before any call when the judge cannot be called
    references, candidates = _taken_up(report)
    judged = [r for r in candidates if r.verdict is not None and r.verdict.score is not None]
    if isinstance(sample, int):
        if sample < 1:
            raise ValueError(f"sample must be >= 1 runs, got {sample}")
        chosen = sorted(judged, key=lambda r: _short_hash("noise-sample", r.run_id))[:sample]
    elif sample is not None:
        wanted = set(sample)
        unknown = wanted - {r.run_id for r in judged}
        if unknown:
            raise ValueError(f"sample names runs that are not judged candidate runs: {sorted(unknown)}")
        chosen = [r for r in judged if r.run_id in wanted]
    else:
        chosen = judged
    inputs = report.meta.inputs

    async def replicas(session: Session, run: Run) -> dict[str, Any]:
        scores = await judge_again(session, run, references[run.input_id], inputs.get(run.input_id), setup, k)
        assert run.verdict is not None
        return {
            "run_id": run.run_id,
            "entry": run.entry,
            "input_id": run.input_id,
            "score": run.verdict.score,
            "replicas": scores,
        }

    rows = await _judge_each(
        report, catalog, chosen, replicas, cache=cache, concurrency=concurrency, progress=progress, desc="judge noise"
    )
    return report.with_noise(rows, k=k)


async def rejudge_report(
    report: BenchmarkReport,
    catalog: Catalog,
    *,
    rubric: str | None = None,
    judge: str | None = None,
    cache: CallCache | str | os.PathLike[str] | None = None,
    scorer: Scorer | None = None,
    concurrency: int | None = None,
    progress: bool = True,
) -> BenchmarkReport:
    """Judge the runs of a report again (e.g. one from `BenchmarkReport.read_parquet`); only the judge is called.

    A ``scorer`` given now scores again; otherwise the scores stand (they do not depend on the judge).
    """
    setup = JudgeSetup.from_meta(report.meta, catalog, rubric=rubric, judge=judge)
    setup.entry.api_key()  # fail before any call when the judge cannot be called
    references, candidates = _taken_up(report)
    inputs = report.meta.inputs

    async def again(session: Session, run: Run) -> Run:
        return await judge_run(session, run, references[run.input_id], inputs.get(run.input_id), setup, scorer)

    rejudged = await _judge_each(
        report, catalog, candidates, again, cache=cache, concurrency=concurrency, progress=progress, desc="rejudge"
    )
    meta = report.meta.replace(rubric=setup.rubric, judge_entry=setup.entry.name, judge_params=dict(setup.params))
    return BenchmarkReport([*references.values(), *rejudged], meta)


def _run_sync(make: Callable[[], Any]) -> Any:
    try:
        asyncio.get_running_loop()
        in_loop = True
    except RuntimeError:
        in_loop = False
    if not in_loop:  # outside the except block: a job's exception must not be chained to "no running event loop"
        return asyncio.run(make())
    # Inside a running loop (a notebook cell): run on a worker thread with a loop of its own.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="gradebench") as pool:
        return pool.submit(lambda: asyncio.run(make())).result()
