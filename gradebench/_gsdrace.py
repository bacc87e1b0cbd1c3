"""A group-sequential race to a verdict (``runs="gsd"``): paired units in a few planned looks (`gradebench._groupseq`).

A unit is one input with a repeat of its own: the reference entry runs on it once and so does every candidate still
racing; a candidate's paired difference is its score minus the reference entry's (0 for a failed run, as everywhere).
Units come in cycles: every input once, in a seeded random order, then every input again in a new order, and so on
(a new input is worth more than a repeat, and a cycle keeps the inputs' runs even). A wave is the units up to the
next planned look, every quarter of ``max_runs``; after it every racing candidate's verdict is read at the look. An
entry stops when its verdict settles, when it is futile (neither verdict is likely by the last look), at the last look
(``max_runs``), or when the budget runs out — then its verdict is the one of its last look taken: the runs of a wave cut
short are in the report but no look reads them, as no boundary was spent on them.

`look_verdicts` reads a finished race's verdicts from its report's scores and the units in draw order; a race
stopped early is replayed first (`completed_looks`): wave by wave, up to the first wave with a run missing.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from . import _stats
from ._adaptive import Unit, unit_differences
from ._codec import frame
from ._evidence import flawed_entries
from ._groupseq import ALPHA, LOOKS, LookVerdict, look_verdict, planned_looks
from ._meta import ReportMeta
from ._stats import AS_GOOD, INCONCLUSIVE
from ._vocab import Role

__all__ = ["LookRace", "completed_looks", "design_words", "look_verdicts"]

_Scores = Mapping[tuple[str, Unit], float | None]


@dataclass
class _Entry:
    name: str
    runs: int = 0
    verdict: LookVerdict | None = None
    stopped: str | None = None


@dataclass
class LookRace:
    """The state of a group-sequential race: which units to run next, on which entries, and why each entry stopped."""

    candidates: Sequence[str]
    reference_entry: str
    input_ids: Sequence[str]
    margin: float
    max_runs: int
    seed: str
    units: list[Unit] = field(default_factory=list)
    """Every unit drawn, in draw order."""

    def __post_init__(self) -> None:
        if not self.input_ids:
            raise ValueError("a race to a verdict needs inputs")
        self.looks = planned_looks(self.max_runs, LOOKS)
        self._tested = {n: _Entry(n) for n in self.candidates if n != self.reference_entry}
        self._rng = random.Random(f"gradebench-group-sequential:{self.seed}")
        self._cycle: list[str] = []
        self._repeats: dict[str, int] = {}
        self._scores: dict[tuple[str, Unit], float | None] = {}
        self._wave: list[tuple[str, Unit]] = []

    @property
    def racing(self) -> list[str]:
        """Candidates still receiving runs."""
        return [e.name for e in self._tested.values() if e.stopped is None]

    @property
    def done(self) -> bool:
        return not self.racing

    def next_wave(self) -> list[tuple[str, Unit]]:
        """The runs up to the next look, as (entry, unit): the reference entry and every racing candidate on each
        unit. Empty when the race is over."""
        racing = self.racing
        upcoming = [u for u in self.looks if u > len(self.units)]
        if not racing or not upcoming:
            return []
        runs = []
        self._wave = []
        for _ in range(upcoming[0] - len(self.units)):
            unit = self._draw()
            self.units.append(unit)
            runs.append((self.reference_entry, unit))
            for name in racing:
                runs.append((name, unit))
                self._tested[name].runs += 1
        self._wave = runs
        return runs

    def land(self, scores: _Scores, flawed: Collection[str] = ()) -> None:
        """A wave landed: ``scores`` of each (entry, unit) run (0 for a failed run, None when no verdict came).
        Every racing entry's verdict is read at the look — only when every run of the wave landed: a wave cut short
        (the budget, a cancel) is no look. An entry in ``flawed`` (cut off or refused on most runs,
        `gradebench._evidence`) is never stopped as good."""
        self._scores.update(scores)
        if not all(key in self._scores for key in self._wave):
            return
        last = len(self.units) >= self.looks[-1]
        for entry in self._tested.values():
            if entry.stopped is not None:
                continue
            entry.verdict = verdict = self.verdict(entry.name)
            at = f"look {verdict.look} of {verdict.looks} after {entry.runs} runs"
            if verdict.verdict != INCONCLUSIVE and not (verdict.verdict == AS_GOOD and entry.name in flawed):
                entry.stopped = f"settled: {verdict.verdict} at {at}"
            elif verdict.futile:
                entry.stopped = f"futile at {at}: neither verdict likely by the last look"
            elif last:
                entry.stopped = f"max_runs: {self.max_runs} runs made"

    def verdict(self, entry: str) -> LookVerdict:
        """``entry``'s verdict at the looks taken so far."""
        return look_verdict(_draws(self._scores, entry, self.reference_entry, self.units), self.looks, self.margin)

    def stop_all(self, why: str) -> None:
        """End the race for every entry still racing (the budget ran out)."""
        for name in self.racing:
            self._tested[name].stopped = why

    def stops(self) -> dict[str, str]:
        """Why each candidate stopped, by entry."""
        return {e.name: e.stopped or "" for e in self._tested.values()}

    def _draw(self) -> Unit:
        if not self._cycle:
            self._cycle = self._rng.sample(list(self.input_ids), len(self.input_ids))
        input_id = self._cycle.pop(0)
        repeat = self._repeats.get(input_id, 0)
        self._repeats[input_id] = repeat + 1
        return Unit(input_id, repeat)


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
    complete: list[Unit] = []
    landed: list[tuple[str, Unit]] = []
    marks = flaws or {}
    while not race.done and (wave := race.next_wave()):
        if not all(key in scores for key in wave):
            break
        complete = list(race.units)
        landed.extend(wave)
        race.land(
            {key: scores[key] for key in wave}, flawed=flawed_entries((n, marks.get((n, u), False)) for n, u in landed)
        )
    return complete, {name: why for name, why in race.stops().items() if why}


