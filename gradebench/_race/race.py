"""The race: the reference run of every input, then the candidates — ``runs`` each, or waves of paired runs until
every verdict is settled — each run judged as it lands, under the budget, with an event for whoever listens.

`run_race` is what `gradebench.Benchmark.run` does. Runs go through the one fan-out (`gradebench._base.fanout`), lane by
entry; what finished is handed to ``finish`` as a report's runs however the race ends (done, stopped by the budget,
cancelled, or a reference that failed). With a judge that batches (`gradebench._calls.batch.layer`), a run goes on to
its
verdict in a task of its own once it lands, so the candidate runs never wait for a batch.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tqdm.auto import tqdm

from .._base.fanout import fan_out, lane_width
from .._base.vocab import EventKind, Role, Stopped
from .._calls.session import Session
from .._catalog.catalog import Entry
from .._judge.judge import judge_run
from .._records.inputs import RaceInput
from .._records.meta import ReportMeta, utc_stamp
from .._records.records import Run
from .._verdict.evidence import flawed_entries
from .._verdict.gsd import RACES
from .._verdict.racestate import RaceState, Unit
from .budget import Budget, priced_for_budget
from .costs import run_costs
from .plan import RacePlan, RunErrors, reference_failed

__all__ = ["BUDGET_STOP", "CandidateRace", "RaceEvent", "paired_score", "race_to_verdict", "run_race"]

BUDGET_STOP = "budget: the next runs would not fit"
"""Why an entry got no more runs when the budget ran out (its ``stopped`` in the report)."""


@dataclass(frozen=True, kw_only=True)
class RaceEvent:
    """What a race listener hears (see `Benchmark.subscribe`)."""

    kind: EventKind
    """``reference`` (a reference run landed), ``landed`` (a candidate run finished), ``judged`` (and was judged)."""
    run: Run
    """The run, with its verdict and score once ``judged``."""
    planned: int
    """How many runs of this kind the race plans (inputs for references, candidate runs otherwise)."""


Listener = Callable[[RaceEvent], None]
Finish = Callable[[list[Run], ReportMeta], None]
_Planned = tuple[int, Entry, RaceInput, int]
"""A candidate run planned: its place in the race, the entry, the input and the repeat."""


@dataclass(frozen=True, kw_only=True)
class _Landed:
    """A candidate run that landed, with what its verdict needs."""

    run: Run
    item: RaceInput
    entry: Entry
    held: float
    """What it reserved of the budget."""
    planned: int
    """The runs planned when it started (its events' ``planned``)."""


async def run_race(plan: RacePlan, *, emit: Listener, stops: dict[str, str], finish: Finish) -> list[Any]:
    """Race ``plan``: the reference outputs in input order. ``stops`` is filled as entries stop getting runs, and
    ``finish(runs, meta)`` is called once with what the race made, however it ends; when a reference run fails, that
    is after ``finish``, by raising the reference's own exception."""
    spec, meta = plan.spec, plan.meta().replace(started_at=utc_stamp())
    finish = _stamped(finish)
    if spec.budget is not None:
        priced_for_budget([plan.lineup.reference, *plan.lineup.judges, *plan.lineup.candidates])
    budget = Budget(spec.budget, plan.currency()) if spec.budget is not None else None
    errors: RunErrors = {}
    stops.clear()
    async with plan.cache.hold(plan.benchmark_id), plan.session() as session:
        planned = len(plan.inputs)
        landed = lambda run: emit(RaceEvent(kind=EventKind.REFERENCE, run=run, planned=planned))  # noqa: E731
        references = await plan.reference_runs(session, errors, budget=budget, landed=landed)
        failed = [r for r in references if not r.ok]
        if failed or len(references) < planned:
            finish(references, meta if failed else meta.replace(stopped=Stopped.BUDGET))
            if failed:
                raise reference_failed(failed[0], errors[failed[0].run_id])
            return [r.output for r in references]
        race = CandidateRace(plan, session, {r.input_id: r for r in references}, emit=emit, budget=budget, stops=stops)
        controls = plan.controls(session, race.references, race.setup, budget=budget)
        meta = meta.replace(controls=controls.plants)
        judging = asyncio.create_task(controls.run())  # the negative controls, judged beside the candidate runs
        try:
            if spec.design.to_verdict:
                units, entry_stops = await race_to_verdict(race)
                meta = meta.replace(units=units, stops=entry_stops)
            else:
                await race.run(plan.fixed_plan(int(spec.runs)))
            await judging
        except asyncio.CancelledError:
            # Stopped: what finished is in the cache; the report holds the runs (and controls) judged so far.
            judging.cancel()
            await asyncio.gather(judging, return_exceptions=True)
            finish([*references, *race.in_plan_order(), *controls.judged()], meta.replace(stopped=Stopped.CANCELLED))
            raise
        finally:
            judging.cancel()  # a candidate race that raised leaves no control being judged
            race.close()
    if budget is not None and budget.stopped:
        meta = meta.replace(stopped=Stopped.BUDGET, stops={**meta.stops, **race.stops})
    finish([*references, *race.landed, *controls.judged()], meta)
    return [r.output for r in references]


def _stamped(finish: Finish) -> Finish:
    """``finish`` given the meta with the time the race ended."""
    return lambda runs, meta: finish(runs, meta.replace(finished_at=utc_stamp()))


class CandidateRace:
    """The candidate runs of one race: each run is started (under the budget), landed, judged and reported on."""

    def __init__(
        self,
        plan: RacePlan,
        session: Session,
        references: dict[str, Run],
        *,
        emit: Listener,
        budget: Budget | None,
        stops: dict[str, str],
    ):
        self.plan, self.session, self.references, self.budget = plan, session, references, budget
        self.setup = plan.judge_setup()
        self._emit = emit
        self._entries = {e.name: e for e in plan.lineup.candidates}
        self.errors: RunErrors = {}
        """The exception of each candidate run that failed (its row says why)."""
        self.done: list[Run] = []
        """Every run judged so far, in the order they landed."""
        self.landed: list[Run] = []
        """The runs of every finished `run` call, in plan order: the rows of the report."""
        values = {x.id: x.value for x in plan.inputs}
        self._costs = run_costs(references, values, plan.lineup.candidates, self.setup) if budget is not None else {}
        self._counts = {"landed": 0, "judged": 0, "failed": 0}
        self._bar: Any = None
        self._planned = 0  # runs planned so far: a run's place in the race, the order the budget admits runs in
        self.stops = stops
        """Entries the race has stopped giving runs so far, and why: filled as each stops, not when the race ends."""

    async def run(self, planned: Sequence[tuple[Entry, RaceInput, int]]) -> list[Run | None]:
        """Race ``planned`` (entry, input, repeat): the runs in that order; None for one the budget did not start."""
        if self._bar is None:
            self._bar = tqdm(desc=f"{self.plan.job.name} race", unit="run", disable=not self.plan.progress)
        self._bar.total = (self._bar.total or 0) + len(planned)
        start, self._planned = self._planned, self._planned + len(planned)
        items = [(start + i, *one) for i, one in enumerate(planned)]
        if self.session.batch:
            results = await self._run_batched(items)
        else:
            results = await fan_out(items, self._one, lane=lambda one: one[1].name, width=self._width)
        self.landed.extend(r for r in results if r is not None)
        return results

    def _width(self, name: object) -> int:
        return lane_width(self.plan.concurrency, self._entries[str(name)].max_concurrency)

    async def _run_batched(self, items: list[_Planned]) -> list[Run | None]:
        """The runs with a judge that batches: each run, once landed, waits for its verdict in a task of its own, so
        the candidate runs never wait for a batch, and the batch is held open while they land (its verdicts go
        together). Under a budget it is not held: a run's reservation is settled only by its verdict, so the runs
        waiting for money wait for a batch to land."""
        judged: list[Run | None] = [None] * len(items)

        async def fill(index: int, landed: _Landed) -> None:
            judged[index] = await self._judge(landed)

        async with asyncio.TaskGroup() as verdicts:

            async def land(numbered: tuple[int, _Planned]) -> None:
                landed = await self._land(numbered[1])
                if landed is not None:
                    verdicts.create_task(fill(numbered[0], landed))

            with self.session.hold_batches() if self.budget is None else contextlib.nullcontext():
                await fan_out(
                    list(enumerate(items)), land, lane=lambda numbered: numbered[1][1].name, width=self._width
                )
        return judged

    async def _one(self, planned: _Planned) -> Run | None:
        landed = await self._land(planned)
        return None if landed is None else await self._judge(landed)

    async def _land(self, planned: _Planned) -> _Landed | None:
        """One candidate run, made under the budget: the run and what its verdict needs, or None when the budget
        did not start it."""
        place, entry, item, repeat = planned
        budget, total = self.budget, self._bar.total
        held = 0.0
        if budget is not None:
            held = budget.reservation(entry.name, self._costs[(entry.name, item.id)].total)
            if not await budget.admit(held, place=place):
                self.stops.setdefault(entry.name, BUDGET_STOP)
                return None
        run = await self.plan.one_run(self.session, entry, item, Role.CANDIDATE, repeat, self.errors)
        self._counts["landed"] += 1
        self._counts["failed"] += not run.ok
        self._show_counts()
        self._emit(RaceEvent(kind=EventKind.LANDED, run=run, planned=total))
        return _Landed(run=run, item=item, entry=entry, held=held, planned=total)

    async def _judge(self, landed: _Landed) -> Run:
        """A landed run, judged; its reservation settled by what it and its verdict spent."""
        run, item = landed.run, landed.item
        run = await judge_run(self.session, run, self.references[item.id], item.value, self.setup, self.plan.scorer)
        if self.budget is not None:
            self.budget.settle(landed.entry.name, landed.held, run.spent_now_with_verdict)
        self._counts["judged"] += run.ok  # a failed run is not sent to the judge: "judged" never counts it
        self._show_counts()
        self._bar.update(1)
        self._emit(RaceEvent(kind=EventKind.JUDGED, run=run, planned=landed.planned))
        self.done.append(run)
        return run

    def _show_counts(self) -> None:
        if not self._bar.disable:  # a hidden bar still formats its postfix: twice a run, for nothing
            self._bar.set_postfix(self._counts, refresh=False)

    @property
    def entries(self) -> dict[str, Entry]:
        """The entries raced, by name."""
        return dict(self._entries)

    def in_plan_order(self) -> list[Run]:
        """The runs judged so far in the order a race plans them (input, entry, repeat): a stopped race's rows."""
        order = {x.id: i for i, x in enumerate(self.plan.inputs)}
        entries = {name: i for i, name in enumerate(self._entries)}
        return sorted(self.done, key=lambda r: (order.get(r.input_id, 0), entries.get(r.entry, 0), r.repeat))

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def paired_score(run: Run) -> float | None:
    """A run's score for a paired difference, as the report's verdicts read it
    (`gradebench._verdict.evidence.measured_runs`): 0 when it failed on the model's answer, None when the endpoint
    failed it (it says nothing of the model's answers) or the judge gave no verdict."""
    if not run.ok:
        return None if run.endpoint_error is not None else 0.0
    return run.verdict.score if run.verdict is not None else None


async def race_to_verdict(race: CandidateRace) -> tuple[list[tuple[str, int]], dict[str, str]]:
    """Race waves of paired units until every candidate's verdict is settled at a group-sequential look
    (`gradebench._verdict.gsd`, ``runs="gsd"`` or ``"auto"``); the units in draw order and why each candidate
    stopped."""
    plan = race.plan
    verdicts: RaceState[Any] = RACES[plan.spec.design](
        list(race.entries),
        plan.lineup.reference.name,
        [x.id for x in plan.inputs],
        margin=plan.spec.margin,
        max_runs=plan.most_runs,
        seed=f"{plan.spec.salt}:{plan.benchmark_id}",
    )
    by_id = {x.id: x for x in plan.inputs}

    def note_stops() -> None:  # as each entry stops, for a progress display
        race.stops.update({name: why for name, why in verdicts.stops().items() if why})

    while not verdicts.done:
        wave = verdicts.next_wave()
        note_stops()
        if not wave:
            break
        landed = await race.run([(race.entries[name], by_id[u.input_id], u.repeat) for name, u in wave])
        scores = {(r.entry, Unit(r.input_id, r.repeat)): paired_score(r) for r in landed if r is not None}
        verdicts.land(scores, flawed=flawed_entries((r.entry, r.truncated > 0 or r.refused) for r in race.done))
        spent = race.budget is not None and race.budget.stopped
        if spent:
            verdicts.stop_all(BUDGET_STOP)
        note_stops()
        if spent:
            break
    return [(u.input_id, u.repeat) for u in verdicts.units], verdicts.stops()
