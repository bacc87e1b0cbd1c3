"""What a race will cost before it runs: calls, tokens and money (the candidates and the judge apart) and wall time.

The estimate starts from the reference runs, which the race needs first anyway, and predicts every planned candidate
run from them (`gradebench._race.costs`). A run already in the cache costs nothing: the estimate replays every planned
run
against the cache alone (a session whose call path ends in `Refuse`: nothing is sent) and counts the ones that come
back whole, verdict included. Wall time assumes every entry answers as fast as the reference did.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import polars as pl

from .._base.fanout import fan_out, lane_width
from .._base.html import Markup
from .._base.numbers import fit_line, money
from .._base.vocab import Role
from .._calls.path import NotCached
from .._calls.servers import is_local
from .._calls.session import Session
from .._catalog.catalog import Entry
from .._judge.judge import JudgeSetup, judge_run
from .._judge.panel import panel_label
from .._records.inputs import RaceInput
from .._records.meta import ReportMeta
from .._records.planted import ControlPlant
from .._records.records import Run
from .._report.page import pre
from .._report.present import plural
from .controls import control_price, judge_control, plants_of
from .costs import JUDGE_OUTPUT_TOKENS, RunCost, run_costs
from .pacing import LocalSpeed, ServerLoad
from .plan import RacePlan, RunErrors, reference_failed

__all__ = [
    "ControlEstimate",
    "EntryEstimate",
    "Estimate",
    "estimate",
    "estimate_race",
    "held_in_cache",
    "uncached_references",
]

T = TypeVar("T")


async def estimate_race(plan: RacePlan, finish: Callable[[list[Run], ReportMeta], None] | None = None) -> Estimate:
    """What the race as planned will cost before any candidate runs (see `gradebench.Benchmark.estimate`): the
    reference runs first (cached ones are free), then every planned run replayed against the cache alone. When a
    reference run fails, ``finish(runs, meta)`` is given the reference runs (a report of them) before it is raised."""
    setup, errors = plan.judge_setup(), RunErrors()
    async with plan.cache.hold(plan.benchmark_id), plan.session() as session:
        runs = await plan.reference_runs(session, errors, budget=None, landed=lambda run: None)
        # the local servers' caps, read as the race will read them: the wall time and the queue notes rest on them
        servers = await session.servers.read([*plan.lineup.candidates, *setup.judges])
    if failed := [r for r in runs if not r.ok]:
        if finish is not None:
            finish(runs, plan.meta())
        raise reference_failed(failed[0], errors[failed[0].run_id])
    by_input = {r.input_id: r for r in runs}
    planned = plan.fixed_plan(max(1, round(plan.most_runs / len(plan.inputs))))

    async def replay(session: Session, one: tuple[Entry, RaceInput, int]) -> None:
        entry, item, repeat = one
        run = await plan.one_run(session, entry, item, Role.CANDIDATE, repeat, {})
        await judge_run(session, run, by_input[item.id], item.value, setup)

    cached = await held_in_cache(plan, planned, replay)
    values = {x.id: x.value for x in plan.inputs}
    costs = run_costs(by_input, values, plan.lineup.candidates, setup)
    runs_planned = [(e, x.id) for e, x, _ in planned]
    return estimate(
        runs_planned,
        cached,
        costs,
        setup=setup,
        reference=plan.lineup.reference,
        currency=plan.currency(),
        controls=await _controls(plan, by_input, values, setup),
        limits=ServerLoad.of(
            servers, plan.concurrency, LocalSpeed.of(call.response for run in runs for call in run.calls)
        ),
    )


async def _controls(
    plan: RacePlan, references: Mapping[str, Run], values: Mapping[str, Any], setup: JudgeSetup
) -> ControlEstimate:
    """The negative controls the race will plant, each verdict replayed against the cache alone (a cached one is
    free) and the others priced from their own prompts."""
    plants, _ = plants_of(references, plan.spec.controls, salt=plan.spec.salt, benchmark_id=plan.benchmark_id)

    async def replay(session: Session, plant: ControlPlant) -> None:
        await judge_control(session, plant, references, values, setup)

    held = await held_in_cache(plan, plants, replay)
    due = [control_price(p, references, values, setup) for p, hit in zip(plants, held, strict=True) if not hit]
    return ControlEstimate(
        controls=len(plants),
        cached=sum(held),
        judge_calls=sum(p.judge_calls for p in due),
        judge_input_tokens=sum(p.input_tokens for p in due),
        judge_cached_tokens=sum(p.cached_tokens for p in due),
        judge_output_tokens=sum(p.output_tokens for p in due),
        judge_cost=sum(p.cached_cost for p in due),
    )


async def uncached_references(plan: RacePlan) -> int:
    """How many reference runs the cache does not hold whole (nothing is sent, nothing spent)."""

    async def replay(session: Session, item: RaceInput) -> None:
        await plan.one_run(session, plan.lineup.reference, item, Role.REFERENCE, 0, {})  # a failed run held counts

    return sum(not held for held in await held_in_cache(plan, plan.inputs, replay))


async def held_in_cache(
    plan: RacePlan, items: Sequence[T], replay: Callable[[Session, T], Awaitable[Any]]
) -> list[bool]:
    """For each item, whether ``replay(session, item)`` completes on a session that answers from the cache alone (a
    call the cache lacks raises `NotCached`)."""
    async with plan.session(cache_only=True) as session:

        async def held(item: T) -> bool:
            try:
                await replay(session, item)
            except NotCached:
                return False
            return True

        return await fan_out(items, held, width=lane_width(plan.concurrency))


@dataclass(frozen=True, kw_only=True)
class EntryEstimate:
    """One entry's share of the race."""

    entry: str
    """The entry."""
    runs: int
    """Candidate runs planned."""
    cached_runs: int
    """Of those, runs the cache holds whole, verdict included: free."""
    calls: int
    """Model calls to be made (cached runs make none)."""
    input_tokens: int
    """Their input tokens."""
    output_tokens: int
    """Their output tokens."""
    cost: float
    """What the runs will cost."""
    judge_calls: int
    """Judge calls to be made for them."""
    judge_input_tokens: int
    """The judge's input tokens (cached ones included)."""
    judge_cached_tokens: int
    """Of those, tokens the judge's provider is expected to serve from its prompt cache."""
    judge_output_tokens: int
    """The judge's output tokens."""
    judge_cost: float
    """What judging the runs will cost."""
    wall_s: float
    """How long the entry's runs take on their own, at the entry's concurrency."""


