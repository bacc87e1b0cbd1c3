"""Race to a verdict (``runs="auto"``): paired units in waves, until each candidate's verdict is settled.

A unit is one input drawn for the race with a repeat index of its own: on it the reference entry runs once and every
candidate still racing runs once, and each candidate's paired difference is its score minus the reference entry's
(0 for a failed run, as everywhere). Draws take every input once, in a seeded random order — a new input is worth
more than a repeat — and then inputs uniformly at random, with replacement. After each wave every candidate's
non-inferiority verdict is recomputed from an anytime-valid confidence sequence (`gradebench._stats.sequential`) over
its
differences in draw order, so looking after every wave does not make a false "as good" likelier. A settled entry gets
no more runs; the race ends when every entry is settled, or has made ``max_runs`` runs, or the budget runs out.
While every score landed so far is one and the same, nothing settles: a judge that cannot tell runs apart makes
every difference 0, which is no evidence that an entry is as good. `gradebench._verdict.racestate.replay` replays a
race from its report's scores to find the units a race stopped early completed.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from .._stats.paired import AS_GOOD, INCONCLUSIVE, MIN_INPUTS, plural
from .._stats.sequential import SequentialVerdict, sequential_verdict
from .racestate import Landed, RaceState, Reading, Unit, unit_differences

if TYPE_CHECKING:
    from .._records.meta import ReportMeta

__all__ = ["FIRST_WAVE", "NEXT_WAVE", "Unit", "VerdictRace", "unit_differences"]

FIRST_WAVE = MIN_INPUTS
"""Units in the first wave: a verdict needs at least this many."""
NEXT_WAVE = 4
"""Units in each later wave."""


class VerdictRace(RaceState[SequentialVerdict]):
    """The state of a race to a verdict: which units to run next, on which entries, and why each entry stopped."""

    SEED = "gradebench-race-to-a-verdict"
    PARTIAL_WAVES = True

    def _start(self) -> None:
        self._fresh = self._rng.sample(self.input_ids, len(self.input_ids))  # each input once, then with replacement

    def _read(self, flawed: Collection[str]) -> None:
        """After each wave: a unit whose reference-entry score or candidate score is missing is left out of that
        candidate's differences (a run judged again would be a second look at the same draw). Nothing settles while
        every score so far is one and the same, and an entry in ``flawed`` never settles as good."""
        seen = [v for v in self._scores.values() if v is not None]
        one_score = len(seen) >= 2 and len(set(seen)) == 1  # a judge that cannot tell runs apart: no evidence
        for entry in self._tested.values():
            if entry.stopped is not None:
                continue
            entry.differences = self.differences(entry.name)
            entry.verdict = sequential_verdict(entry.differences, self.margin)
            settled = entry.verdict.verdict != INCONCLUSIVE and not one_score
            if settled and not (entry.verdict.verdict == AS_GOOD and entry.name in flawed):
                self._stop(entry.name, f"settled: {entry.verdict.verdict} after {entry.runs} runs")
            elif entry.runs >= self.max_runs:
                self._stop(entry.name, f"max_runs: {self.max_runs} runs made")

    def _wave_size(self, racing: list[str]) -> int:
        room = min(self.max_runs - self._tested[n].runs for n in racing)
        size = min(FIRST_WAVE if not self.units else NEXT_WAVE, max(room, 0))
        if size <= 0:
            for name in racing:
                self._stop(name, f"max_runs: {self.max_runs} runs made")
        return size

    def _next_input(self) -> str:
        return self._fresh.pop(0) if self._fresh else self._rng.choice(self.input_ids)

    @classmethod
    def reading(cls, found: Landed, entry: str, meta: ReportMeta) -> Reading:
        """``entry``'s anytime-valid verdict over its paired units, in draw order."""
        reference = meta.reference_entry
        v = sequential_verdict(unit_differences(found.scores, entry, reference, found.units), meta.spec.margin)
        inputs = {u.input_id for u in found.units if (entry, u) in found.scores and (reference, u) in found.scores}
        return Reading(
            verdict=v.verdict,
            mean_diff=v.mean,
            lower=v.lower,
            upper=v.upper,
            n_inputs=len(inputs),
            n_pairs=v.n,
            paired=v.n,
            reason=v.reason,
            complete=f"on {plural(v.n, 'unit')} complete before the stop",
        )