def look_verdicts(runs: pl.DataFrame, meta: ReportMeta) -> tuple[pl.DataFrame, dict[str, str]]:
    """A group-sequential race's verdicts (rows of `gradebench._stats.VERDICT_SCHEMA`) from its runs and meta; and
    why entries stopped, for a race stopped early."""
    candidates = runs.filter(pl.col("role") == Role.CANDIDATE)
    scores: dict[tuple[str, Unit], float | None] = {}
    flaws: dict[tuple[str, Unit], bool] = {}
    for r in candidates.select("entry", "input_id", "repeat", "score", "truncated", "refused").iter_rows(named=True):
        key = (r["entry"], Unit(r["input_id"], r["repeat"]))
        scores[key], flaws[key] = r["score"], bool(r["truncated"]) or bool(r["refused"])
    units, stops = [Unit(i, k) for i, k in meta.units], dict[str, str]()
    entries = candidates["entry"].unique(maintain_order=True).to_list()
    if meta.stopped is not None:
        units, stops = completed_looks(
            scores,
            meta.candidates or entries,
            meta.reference_entry,
            list(meta.inputs),
            margin=meta.spec.margin,
            max_runs=meta.max_runs,
            seed=f"{meta.spec.salt}:{meta.benchmark_id}",
            flaws=flaws,
        )
    looks = planned_looks(meta.max_runs, LOOKS)
    rows = []
    for entry in entries:
        row: dict[str, Any] = {"entry": entry, "margin": meta.spec.margin}
        if entry != meta.reference_entry:
            v = look_verdict(_draws(scores, entry, meta.reference_entry, units), looks, meta.spec.margin)
            paired = unit_differences(scores, entry, meta.reference_entry, units)
            reason = (_stats.unjudged(runs, entry, meta.reference_entry) if not paired else None) or v.reason
            if meta.stopped is not None:
                reason += f"; on the looks complete before the stop ({_stats.plural(len(units), 'unit')})"
            row.update(
                verdict=v.verdict,
                mean_diff=v.mean,
                lower=v.lower,
                upper=v.upper,
                n_inputs=v.n_inputs,
                n_pairs=v.n,
                reason=reason,
            )
        rows.append(row)
    return frame(rows, _stats.VERDICT_SCHEMA), stops


def design_words(max_runs: int, margin: float) -> tuple[str, str]:
    """The report's words for a group-sequential race: its shape (the header's) and its verdicts' title."""
    looks = planned_looks(max_runs, LOOKS)
    shape = f"raced to a verdict in {len(looks)} looks (at most {max_runs} runs an entry)"
    title = (
        f"raced to a verdict: {len(looks)} looks at {', '.join(map(str, looks))} paired units, O'Brien–Fleming "
        f"boundary, margin {margin:g} of 10, paired by input, one-sided {1 - ALPHA:.1%}"
    )
    return shape, title