@dataclass(frozen=True, kw_only=True)
class ControlEstimate:
    """The negative controls' share of the race: their verdicts alone (a control makes no model call)."""

    controls: int = 0
    """Controls the race will plant."""
    cached: int = 0
    """Of those, controls whose verdict the cache holds: free."""
    judge_calls: int = 0
    """Judge calls to be made for the others."""
    judge_input_tokens: int = 0
    """Their input tokens."""
    judge_cached_tokens: int = 0
    """Of those, tokens the judge's provider is expected to serve from its prompt cache (each control is its
    input's reference transcript up to the answer: it shares the prefix of the input's other verdicts)."""
    judge_output_tokens: int = 0
    """Their output tokens."""
    judge_cost: float = 0.0
    """What they will cost."""


@dataclass(frozen=True, kw_only=True)
class Estimate:
    """The predicted race: per entry, and the totals. ``str(estimate)`` is a small table."""

    entries: tuple[EntryEstimate, ...]
    """One per candidate entry, in race order."""
    currency: str
    """Currency of every cost."""
    judge_entry: str
    """The entry that judges (a panel's: ``a + b``)."""
    wall_s: float
    """Wall time of the race (the references aside), at the global and per-entry limits."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    """What the estimate assumes."""
    controls: ControlEstimate = field(default_factory=ControlEstimate)
    """The negative controls' verdicts (counted in ``judge_calls`` and ``judge_cost``)."""

    @property
    def runs(self) -> int:
        return sum(e.runs for e in self.entries)

    @property
    def cached_runs(self) -> int:
        return sum(e.cached_runs for e in self.entries)

    @property
    def calls(self) -> int:
        return sum(e.calls for e in self.entries)

    @property
    def judge_calls(self) -> int:
        """Judge calls to be made: the candidate runs' verdicts and the controls'."""
        return sum(e.judge_calls for e in self.entries) + self.controls.judge_calls

    @property
    def candidates_cost(self) -> float:
        """What the candidate runs will cost."""
        return sum(e.cost for e in self.entries)

    @property
    def judge_cost(self) -> float:
        """What judging them will cost, the negative controls included."""
        return sum(e.judge_cost for e in self.entries) + self.controls.judge_cost

    @property
    def cost(self) -> float:
        """Everything the race will spend now: the runs and the judge."""
        return self.candidates_cost + self.judge_cost

    def frame(self) -> pl.DataFrame:
        """The per-entry figures as a frame."""
        rows = [{f: getattr(e, f) for f in EntryEstimate.__dataclass_fields__} for e in self.entries]
        made = pl.DataFrame(rows, schema=_SCHEMA)
        return made.with_columns(pl.col("cost", "judge_cost").fill_nan(None))  # unknown (no prices): null, as ever

    def line(self) -> str:
        """One line: the spend and the time."""
        cached = f", {self.cached_runs} of them cached" if self.cached_runs else ""
        return (
            f"estimate: {plural(self.runs, 'run')}{cached} · {plural(self.calls, 'call')} + "
            f"{plural(self.judge_calls, 'judge call')} · {money(self.cost)} {self.currency} (runs "
            f"{money(self.candidates_cost)} + judge {money(self.judge_cost)}) · about {_duration(self.wall_s)}"
        )

    def text(self, width: int | None = None) -> str:
        """The estimate as a small table, its line of totals above and its notes below; within ``width`` columns
        when given (the money columns as wide as their figures, a line too long wrapped between words)."""
        name = max([len("entry"), *(len(e.entry) for e in self.entries)])
        if self.controls.controls:
            name = max(name, len("controls"))
        figures = [money(v) for e in self.entries for v in (e.cost, e.judge_cost)] + [money(self.controls.judge_cost)]
        cost = 12 if width is None else max(len("judge"), *map(len, figures)) + 1  # a space between columns
        lines = [
            self.line(),
            f"{'entry':<{name}} {'runs':>5} {'cached':>6} {'calls':>6} {'cost':>{cost}} {'judge':>{cost}}",
        ]
        for e in self.entries:
            lines.append(
                f"{e.entry:<{name}} {e.runs:>5} {e.cached_runs:>6} {e.calls:>6} "
                f"{money(e.cost):>{cost}} {money(e.judge_cost):>{cost}}"
            )
        if self.controls.controls:
            c = self.controls
            cached = f", {c.cached} cached" if c.cached else ""
            lines.append(
                f"{'controls':<{name}} {c.controls:>5} {c.cached:>6} {0:>6} {money(0.0):>{cost}} "
                f"{money(c.judge_cost):>{cost}}  (negative controls{cached}: their verdicts alone)"
            )
        lines.extend(f"  {note}" for note in self.notes)
        return "\n".join(line if width is None else fit_line(line, width) for line in lines)

    def __str__(self) -> str:
        return self.text()

    def _repr_html_(self) -> Markup:
        # the text view as one escaped block: entry names, judges and notes are untrusted text
        return pre(str(self))


