"""Race to a verdict (``runs="auto"``): paired units in waves, until each candidate's verdict is settled.

A unit is one input drawn for the race with a repeat index of its own: on it the reference entry runs once and every
candidate still racing runs once, and each candidate's paired difference is its score minus the reference entry's
(0 for a failed run, as everywhere). Draws take every input once, in a seeded random order — a new input is worth
more than a repeat — and then inputs uniformly at random, with replacement. After each wave every candidate's
non-inferiority verdict is recomputed from an anytime-valid confidence sequence (`gradebench._sequential`) over its
differences in draw order, so looking after every wave does not make a false "as good" likelier. A settled entry gets
no more runs; the race ends when every entry is settled, or has made ``max_runs`` runs, or the budget runs out.
While every score landed so far is one and the same, nothing settles: a judge that cannot tell runs apart makes
every difference 0, which is no evidence that an entry is as good. `completed_units` replays a race from its
report's scores to find the units a race stopped early completed.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from ._evidence import flawed_entries
from ._sequential import SequentialVerdict, sequential_verdict
from ._stats import AS_GOOD, INCONCLUSIVE, MIN_INPUTS

__all__ = ["FIRST_WAVE", "NEXT_WAVE", "Unit", "VerdictRace", "completed_units", "unit_verdicts"]

FIRST_WAVE = MIN_INPUTS
"""Units in the first wave: a verdict needs at least this many."""
NEXT_WAVE = 4
"""Units in each later wave."""


@dataclass(frozen=True)
class Unit:
    """One draw of the race: an input, and which repeat of it this is."""

    input_id: str
    repeat: int


@dataclass
class _Entry:
    name: str
    differences: list[float] = field(default_factory=list)
    runs: int = 0
    verdict: SequentialVerdict | None = None
    stopped: str | None = None


class VerdictRace:
    """The state of a race to a verdict: which units to run next, on which entries, and why each entry stopped."""

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
        self.reference_entry = reference_entry
        self.margin = margin
        self.max_runs = max_runs
        self.units: list[Unit] = []
        """Every unit drawn, in draw order (the order the verdicts read the differences in)."""
        self._tested = {n: _Entry(n) for n in candidates if n != reference_entry}
        self._inputs = list(input_ids)
        self._rng = random.Random(f"gradebench-race-to-a-verdict:{seed}")
        self._fresh = self._rng.sample(self._inputs, len(self._inputs))  # each input once, then with replacement
        self._repeats: dict[str, int] = {}
        self._scores: dict[tuple[str, Unit], float | None] = {}

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
        if not racing:
            return []
        room = min(self.max_runs - self._tested[n].runs for n in racing)
        size = min(FIRST_WAVE if not self.units else NEXT_WAVE, max(room, 0))
        if size <= 0:
            for name in racing:
                self._stop(name, f"max_runs: {self.max_runs} runs made")
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

    def land(self, scores: Mapping[tuple[str, Unit], float | None], flawed: Collection[str] = ()) -> None:
        """A wave landed: ``scores`` of each (entry, unit) run (0 for a failed run, None when no verdict came).
        A unit whose reference-entry score or candidate score is missing is left out of that candidate's
        differences (a run judged again would be a second look at the same draw). Nothing settles while every score
        so far is one and the same, and an entry in ``flawed`` (its answers cut off or refused on most runs, see
        `gradebench._evidence`) never settles as good."""
        self._scores.update(scores)
        seen = [v for v in self._scores.values() if v is not None]
        one_score = len(seen) >= 2 and len(set(seen)) == 1  # a judge that cannot tell runs apart: no evidence
        for entry in self._tested.values():
            if entry.stopped is not None:
                continue
            entry.differences = unit_differences(self._scores, entry.name, self.reference_entry, self.units)
            entry.verdict = sequential_verdict(entry.differences, self.margin)
            settled = entry.verdict.verdict != INCONCLUSIVE and not one_score
            if settled and not (entry.verdict.verdict == AS_GOOD and entry.name in flawed):
                self._stop(entry.name, f"settled: {entry.verdict.verdict} after {entry.runs} runs")
            elif entry.runs >= self.max_runs:
                self._stop(entry.name, f"max_runs: {self.max_runs} runs made")

    def stop_all(self, why: str) -> None:
        """End the race for every entry still racing (the budget ran out)."""
        for name in self.racing:
            self._stop(name, why)

    def stops(self) -> dict[str, str]:
        """Why each candidate stopped, by entry (the reference entry ran as long as any did)."""
        return {e.name: e.stopped or "" for e in self._tested.values()}

    def _stop(self, name: str, why: str) -> None:
        self._tested[name].stopped = why

    def _draw(self) -> Unit:
        input_id = self._fresh.pop(0) if self._fresh else self._rng.choice(self._inputs)
        repeat = self._repeats.get(input_id, 0)
        self._repeats[input_id] = repeat + 1
        return Unit(input_id, repeat)


def unit_differences(
    scores: Mapping[tuple[str, Unit], float | None],
    entry: str,
    reference_entry: str,
    units: Sequence[Unit],
) -> list[float]:
    """An entry's paired differences over ``units`` in draw order (units without both scores left out)."""
    out = []
    for unit in units:
        mine, theirs = scores.get((entry, unit)), scores.get((reference_entry, unit))
        if mine is not None and theirs is not None:
            out.append(mine - theirs)
    return out


def unit_verdicts(
    scores: Mapping[tuple[str, Unit], float | None],
    entries: Sequence[str],
    reference_entry: str,
    units: Sequence[Unit],
    margin: float,
) -> dict[str, SequentialVerdict]:
    """Each entry's anytime-valid verdict from a finished race to a verdict (what its report shows)."""
    return {
        e: sequential_verdict(unit_differences(scores, e, reference_entry, units), margin)
        for e in entries
        if e != reference_entry
    }


def completed_units(
    scores: Mapping[tuple[str, Unit], float | None],
    candidates: Sequence[str],
    reference_entry: str,
    input_ids: Sequence[str],
    *,
    margin: float,
    max_runs: int,
    seed: str,
    flaws: Mapping[tuple[str, Unit], bool] | None = None,
) -> tuple[list[Unit], dict[str, str]]:
    """The units a race to a verdict stopped early completed, in draw order, and why entries stopped before it did.

    The race is replayed from ``scores`` (every run that landed, keyed by entry and unit: the draws and the waves are
    a function of the seed and the scores alone): wave by wave, a unit counts when every run the wave gave it landed,
    and the replay ends at the first wave with a run missing. Leaving out a unit with a run still out leaves no
    survivor's flattery in the verdicts: a run in flight when the race stopped is often a failure being retried.
    ``flaws``: which runs were cut off or refused, so the replay holds an entry open as the race did
    (`gradebench._evidence.flawed_entries`).
    """
    race = VerdictRace(candidates, reference_entry, input_ids, margin=margin, max_runs=max_runs, seed=seed)
    complete: list[Unit] = []
    landed: list[tuple[str, Unit]] = []
    marks = flaws or {}
    while not race.done and (wave := race.next_wave()):
        planned: dict[Unit, list[str]] = {}
        for name, unit in wave:
            planned.setdefault(unit, []).append(name)
        done = [u for u, names in planned.items() if all((n, u) in scores for n in names)]
        complete += done
        if len(done) < len(planned):
            break
        landed.extend(wave)
        race.land(
            {key: scores[key] for key in wave}, flawed=flawed_entries((n, marks.get((n, u), False)) for n, u in landed)
        )
    return complete, {name: why for name, why in race.stops().items() if why}
