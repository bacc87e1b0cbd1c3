"""A simulated world with a known truth for the label-corrected verdict: runs with a person's score, judged by a
biased judge, many races at once in numpy.

Each race has ``inputs`` inputs and ``runs`` runs an entry on each. A run's *human* score is what a careful person
gives it: 10, less `WRONG_COST` when its answer is wrong, less the input's difficulty (0, 1 or 2 points of shown work,
the same for every entry: it is what pairing by input cancels), less one point of work on 30% of runs. An entry's
chance of a right answer is its `Side.right`, moved by ±`SPREAD` per input. The *judge* sees the same run and errs
the way judges do: it lets a wrong answer pass with chance `Side.forgiven` (swayed by a long explanation: the answer
scores as if right), takes `PENALTY` points off a right answer with chance `Side.penalised` (harsh on a terse one),
and moves one point either way with chance `JUDGE_NOISE`; clipped to 0..10. The true human-scale difference is
exactly ``WRONG_COST × (right_C − right_R)`` (the rest has the same mean on both sides, and an entry's own per-input
spread, `Side.spread`, is symmetric and kept inside 0..1), so coverage is measured against the truth, not an estimate
of it. A person labels ``labels`` runs of each entry, a simple random sample. `SCENARIOS` are the judge's biases of
the first measurements; `JUDGES` the judges the label minimum is chosen over (lenient, biased by input, rare,
constant, offset, pure noise), each with between-input spread.

Used by tests/stats/test_ppi.py, benchmarks/judge_labels.py and benchmarks/label_validity.py; the end-to-end check
on the fleet itself (a judge profile with `Profile.verbosity_bias`, and `gradebench.sim.human_score`) is in
tests/verdict/test_labels.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["JUDGES", "JUDGE_NOISE", "PENALTY", "SCENARIOS", "SPREAD", "WRONG_COST", "Scenario", "Side", "World", "draw"]

WRONG_COST = 4.0
"""Points a wrong answer costs on the human scale (the sim judge's cost of a wrong field is at least 3)."""
PENALTY = 3.0
"""Points a harsh judge takes off a right answer."""
JUDGE_NOISE = 0.2
"""Chance the judge moves a score by one point."""
SPREAD = 0.04
"""How far an input moves an entry's chance of a right answer, either way (uniform)."""


@dataclass(frozen=True, kw_only=True)
class Side:
    """One entry of the race: how often it is right, and how the judge errs on it."""

    right: float
    """Chance a run's answer is right."""
    forgiven: float = 0.0
    """Chance the judge lets a wrong answer pass (a judge swayed by a verbose explanation)."""
    penalised: float = 0.0
    """Chance the judge takes `PENALTY` points off a right answer (a judge harsh on a terse one)."""
    spread: float = 0.0
    """How far an input moves this entry's own chance of a right answer, either way (uniform), on top of `SPREAD`:
    inputs that suit one entry and not the other, which pairing does not cancel."""
    swayed_inputs: float = 0.0
    """Share of the inputs on which the judge lets every wrong answer of this entry pass, and as many again on which
    it takes `PENALTY` off every right one (a judge biased by the input, not the run)."""
    offset: float = 0.0
    """Points the judge adds to every run of this entry (before clipping to 0..10)."""
    constant: float | None = None
    """A judge that gives every run of this entry this score, whatever the answer."""
    uninformative: bool = False
    """A judge whose score of this entry's runs is noise: a uniform 0..10 integer, whatever the answer."""


@dataclass(frozen=True, kw_only=True)
class Scenario:
    """A candidate and the reference entry, and what the scenario is about."""

    name: str
    """Short name (the benchmark's JSON keys)."""
    candidate: Side
    """The candidate."""
    reference: Side
    """The reference entry's own runs."""
    about: str
    """One line."""

    @property
    def truth(self) -> float:
        """The true human-scale mean difference, candidate − reference entry."""
        return WRONG_COST * (self.candidate.right - self.reference.right)


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        name="verbose_worse",
        candidate=Side(right=0.60, forgiven=0.9),
        reference=Side(right=0.95),
        about="a verbose candidate 1.4 points worse, the judge letting 90% of its wrong answers pass",
    ),
    Scenario(
        name="verbose_at_margin",
        candidate=Side(right=0.70, forgiven=0.9),
        reference=Side(right=0.95),
        about="the same judge, the candidate exactly at the margin line (1 point worse)",
    ),
    Scenario(
        name="fair_at_margin",
        candidate=Side(right=0.70),
        reference=Side(right=0.95),
        about="an unbiased judge, the candidate at the margin line",
    ),
    Scenario(
        name="harsh_on_reference_at_margin",
        candidate=Side(right=0.70),
        reference=Side(right=0.95, penalised=0.4),
        about="a judge harsh on 40% of the reference entry's right answers, the candidate at the margin line",
    ),
    Scenario(
        name="harsh_on_candidate_as_good",
        candidate=Side(right=0.95, penalised=0.5),
        reference=Side(right=0.95),
        about="a candidate as good as the reference, under-scored by a judge harsh on half its right answers",
    ),
    Scenario(
        name="verbose_as_good_rare_bias",
        candidate=Side(right=0.95, forgiven=0.9),
        reference=Side(right=0.95),
        about="a candidate as good, the judge's bias on the 4.5% of its runs that are wrong (a rare bias)",
    ),
    Scenario(
        name="rare_bias_at_margin",
        candidate=Side(right=0.75, forgiven=0.2),
        reference=Side(right=1.0),
        about="at the margin line, the judge letting pass 20% of the wrong answers: a bias on 5% of the runs",
    ),
)
"""The scenarios measured (the first one is the issue's: a verbose, worse candidate the judge calls as good)."""