_SCHEMA = {
    "entry": pl.String(),
    "runs": pl.Int64(),
    "cached_runs": pl.Int64(),
    "calls": pl.Int64(),
    "input_tokens": pl.Int64(),
    "output_tokens": pl.Int64(),
    "cost": pl.Float64(),
    "judge_calls": pl.Int64(),
    "judge_input_tokens": pl.Int64(),
    "judge_cached_tokens": pl.Int64(),
    "judge_output_tokens": pl.Int64(),
    "judge_cost": pl.Float64(),
    "wall_s": pl.Float64(),
}


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def estimate(
    plan: Sequence[tuple[Entry, str]],
    cached: Sequence[bool],
    costs: Mapping[tuple[str, str], RunCost],
    *,
    setup: JudgeSetup,
    reference: Entry,
    limits: ServerLoad,
    currency: str,
    controls: ControlEstimate | None = None,
) -> Estimate:
    """The estimate of a race: ``plan`` is every candidate run as (entry, input id), ``cached`` which of them the
    cache holds whole; ``costs`` from `run_costs`; ``reference`` the entry whose runs the figures are taken from;
    ``controls`` the negative controls' verdicts (they keep the judge busy too); ``limits`` the race's concurrency,
    the local servers' caps (`gradebench._calls.servers`: a server's calls, its judge's included, go no faster than
    its slots) and the reference's llama.cpp speed (a local judge's verdicts are timed by it)."""
    controls = controls or ControlEstimate()
    load, concurrency = limits, limits.concurrency
    by_entry: dict[str, list[tuple[str, bool]]] = {}
    entries: dict[str, Entry] = {}
    for (entry, input_id), hit in zip(plan, cached, strict=True):
        by_entry.setdefault(entry.name, []).append((input_id, hit))
        entries[entry.name] = entry
    clock = _Clock.of(costs, reference, setup.entry, load.speed)
    judged_inputs: set[str] = set()  # inputs whose first verdict (the one that fills the provider's cache) is counted
    made: list[EntryEstimate] = []
    busy = judging = slowest = 0.0
    for name, runs in by_entry.items():
        entry = entries[name]
        calls = tin = tout = jcalls = jin = jcached = jout = 0
        cost = jcost = chain = 0.0
        for input_id, hit in runs:
            if hit:
                continue
            one = costs[(name, input_id)]
            calls, tin, tout = calls + one.calls, tin + one.input_tokens, tout + one.output_tokens
            cost += one.cost
            chain = max(chain, one.calls * clock.call_s(entry) + one.judge_calls * clock.judge_s)
            later = costs[("", input_id)]
            jcalls += one.judge_calls
            jin += one.judge_input_tokens
            if input_id in judged_inputs:  # the prompt's prefix is in the provider's cache by now
                jcached += later.judge_cached_tokens
                jcost += later.judge_cost
            else:
                judged_inputs.add(input_id)
                jcost += one.judge_cost
            jout += one.judge_output_tokens
        seconds, verdicts = calls * clock.call_s(entry), jcalls * clock.judge_s
        limit = load.limit(entry)
        load.add(entry, seconds)
        # an entry's runs hold its slots while they call, and a lane's workers while their verdicts come
        wall = max(seconds / limit, (seconds + verdicts) / lane_width(concurrency, limit), chain)
        if entry.rpm:
            wall = max(wall, calls / entry.rpm * 60)
        busy, judging, slowest = busy + seconds, judging + verdicts, max(slowest, wall)
        made.append(
            EntryEstimate(
                entry=name,
                runs=len(runs),
                cached_runs=sum(hit for _, hit in runs),
                calls=calls,
                input_tokens=tin,
                output_tokens=tout,
                cost=cost,
                judge_calls=jcalls,
                judge_input_tokens=jin,
                judge_cached_tokens=jcached,
                judge_output_tokens=jout,
                judge_cost=jcost,
                wall_s=wall,
            )
        )
    judge_limit = load.limit(setup.entry)
    judges = panel_label(e.name for e in setup.judges)
    judging += controls.judge_calls * clock.judge_s
    load.add(setup.entry, judging)
    wall = max(slowest, (busy + judging) / concurrency, judging / judge_limit, load.wall_s())
    timed = {name: clock.call_s(e) for name, e in entries.items()} | {setup.entry.name: clock.judge_s}
    notes = (
        "candidate runs are taken to make the reference's calls with its tokens; verdicts read a prompt as long as "
        f"the reference's and answer {JUDGE_OUTPUT_TOKENS} tokens",
        clock.note([entries[name] for name in by_entry]),
        *([f"every run is judged by each of {len(setup.panel)} judges: {judges}"] if setup.panel else []),
        *_unpriced_note([*entries.values(), *setup.judges]),
        *load.notes([*entries.values(), setup.entry], timed),
    )
    return Estimate(
        entries=tuple(made),
        currency=currency,
        judge_entry=judges,
        wall_s=wall,
        notes=notes,
        controls=controls,
    )


