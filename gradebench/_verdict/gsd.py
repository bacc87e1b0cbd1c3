"""A group-sequential race to a verdict (``runs="gsd"``, and ``runs="auto"``: another name for it): paired units in a
few planned looks (`gradebench._stats.groupseq`).

A unit is one input with a repeat of its own: the reference entry runs on it once and so does every candidate still
racing; a candidate's paired difference is its score minus the reference entry's (0 for a failed run, as everywhere).
Units come in cycles: every input once, in a seeded random order, then every input again in a new order, and so on
(a new input is worth more than a repeat, and a cycle keeps the inputs' runs even). A wave is the units up to the
next planned look, every eighth of ``max_runs``; after it every racing candidate's verdict is read at the look. An
entry stops when its verdict settles, when it is futile (neither verdict is likely by the last look), at the last look
(``max_runs``), or when the budget runs out — then its verdict is the one of its last look taken: the runs of a wave cut
short are in the report but no look reads them, as no boundary was spent on them.

`LookRace.reading` reads a finished race's verdict of an entry from its report's scores and the units in draw order;
a race stopped early is replayed first (`completed_looks`): wave by wave, up to the first wave with a run missing.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._base.vocab import Design
from .._stats.groupseq import ALPHA, AS_GOOD_FROM, LOOKS, WORSE_ALPHA, LookVerdict, look_verdict, planned_looks
from .._stats.paired import AS_GOOD, INCONCLUSIVE, plural
from .racestate import Landed, RaceState, Reading, Unit, replay, unit_differences

if TYPE_CHECKING:
    from .._records.meta import ReportMeta

__all__ = ["RACES", "LookRace", "completed_looks", "design_words"]

_Scores = Mapping[tuple[str, Unit], float | None]


class LookRace(RaceState[LookVerdict]):
    """The state of a group-sequential race: which units to run next, on which entries, and why each entry stopped."""

    SEED = "gradebench-group-sequential"

    def _start(self) -> None:
        self.looks = planned_looks(self.max_runs, LOOKS)
        self._cycle: list[str] = []
        self._wave: list[tuple[str, Unit]] = []

    def next_wave(self) -> list[tuple[str, Unit]]:
        """The runs up to the next look, as (entry, unit): the reference entry and every racing candidate on each
        unit. Empty when the race is over."""
        runs = super().next_wave()
        if runs:
            self._wave = runs
        return runs

    def verdict(self, entry: str) -> LookVerdict:
        """``entry``'s verdict at the looks taken so far."""
        return look_verdict(_draws(self._scores, entry, self.reference_entry, self.units), self.looks, self.margin)

    def _read(self, flawed: Collection[str]) -> None:
        """Every racing entry's verdict is read at the look — only when every run of the wave landed: a wave cut
        short (the budget, a cancel) is no look."""
        if not all(key in self._scores for key in self._wave):
            return
        last = len(self.units) >= self.looks[-1]
        for entry in self._tested.values():
            if entry.stopped is not None:
                continue
            entry.verdict = verdict = self.verdict(entry.name)
            at = f"look {verdict.look} of {verdict.looks} after {entry.runs} runs"
            if verdict.verdict != INCONCLUSIVE and not (verdict.verdict == AS_GOOD and entry.name in flawed):
                self._stop(entry.name, f"settled: {verdict.verdict} at {at}")
            elif verdict.futile:
                self._stop(entry.name, f"futile at {at}: neither verdict likely by the last look")
            elif last:
                self._stop(entry.name, f"max_runs: {self.max_runs} runs made")

    def _wave_size(self, racing: list[str]) -> int:
        upcoming = [u for u in self.looks if u > len(self.units)]
        return upcoming[0] - len(self.units) if upcoming else 0

    def _next_input(self) -> str:
        if not self._cycle:
            self._cycle = self._rng.sample(self.input_ids, len(self.input_ids))
        return self._cycle.pop(0)

    @classmethod
    def reading(cls, found: Landed, entry: str, meta: ReportMeta) -> Reading:
        """``entry``'s verdict at the looks its units reach: the first that settled it, or the last taken."""
        reference, units = meta.reference_entry, found.units
        looks = planned_looks(meta.max_runs, LOOKS)
        read = units[: _last_run(found, entry)]
        v = look_verdict(_draws(found.scores, entry, reference, read), looks, meta.spec.margin)
        return Reading(
            verdict=v.verdict,
            mean_diff=v.mean,
            lower=v.lower,
            upper=v.upper,
            n_inputs=v.n_inputs,
            n_pairs=v.n,
            paired=len(unit_differences(found.scores, entry, reference, units)),
            reason=v.reason,
            complete=f"on the looks complete before the stop ({plural(len(units), 'unit')})",
        )


def _last_run(found: Landed, entry: str) -> int:
    """How many of ``found.units`` reach ``entry``'s last run. A race stops an entry at a look, so this is that look;
    a report an older version raced with ``runs="auto"`` (the betting race, retired) stopped entries between looks,
    and its looks are read only up to the entry's own last run: a look past it would read the same data against a
    later, lower boundary, which the group-sequential race never does."""
    return max((k + 1 for k, unit in enumerate(found.units) if (entry, unit) in found.scores), default=0)


def _draws(scores: _Scores, entry: str, reference_entry: str, units: Sequence[Unit]) -> list[tuple[str, float | None]]:
    """``entry``'s paired difference on every unit in draw order (None where either run has no score or none ran)."""
    out: list[tuple[str, float | None]] = []
    for unit in units:
        mine, theirs = scores.get((entry, unit)), scores.get((reference_entry, unit))
        out.append((unit.input_id, mine - theirs if mine is not None and theirs is not None else None))
    return out


def completed_looks(
    scores: _Scores,
    candidates: Sequence[str],
    reference_entry: str,
    input_ids: Sequence[str],
    *,
    margin: float,
    max_runs: int,
    seed: str,
    flaws: Mapping[tuple[str, Unit], bool] | None = None,
) -> tuple[list[Unit], dict[str, str]]:
    """The units of the looks a race stopped early completed, in draw order, and why entries stopped before it did.

    Replayed from ``scores`` (every run that landed): wave by wave, a wave counts when every run it planned landed;
    the replay ends at the first wave with a run missing, whose units no look read."""
    race = LookRace(candidates, reference_entry, input_ids, margin=margin, max_runs=max_runs, seed=seed)
    return replay(race, scores, flaws)


def design_words(max_runs: int, margin: float) -> tuple[str, str]:
    """The report's words for a group-sequential race: its shape (the header's) and its verdicts' title."""
    looks = planned_looks(max_runs, LOOKS)
    shape = f"raced to a verdict in {len(looks)} looks (at most {max_runs} runs an entry)"
    title = (
        f"raced to a verdict: {len(looks)} looks at {', '.join(map(str, looks))} paired units, margin {margin:g} of "
        f"10, paired by input; as good: O'Brien–Fleming boundary, one-sided {1 - ALPHA:.1%}, from "
        f"{AS_GOOD_FROM:.0%} of the units; worse: Pocock boundary, one-sided {1 - WORSE_ALPHA:.0%}, from the first look"
    )
    return shape, title


RACES: dict[Design, type[RaceState[Any]]] = {Design.AUTO: LookRace, Design.GROUP_SEQUENTIAL: LookRace}
"""The race each design to a verdict runs, and its report is read with: ``runs="auto"`` is a name for the
group-sequential race (the betting race it once named covered only the inputs raced, not the job)."""
