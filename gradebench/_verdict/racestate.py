"""The state of a race to a verdict: paired units, the entries racing, why each stopped, and the replay.

A unit is one input drawn for the race with a repeat index of its own: on it the reference entry runs once and every
candidate still racing runs once, and each candidate's paired difference is its score minus the reference entry's
(0 for a failed run, as everywhere). `RaceState` keeps the bookkeeping of a race — the units drawn, the candidates
racing and done, the scores landed, the stop reasons, the budget's stop — and a race (the group-sequential one,
`gradebench._verdict.gsd`, which ``runs="gsd"`` and ``runs="auto"`` both run) adds how inputs are drawn, how big a wave
is, and when a verdict stops an entry. `replay` rebuilds a race stopped early from its report's scores
(the draws and the waves are a function of the seed and the scores alone) to find the units its verdicts may read.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Generic, TypeVar

import polars as pl

from .._base.vocab import Role
from .evidence import flawed_entries

if TYPE_CHECKING:
    from .._records.meta import ReportMeta

__all__ = ["Landed", "RaceEntry", "RaceState", "Reading", "Scores", "Unit", "landed", "replay", "unit_differences"]

V = TypeVar("V")


@dataclass(frozen=True)
class Unit:
    """One draw of the race: an input, and which repeat of it this is."""

    input_id: str
    repeat: int


Scores = Mapping[tuple[str, Unit], float | None]
"""Each (entry, unit) run's score: 0 for a failed run, None when no verdict came."""


@dataclass
class RaceEntry(Generic[V]):
    """One candidate in a race to a verdict."""

    name: str
    """The entry's name."""
    runs: int = 0
    """Runs it was given so far."""
    verdict: V | None = None
    """Its verdict at the last wave read."""
    stopped: str | None = None
    """Why it gets no more runs; None while it races."""


class RaceState(Generic[V]):
    """Which units to run next, on which entries, and why each entry stopped: the part every race shares."""

    SEED: ClassVar[str]
    """The race's own seed prefix."""

    def __init__(
        self,
        candidates: Sequence[str],
        reference_entry: str,
        input_ids: Sequence[str],
        *,
        margin: float,
        max_runs: int,
        seed: str,
    ):
        if not input_ids:
            raise ValueError("a race to a verdict needs inputs")
        self.candidates = list(candidates)
        self.reference_entry = reference_entry
        self.input_ids = list(input_ids)
        self.margin = margin
        self.max_runs = max_runs
        self.seed = seed
        self.units: list[Unit] = []
        """Every unit drawn, in draw order (the order the verdicts read the differences in)."""
        self._tested: dict[str, RaceEntry[V]] = {n: RaceEntry(n) for n in candidates if n != reference_entry}
        self._rng = random.Random(f"{self.SEED}:{seed}")
        self._repeats: dict[str, int] = {}
        self._scores: dict[tuple[str, Unit], float | None] = {}
        self._start()

    def _start(self) -> None:
        """What a race keeps beside the shared state, set up once that is (nothing here)."""

    @property
    def racing(self) -> list[str]:
        """Candidates still receiving runs."""
        return [e.name for e in self._tested.values() if e.stopped is None]

    @property
    def done(self) -> bool:
        return not self.racing

    def next_wave(self) -> list[tuple[str, Unit]]:
        """The runs of the next wave, as (entry, unit): the reference entry and every racing candidate on each unit.
        Empty when the race is over."""
        racing = self.racing
        size = self._wave_size(racing) if racing else 0
        if size <= 0:
            return []
        runs = []
        for _ in range(size):
            unit = self._draw()
            self.units.append(unit)
            runs.append((self.reference_entry, unit))
            for name in racing:
                runs.append((name, unit))
                self._tested[name].runs += 1
        return runs

    def land(self, scores: Scores, flawed: Collection[str] = ()) -> None:
        """A wave landed: ``scores`` of each (entry, unit) run. An entry in ``flawed`` (its answers cut off or
        refused on most runs, `gradebench._verdict.evidence`) is never stopped as good."""
        self._scores.update(scores)
        self._read(flawed)

    def stop_all(self, why: str) -> None:
        """End the race for every entry still racing (the budget ran out)."""
        for name in self.racing:
            self._stop(name, why)

    def stops(self) -> dict[str, str]:
        """Why each candidate stopped, by entry (the reference entry ran as long as any did)."""
        return {e.name: e.stopped or "" for e in self._tested.values()}

    def entry(self, name: str) -> RaceEntry[V]:
        """The candidate ``name``'s state: its runs so far, its verdict at the last wave read, why it stopped."""
        return self._tested[name]

    def _stop(self, name: str, why: str) -> None:
        self._tested[name].stopped = why

    def _draw(self) -> Unit:
        input_id = self._next_input()
        repeat = self._repeats.get(input_id, 0)
        self._repeats[input_id] = repeat + 1
        return Unit(input_id, repeat)

    def _wave_size(self, racing: list[str]) -> int:
        """Units in the next wave (0: the race is over; the race may stop ``racing`` entries here)."""
        raise NotImplementedError

    def _next_input(self) -> str:
        """The input of the next unit."""
        raise NotImplementedError

    def _read(self, flawed: Collection[str]) -> None:
        """Read the racing entries' verdicts from the scores so far and stop those that are done."""
        raise NotImplementedError

    @classmethod
    def reading(cls, found: Landed, entry: str, meta: ReportMeta) -> Reading:
        """``entry``'s verdict as its report reads it from what landed (`landed`): the race's own bounds."""
        raise NotImplementedError