def _unpriced_note(entries: Sequence[Entry]) -> list[str]:
    """The entries without a price table, whose cost the estimate leaves unknown (NaN), said once."""
    unpriced = sorted({e.name for e in entries if not e.priced})
    if not unpriced:
        return []
    return [
        f"cost unknown until the endpoint reports it (reports_cost, no prices): {', '.join(unpriced)}; the totals "
        "are unknown too"
    ]


@dataclass(frozen=True)
class _Clock:
    """How long one call takes, by entry: its catalog ``latency_s`` when it has one, the reference's own runs for the
    reference entry, else a guess — as long as one of the reference's calls."""

    reference: Entry
    judge: Entry
    measured_s: float
    """Seconds of one of the reference's calls, from its runs."""
    speed: LocalSpeed | None = None
    """How fast the reference's llama.cpp server read and wrote: a local judge's verdicts are timed by it."""
    verdict_s: float | None = None
    """Seconds of one verdict by that speed (its prompt and answer tokens), when the judge is local too."""

    @classmethod
    def of(
        cls, costs: Mapping[tuple[str, str], RunCost], reference: Entry, judge: Entry, speed: LocalSpeed | None = None
    ) -> _Clock:
        runs = [c for (name, _), c in costs.items() if name]  # every entry's prediction is the reference's runs
        calls = sum(c.calls for c in runs)
        measured = sum(c.latency_s for c in runs) / calls if calls else 0.0
        verdicts = [c for (name, _), c in costs.items() if not name]  # the verdicts on each input
        asked = sum(c.judge_calls for c in verdicts)
        if speed is None or not asked or not (is_local(judge.base_url) and is_local(reference.base_url)):
            return cls(reference, judge, measured)
        tokens_in = sum(c.judge_input_tokens for c in verdicts) / asked
        tokens_out = sum(c.judge_output_tokens for c in verdicts) / asked
        return cls(reference, judge, measured, speed, speed.call_s(tokens_in, tokens_out))

    def call_s(self, entry: Entry) -> float:
        if entry.latency_s is not None:
            return entry.latency_s
        return self.measured_s

    @property
    def judge_s(self) -> float:
        """Seconds of one verdict."""
        if self.judge.latency_s is None and self.verdict_s is not None:
            return self.verdict_s
        return self.call_s(self.judge)

    def note(self, raced: Sequence[Entry]) -> str:
        """What the wall time rests on, and which of it is a guess."""
        known = {self.reference.name}
        guessed = [e.name for e in raced if e.latency_s is None and e.name not in known]
        timed = ""
        if self.judge.latency_s is None and self.verdict_s is not None and self.speed is not None:
            timed = (
                f"; a verdict of the judge ({self.judge.name}) is taken to last {self.verdict_s:.1f} s: its prompt "
                f"and answer at the reference's llama.cpp speed ({self.speed.text()})"
            )
        elif self.judge.latency_s is None and self.judge.name not in known:
            guessed.append(f"the judge ({self.judge.name})")
        if not guessed:
            return f"wall time from each entry's latency_s and the reference's runs, at the concurrency limits{timed}"
        return (
            f"wall time guesses that {', '.join(guessed)} answer as fast as the reference did (an entry's "
            f"latency_s in the catalog, seconds a call, says otherwise){timed}"
        )
