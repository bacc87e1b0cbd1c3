"""One race engine: the fan-out behind the reference runs, the race, a rejudge and the judge-noise floor, and the race
of candidate runs itself (budget, progress, events).

Work is admitted lazily: each lane (an entry, or the one lane of a rejudge) has a fixed number of workers that take
the next item when they finish one, so a race of 100,000 runs holds a few hundred coroutines, not 100,000. Results
come back in item order whatever order they finish in, and each one is handed to ``done`` as it lands, so a race that
is stopped still has what finished. Admission control (`gradebench._admission`) paces the HTTP requests underneath.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from tqdm.auto import tqdm

from ._adaptive import Unit, VerdictRace
from ._budget import Budget
from ._catalog import Entry
from ._estimate import run_costs
from ._fanout import fan_out, lane_width
from ._inputs import RaceInput
from ._judge import JudgeSetup, Scorer, judge_run
from ._records import Run
from ._session import Session

__all__ = [
    "BUDGET_STOP",
    "CandidateRace",
    "RaceEvent",
    "RaceInput",
    "fan_out",
    "lane_width",
    "paired_score",
    "race_to_verdict",
    "spent_now",
]

BUDGET_STOP = "budget: the next runs would not fit"
"""Why an entry got no more runs when the budget ran out (its ``stopped`` in the report)."""

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, kw_only=True)
class RaceEvent:
    """What a race listener hears (see `Benchmark.subscribe`)."""

    kind: str
    """``reference`` (a reference run landed), ``landed`` (a candidate run finished), ``judged`` (and was judged)."""
    run: Run
    """The run, with its verdict and score once ``judged``."""
    planned: int
    """How many runs of this kind the race plans (inputs for references, candidate runs otherwise)."""


class CandidateRace:
    """The candidate runs of one race: each run is started (under the budget), landed, judged and reported on."""

    def __init__(
        self,
        *,
        session: Session,
        setup: JudgeSetup,
        references: dict[str, Run],
        run_once: Callable[[Entry, RaceInput, int], Awaitable[Run]],
        emit: Callable[[RaceEvent], None],
        scorer: Scorer | None,
        entries: Sequence[Entry],
        inputs: Mapping[str, Any],
        concurrency: int,
        budget: Budget | None,
        desc: str,
        progress: bool,
    ):
        self.session, self.setup, self.references, self.budget = session, setup, references, budget
        self._run_once, self._emit, self._scorer = run_once, emit, scorer
        self._entries = {e.name: e for e in entries}
        self._concurrency, self._desc, self._progress = concurrency, desc, progress
        self.done: list[Run] = []
        """Every run judged so far, in the order they landed."""
        self.landed: list[Run] = []
        """The runs of every finished `run` call, in plan order: the rows of the report."""
        self._costs = run_costs(references, inputs, entries, setup) if budget is not None else {}
        self._counts = {"landed": 0, "judged": 0, "failed": 0}
        self._bar: Any = None
        self._planned = 0  # runs planned so far: a run's place in the race, the order the budget admits runs in
        self.stops: dict[str, str] = {}
        """Entries the race has stopped giving runs so far, and why: filled as each stops, not when the race ends."""

    async def run(self, plan: Sequence[tuple[Entry, RaceInput, int]]) -> list[Run | None]:
        """Race ``plan`` (entry, input, repeat): the runs in plan order; None for one the budget did not start."""
        if self._bar is None:
            self._bar = tqdm(desc=self._desc, unit="run", disable=not self._progress)
        self._bar.total = (self._bar.total or 0) + len(plan)
        start, self._planned = self._planned, self._planned + len(plan)
        results = await fan_out(
            [(start + i, *planned) for i, planned in enumerate(plan)],
            self._one,
            lane=lambda planned: planned[1].name,
            width=lambda name: lane_width(self._concurrency, self._entries[str(name)].max_concurrency),
        )
        self.landed.extend(r for r in results if r is not None)
        return results

    async def _one(self, planned: tuple[int, Entry, RaceInput, int]) -> Run | None:
        place, entry, item, repeat = planned
        budget, total = self.budget, self._bar.total
        held = 0.0
        if budget is not None:
            held = budget.reservation(entry.name, self._costs[(entry.name, item.id)].total)
            if not await budget.admit(held, place=place):
                self.stops.setdefault(entry.name, BUDGET_STOP)
                return None
        run = await self._run_once(entry, item, repeat)
        self._counts["landed"] += 1
        self._counts["failed"] += not run.ok
        self._bar.set_postfix(self._counts, refresh=False)
        self._emit(RaceEvent(kind="landed", run=run, planned=total))
        run = await judge_run(self.session, run, self.references[item.id], item.value, self.setup, self._scorer)
        if budget is not None:
            budget.settle(entry.name, held, spent_now(run))
        self._counts["judged"] += 1
        self._bar.set_postfix(self._counts, refresh=False)
        self._bar.update(1)
        self._emit(RaceEvent(kind="judged", run=run, planned=total))
        self.done.append(run)
        return run

    @property
    def entries(self) -> dict[str, Entry]:
        """The entries raced, by name."""
        return dict(self._entries)

    def in_plan_order(self, inputs: Sequence[RaceInput]) -> list[Run]:
        """The runs judged so far in the order a race plans them (input, entry, repeat): a stopped race's rows."""
        order = {x.id: i for i, x in enumerate(inputs)}
        entries = {name: i for i, name in enumerate(self._entries)}
        return sorted(self.done, key=lambda r: (order.get(r.input_id, 0), entries.get(r.entry, 0), r.repeat))

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def spent_now(run: Run) -> float | None:
    """What a run and its verdict spent now (None when a call's cost is unknown)."""
    own = run.spent_now
    judge = [c.spent_now for c in run.verdict.calls] if run.verdict is not None else []
    if own is None or any(v is None for v in judge):
        return None
    return own + sum(v for v in judge if v is not None)


def paired_score(run: Run) -> float | None:
    """A run's score for a paired difference: 0 when it failed, None when the judge gave no verdict."""
    if not run.ok:
        return 0.0
    return run.verdict.score if run.verdict is not None else None


async def race_to_verdict(
    race: CandidateRace, inputs: Sequence[RaceInput], *, reference: str, margin: float, max_runs: int, seed: str
) -> tuple[list[tuple[str, int]], dict[str, str]]:
    """Race waves of paired units until every candidate's verdict is settled (`gradebench._adaptive`); the units in
    draw order and why each candidate stopped."""
    verdicts = VerdictRace(
        list(race.entries), reference, [x.id for x in inputs], margin=margin, max_runs=max_runs, seed=seed
    )
    by_id = {x.id: x for x in inputs}

    def note_stops() -> None:  # as each entry stops, for a progress display
        race.stops.update({name: why for name, why in verdicts.stops().items() if why})

    while not verdicts.done:
        wave = verdicts.next_wave()
        note_stops()
        if not wave:
            break
        landed = await race.run([(race.entries[name], by_id[u.input_id], u.repeat) for name, u in wave])
        verdicts.land({(r.entry, Unit(r.input_id, r.repeat)): paired_score(r) for r in landed if r is not None})
        spent = race.budget is not None and race.budget.stopped
        if spent:
            verdicts.stop_all(BUDGET_STOP)
        note_stops()
        if spent:
            break
    return [(u.input_id, u.repeat) for u in verdicts.units], verdicts.stops()