_SPREAD_C, _SPREAD_R = 0.25, 0.01
"""Between-input spread of the judge worlds: inputs move the candidate's chance of a right answer by up to ±0.25 of
its own (so the paired difference varies by input: ±1 point), the reference entry's by ±0.01 (it is right on ~95%
of every input); both stay inside 0..1, so the truth is exact."""


def _at_margin(name: str, about: str, candidate: dict, reference: dict | None = None) -> Scenario:
    return Scenario(
        name=name,
        candidate=Side(right=0.70, spread=_SPREAD_C, **candidate),
        reference=Side(right=0.95, spread=_SPREAD_R, **(reference or {})),
        about=about,
    )


JUDGES: tuple[Scenario, ...] = (
    _at_margin("fair", "an unbiased judge", {}),
    _at_margin("lenient", "a judge that lets 90% of the candidate's wrong answers pass", {"forgiven": 0.9}),
    _at_margin(
        "input_biased",
        "a judge lenient on every wrong answer of the candidate on a quarter of the inputs, harsh on every right one "
        "on another quarter",
        {"swayed_inputs": 0.25},
    ),
    _at_margin(
        "rare",
        "a judge that lets 17% of the candidate's wrong answers pass: errs on ~5% of its runs",
        {"forgiven": 0.17},
    ),
    _at_margin("constant", "a judge that scores every run 7", {"constant": 7.0}, {"constant": 7.0}),
    _at_margin("offset", "a judge that adds 1.5 points to every run of the candidate", {"offset": 1.5}),
    _at_margin(
        "uninformative",
        "a judge whose scores are noise (uniform 0..10)",
        {"uninformative": True},
        {"uninformative": True},
    ),
)
"""The judges the default label minimum is chosen over (benchmarks/label_validity.py): each at the margin line
(truth −1 exactly) with real between-input spread, so 1 − a bound's coverage is its false verdict rate."""


def _side(
    rng: np.random.Generator, side: Side, shift: np.ndarray, difficulty: np.ndarray, shape: tuple[int, int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """Human and judge scores of one entry's runs, shape (races, inputs, runs)."""
    own = rng.uniform(-side.spread, side.spread, (*shape[:2], 1))
    wrong = rng.random(shape) >= np.clip(side.right + shift + own, 0.0, 1.0)
    work = (rng.random(shape) < 0.3).astype(float)
    human = 10.0 - WRONG_COST * wrong - difficulty - work
    place = rng.random((*shape[:2], 1))  # which inputs sway the judge
    lenient_input, harsh_input = place < side.swayed_inputs, place > 1.0 - side.swayed_inputs
    forgiven = wrong & ((rng.random(shape) < side.forgiven) | lenient_input)
    penalised = ~wrong & ((rng.random(shape) < side.penalised) | harsh_input)
    noise = np.where(rng.random(shape) < JUDGE_NOISE, rng.choice([-1.0, 1.0], shape), 0.0)
    judge = np.clip(human + WRONG_COST * forgiven - PENALTY * penalised + noise + side.offset, 0.0, 10.0)
    if side.constant is not None:
        judge = np.full(shape, side.constant)
    if side.uninformative:
        judge = rng.integers(0, 11, shape).astype(float)
    return human, judge


def _ranks(rng: np.random.Generator, shape: tuple[int, int, int]) -> np.ndarray:
    """Each run's place in the order a person labels its entry's runs: a random permutation a race."""
    races, inputs, runs = shape
    order = np.argsort(rng.random((races, inputs * runs)), axis=1)
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(inputs * runs)[None, :], axis=1)
    return ranks.reshape(shape)


@dataclass(frozen=True)
class World:
    """Many races of one scenario: every run's judge and human score, and the order a person labels them in."""

    scenario: Scenario
    judge_c: np.ndarray
    human_c: np.ndarray
    rank_c: np.ndarray
    judge_r: np.ndarray
    human_r: np.ndarray
    rank_r: np.ndarray

    def arrays(self, labels_c: int | np.ndarray, labels_r: int | np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        """The six arrays `gradebench._stats.ppi.corrected_difference` takes, with the first ``labels_c`` runs of the
        candidate and ``labels_r`` (default: as many) of the reference entry labelled — per race when arrays: a
        larger number extends the same sample."""

        def human(values: np.ndarray, ranks: np.ndarray, m: int | np.ndarray) -> np.ndarray:
            cut = np.broadcast_to(np.asarray(m), (values.shape[0],))[:, None, None]
            return np.where(ranks < cut, values, np.nan)

        labels_r = labels_c if labels_r is None else labels_r
        every = np.ones(self.judge_c.shape, dtype=bool)
        return (
            self.judge_c,
            human(self.human_c, self.rank_c, labels_c),
            every,
            self.judge_r,
            human(self.human_r, self.rank_r, labels_r),
            every,
        )

    def judge_only(self) -> tuple[np.ndarray, ...]:
        """The same arrays with no label at all: the interval is then the judge's own paired difference."""
        return self.arrays(0)


def draw(scenario: Scenario, rng: np.random.Generator, *, races: int, inputs: int, runs: int) -> World:
    """``races`` races of ``scenario``, each of ``inputs`` inputs × ``runs`` runs an entry."""
    shape = (races, inputs, runs)
    shift = rng.uniform(-SPREAD, SPREAD, (races, inputs, 1))
    difficulty = rng.integers(0, 3, (races, inputs, 1)).astype(float)
    human_c, judge_c = _side(rng, scenario.candidate, shift, difficulty, shape)
    human_r, judge_r = _side(rng, scenario.reference, shift, difficulty, shape)
    return World(scenario, judge_c, human_c, _ranks(rng, shape), judge_r, human_r, _ranks(rng, shape))