@dataclass(frozen=True, kw_only=True)
class Reading:
    """One candidate's verdict read from a race to a verdict's report (`RaceState.reading`)."""

    verdict: str
    """``as good``, ``worse`` or ``inconclusive``."""
    mean_diff: float | None
    """The mean paired difference the verdict rests on; None before any."""
    lower: float | None
    """Its lower bound (repeated over the looks)."""
    upper: float | None
    """Its upper bound."""
    n_inputs: int
    """Inputs the verdict rests on."""
    n_pairs: int
    """Paired units the verdict rests on."""
    paired: int
    """Units on which both the entry and the reference entry have a score (0: the judge scored none of a side)."""
    reason: str
    """Why the verdict is what it is, in one sentence."""
    complete: str
    """What the verdict of a race stopped early rests on, in words: ``on 9 units complete before the stop``."""


def unit_differences(scores: Scores, entry: str, reference_entry: str, units: Sequence[Unit]) -> list[float]:
    """An entry's paired differences over ``units`` in draw order (units without both scores left out)."""
    out = []
    for unit in units:
        mine, theirs = scores.get((entry, unit)), scores.get((reference_entry, unit))
        if mine is not None and theirs is not None:
            out.append(mine - theirs)
    return out


def replay(
    race: RaceState[V], scores: Scores, flaws: Mapping[tuple[str, Unit], bool] | None = None
) -> tuple[list[Unit], dict[str, str]]:
    """The units a race stopped early completed, in draw order, and why entries stopped before it did.

    ``race`` is a fresh race of the same candidates, inputs, margin, ``max_runs`` and seed, replayed on ``scores``
    (every run that landed): wave by wave, and the replay ends at the first wave with a run missing, of which no unit
    counts (a group-sequential look reads whole waves only, as no boundary was spent on the rest).
    Leaving out a unit with a run still out leaves no survivor's flattery in the verdicts: a run in flight when the
    race stopped is often a failure being retried. ``flaws``: which runs were cut off or refused, so the replay holds
    an entry open as the race did (`gradebench._verdict.evidence.flawed_entries`)."""
    complete: list[Unit] = []
    landed: list[tuple[str, Unit]] = []
    marks = flaws or {}
    while not race.done and (wave := race.next_wave()):
        planned: dict[Unit, list[str]] = {}
        for name, unit in wave:
            planned.setdefault(unit, []).append(name)
        done = [u for u, names in planned.items() if all((n, u) in scores for n in names)]
        if len(done) < len(planned):
            break
        complete += done
        landed.extend(wave)
        race.land(
            {key: scores[key] for key in wave}, flawed=flawed_entries((n, marks.get((n, u), False)) for n, u in landed)
        )
    return complete, {name: why for name, why in race.stops().items() if why}


@dataclass(frozen=True)
class Landed:
    """What a race to a verdict's report holds for its verdicts: each candidate run's score and whether it was cut
    off or refused, by (entry, unit); the candidate entries in order of appearance; the units its verdicts may read
    (every unit drawn, or for a race stopped early the ones `replay` finds complete) and why entries stopped before."""

    scores: dict[tuple[str, Unit], float | None]
    flaws: dict[tuple[str, Unit], bool]
    entries: list[str]
    units: list[Unit]
    stops: dict[str, str]


def landed(runs: pl.DataFrame, meta: ReportMeta, race: type[RaceState[V]]) -> Landed:
    """`Landed` from a report's runs and meta, a stopped race replayed as a fresh ``race`` of its own settings."""
    candidates = runs.filter(pl.col("role") == Role.CANDIDATE)
    scores: dict[tuple[str, Unit], float | None] = {}
    flaws: dict[tuple[str, Unit], bool] = {}
    for r in candidates.select("entry", "input_id", "repeat", "score", "truncated", "refused").iter_rows(named=True):
        key = (r["entry"], Unit(r["input_id"], r["repeat"]))
        scores[key], flaws[key] = r["score"], bool(r["truncated"]) or bool(r["refused"])
    entries = candidates["entry"].unique(maintain_order=True).to_list()
    units, stops = [Unit(i, k) for i, k in meta.units], dict[str, str]()
    if meta.stopped is not None:
        fresh = race(
            meta.candidates or entries,
            meta.reference_entry,
            list(meta.inputs),
            margin=meta.spec.margin,
            max_runs=meta.max_runs,
            seed=f"{meta.spec.salt}:{meta.benchmark_id}",
        )
        units, stops = replay(fresh, scores, flaws)
    return Landed(scores, flaws, entries, units, stops)
