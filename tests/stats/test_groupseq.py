"""gradebench._stats.groupseq: the group-sequential boundary and verdict, checked against published values and by
simulation
against a known truth (seeds and counts in each test)."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from gradebench._stats.groupseq import (
    ALPHA,
    LOOKS,
    WORSE_ALPHA,
    LookRule,
    efficacy_bounds,
    first_look_from,
    look_verdict,
    planned_looks,
    spent,
)
from gradebench._stats.paired import AS_GOOD, INCONCLUSIVE, WORSE
from gradebench._stats.t import t_isf, t_sf

from ..sizes import Size, sized

INPUTS, RUNS = 16, 4
"""The benchmark's race: 16 inputs, at most 4 runs of each (64 paired units), looks every 8 units."""
LOOKS_AT = planned_looks(INPUTS * RUNS)
FIRST_GOOD = first_look_from(LOOKS_AT)
"""The first look that may say ``as good``: the fourth, at 32 units (every input's second run)."""
MARGIN = 1.0


def monte_carlo(rate: float, n: int) -> float:
    """Three binomial standard deviations of a rate seen over n trials."""
    return 3 * math.sqrt(rate * (1 - rate) / n)


# ----------------------------------------------------------------------------------------------------- the boundary


def test_the_boundaries_are_the_published_ones() -> None:
    # Lan–DeMets O'Brien–Fleming spending, one-sided 0.025, equally spaced looks (gsDesign's sfLDOF; Jennison &
    # Turnbull table 7.6): 4.3326, 2.9631, 2.3590, 2.0141 at four looks; 2.9626, 1.9686 at two; 1.96 at one.
    assert efficacy_bounds((0.25, 0.5, 0.75, 1.0), 0.025) == pytest.approx((4.3326, 2.9631, 2.3590, 2.0141), abs=2e-3)
    assert efficacy_bounds((0.5, 1.0), 0.025) == pytest.approx((2.9626, 1.9686), abs=2e-3)
    assert efficacy_bounds((1.0,), 0.025) == pytest.approx((NormalDist().inv_cdf(0.975),), abs=1e-9)
    assert spent(0.0) == 0.0 and spent(1.0) == pytest.approx(ALPHA) and spent(0.25) < 1e-4
    # the last look costs only a few percent of width: 2.01 against a one-look 1.96
    assert efficacy_bounds((0.25, 0.5, 0.75, 1.0))[-1] / NormalDist().inv_cdf(1 - ALPHA) < 1.03


def test_the_pocock_spending_spends_evenly() -> None:
    # Lan–DeMets Pocock type: α·ln(1 + (e − 1)t); half of α is gone by t ≈ 0.38, against t ≈ 0.8 for O'Brien–Fleming
    # at α = 0.025; at the first of eight looks Pocock has spent a fifth of α, O'Brien–Fleming next to nothing
    assert spent(1.0, 0.05, "pocock") == pytest.approx(0.05) and spent(0.0, 0.05, "pocock") == 0.0
    assert spent(0.5, 0.05, "pocock") == pytest.approx(0.05 * math.log((1 + math.e) / 2))
    assert spent(0.125, 0.05, "pocock") > 0.19 * 0.05 > spent(0.125, 0.05) * 1e5
    assert spent(0.3775, 0.025, "pocock") == pytest.approx(0.0125, rel=1e-3)
    with pytest.raises(ValueError, match="spending must be 'obf' or 'pocock'"):
        spent(0.5, 0.05, "linear")
    # equally spaced Pocock-type bounds are nearly flat (the Pocock shape), O'Brien–Fleming's fall steeply
    pocock = efficacy_bounds(tuple(k / 8 for k in range(1, 9)), 0.05, "pocock")
    assert max(pocock) - min(pocock) < 0.35 and pocock[0] < 2.4 < efficacy_bounds((0.125, 1.0), 0.05)[0]


EIGHT = tuple(k / 8 for k in range(1, 9))


@sized(40_000, 400_000)
@pytest.mark.parametrize("spending", ["obf", "pocock"])
@pytest.mark.parametrize("fractions", [(0.25, 0.5, 0.75, 1.0), (0.3, 0.45, 0.8, 1.0), (0.2, 1.0), (0.5, 0.6), EIGHT])
def test_the_boundary_spends_alpha_over_the_looks_actually_taken(
    fractions: tuple[float, ...], spending: str, size: Size
) -> None:
    # 400,000 Gaussian score processes with independent increments under the null, looked at ``fractions`` (unequal,
    # and one that stops at 0.6 of its planned information: a race cut short spends only what it looked at), for
    # both spending functions: O'Brien–Fleming at the "as good" side's 2.5%, Pocock at the "worse" side's 5%.
    paths, alpha = size.n, ALPHA if spending == "obf" else WORSE_ALPHA
    rng = np.random.default_rng(17)
    steps = np.diff((0.0, *fractions))
    walk = np.cumsum(rng.normal(size=(paths, len(fractions))) * np.sqrt(steps), axis=1)
    z = walk / np.sqrt(fractions)
    bounds = np.array(efficacy_bounds(fractions, alpha, spending))
    crossed = (z >= bounds).cumsum(axis=1) > 0  # crossed by each look
    for k, t in enumerate(fractions):
        rate, want = float(crossed[:, k].mean()), spent(t, alpha, spending)
        assert abs(rate - want) <= monte_carlo(want, paths) + 1e-4, (k, rate, want)


def test_a_boundary_looked_at_naively_would_not_hold() -> None:
    # The reason for spending: a one-look 97.5% bound read at each of four looks crosses about 2.2 times as often.
    paths, fractions = 400_000, (0.25, 0.5, 0.75, 1.0)
    rng = np.random.default_rng(18)
    walk = np.cumsum(rng.normal(size=(paths, 4)) * math.sqrt(0.25), axis=1) / np.sqrt(fractions)
    naive = float((walk >= NormalDist().inv_cdf(1 - ALPHA)).any(axis=1).mean())
    spending = float((walk >= np.array(efficacy_bounds(fractions))).any(axis=1).mean())
    assert naive > 2 * ALPHA and abs(spending - ALPHA) < monte_carlo(ALPHA, paths), (naive, spending)


@pytest.mark.parametrize(
    ("df", "p", "x"),
    [(15, 0.05, 1.75305), (7, 0.025, 2.36462), (1, 0.05, 6.31375), (2, 0.05, 2.91999), (30, 0.005, 2.75000)],
)
def test_the_t_tail_is_exact(df: int, p: float, x: float) -> None:
    assert t_isf(p, df) == pytest.approx(x, abs=1e-4)
    assert t_sf(x, df) == pytest.approx(p, rel=1e-4)
    assert t_sf(-x, df) == pytest.approx(1 - p, rel=1e-6) and t_sf(0.0, df) == pytest.approx(0.5)


def test_the_t_tail_meets_the_normal_for_many_degrees_of_freedom() -> None:
    assert t_isf(0.025, 4000) == pytest.approx(NormalDist().inv_cdf(0.975), abs=1e-3)


def test_looks_fall_every_eighth_of_max_runs() -> None:
    assert planned_looks(64) == [8, 16, 24, 32, 40, 48, 56, 64] and LOOKS == 8
    assert planned_looks(10) == [2, 3, 4, 5, 7, 8, 9, 10]  # unequal looks
    assert planned_looks(2) == [1, 2] and planned_looks(10, 4) == [3, 5, 8, 10]
    # "as good" from the first look at half the units, whatever the looks
    assert FIRST_GOOD == 4
    assert first_look_from(planned_looks(10)) == 4 and first_look_from([1, 2]) == 1 and first_look_from([3, 5, 8]) == 2


# ---------------------------------------------------------------------------------- simulated races, known truth


def failures(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """A candidate that fails 13% of its runs (score 0) against a reference that scores 10 most of the time: the
    simulated fleet's sim/flaky, the longest left tail measured there."""
    reference = rng.choice([10, 9, 7, 3, 2], size=shape, p=[0.8, 0.06, 0.09, 0.03, 0.02])
    own = rng.choice([10, 9, 7, 3, 2], size=shape, p=[0.8, 0.06, 0.09, 0.03, 0.02])
    return np.where(rng.random(shape) < 0.13, 0.0, own) - reference


FAILURES_MEAN = -0.13 * (10 * 0.8 + 9 * 0.06 + 7 * 0.09 + 3 * 0.03 + 2 * 0.02)


DROPS = np.array([-8.0, -7.0, -3.0, -1.0, 0.0, 1.0, 3.0, 7.0])
DROPS_P = np.array([0.03, 0.03, 0.11, 0.04, 0.66, 0.04, 0.05, 0.04])
DROPS_MEAN = float(DROPS @ DROPS_P)


def drops(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Two thirds the same score, now and then 3 or 7–8 points lower (a tool call skipped): sim/mini's shape."""
    return rng.choice(DROPS, size=shape, p=DROPS_P)


def smooth(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Half-point differences with sd ≈ 2, symmetric."""
    return np.round(rng.normal(0.0, 2.0, shape) * 2) / 2


def races(draw, mean: float, truth: float, sequences: int, seed: int) -> list[list[tuple[str, float | None]]]:
    """``sequences`` simulated races in draw order (cycles over 16 inputs, 4 runs each): the paired differences from
    ``draw`` (its exact mean ``mean``), shifted so the true mean is ``truth``, plus an input effect (sd 0.3)."""
    rng = np.random.default_rng(seed)
    effect = rng.normal(0.0, 0.3, (sequences, INPUTS))  # inputs are a sample: their effects need not cancel
    values = draw(rng, (sequences, RUNS, INPUTS)) - mean + truth + effect[:, None, :]
    out = []
    for s in range(sequences):
        order = [rng.permutation(INPUTS) for _ in range(RUNS)]  # each cycle its own order, as LookRace draws
        out.append([(f"q{i}", float(values[s, c, i])) for c in range(RUNS) for i in order[c]])
    return out


def verdicts(draws: list[list[tuple[str, float | None]]], **options) -> list:
    return [look_verdict(d, LOOKS_AT, MARGIN, LookRule(**options)) for d in draws]


DISTRIBUTIONS = [(failures, FAILURES_MEAN), (drops, DROPS_MEAN), (smooth, 0.0)]


@sized(600, 3000)
@pytest.mark.parametrize(("draw", "mean"), DISTRIBUTIONS, ids=["failures", "drops", "smooth"])
def test_false_as_good_at_the_margin_is_at_most_5pct(draw, mean: float, size: Size) -> None:
    # 3000 races of an entry exactly at the margin (true difference −1): "as good" is a false verdict, and so is
    # "worse". Measured (8 looks): "as good" failures 112 (3.7%), drops 67 (2.2%), smooth 58 (1.9%) with futility;
    # without it (every look read) 127, 76, 63. The "as good" boundary is built for 2.5%: long left tails (a failed
    # run) make a t-statistic on 16 inputs too sure of "as good", which is why that side spends 2.5%, not 5%.
    found = verdicts(races(draw, mean, -MARGIN, size.n, seed=1))
    bare = verdicts(races(draw, mean, -MARGIN, size.n, seed=1), futility=0.0)
    for results in (found, bare):
        rate = sum(v.verdict == AS_GOOD for v in results) / len(results)
        assert rate <= size.at_most(0.05), rate
    # A false "worse" (the Pocock side, 5%): measured 69, 78, 140 with futility; 74, 83, 156 (5.2%) without. Left
    # tails make the t-statistic shy of "worse", so symmetric differences are its worst case: there it sits at its
    # nominal 5%, within Monte Carlo error.
    for results in (found, bare):
        rate = sum(v.verdict == WORSE for v in results) / len(results)
        assert rate <= WORSE_ALPHA + monte_carlo(WORSE_ALPHA, len(results)), rate


@sized(600, 3000)
def test_a_t_test_read_naively_at_each_look_says_as_good_too_often(size: Size) -> None:
    # The same 3000 races of sim/flaky's shape at the margin, read at every look by a one-look t-test at 5%, the
    # fixed design's level: a false "as good" in more than 5% of them (measured 489, 16.3%) — why the race spends α.
    draws = races(failures, FAILURES_MEAN, -MARGIN, size.n, seed=1)
    crit = t_isf(0.05, INPUTS - 1)
    hits = 0
    for d in draws:
        for units in LOOKS_AT:
            per: dict[str, list[float]] = {}
            for i, v in d[:units]:
                per.setdefault(i, []).append(float(v or 0.0))
            means = np.array([np.mean(v) for v in per.values()])
            if (means.mean() + MARGIN) / (means.std(ddof=1) / math.sqrt(means.size)) > crit:
                hits += 1
                break
    assert hits / len(draws) > 0.05 + monte_carlo(0.05, len(draws)), hits


@sized(400, 2000)
@pytest.mark.parametrize(("draw", "mean"), DISTRIBUTIONS, ids=["failures", "drops", "smooth"])
def test_the_repeated_bounds_cover_the_truth_at_every_look(draw, mean: float, size: Size) -> None:
    # 2000 races at a true difference of −0.4 (as good): the repeated lower bound, read at every look "as good" may
    # be claimed at (from the fourth), is ever above the truth in (measured) failures 91, drops 60, smooth 49 races
    # (4.6%, 3.0%, 2.5%): built at 97.5%, it holds at 95% with long left tails, the fixed design's one-sided level.
    # The repeated upper bound, read at all eight looks ("worse" may be claimed from the first), is ever below it in
    # 41, 55 and 126 (2.1%, 2.8%, 6.3%): built at 95%, it holds for the skewed shapes, but for symmetric differences
    # it misses 6.3% — 1.3 points over its nominal 5% (the t-scale reading of eight Pocock bounds; the misses spread
    # over every look). A false "worse" costs a candidate, not a wrong swap; the on-margin test above keeps its rate.
    truth, last = -0.4, LOOKS + 1
    bare = LookRule(futility=0.0, first_verdict_look=last, worse_first_look=last)  # nothing settles: every look read
    missed_low = missed_high = 0
    for d in races(draw, mean, truth, size.n, seed=2):
        looked = [look_verdict(d[:u], LOOKS_AT, MARGIN, bare) for u in LOOKS_AT]
        missed_low += any(v.lower is not None and v.lower > truth for v in looked[FIRST_GOOD - 1 :])
        missed_high += any(v.upper is not None and v.upper < truth for v in looked)
    assert missed_low / size.n <= size.at_most(0.05), missed_low
    if draw is smooth:  # symmetric differences: the nominal 97.5% on the "as good" side
        assert missed_low / size.n <= ALPHA + monte_carlo(ALPHA, size.n), missed_low
        assert missed_high / size.n <= size.at_most(0.07), missed_high
    else:
        assert missed_high / size.n <= size.at_most(WORSE_ALPHA), missed_high


@sized(200, 1000)
def test_clear_entries_stop_early_and_the_race_saves_runs(size: Size) -> None:
    # 1000 races each: clearly worse (−4), clearly as good (+0.3, smooth) and on the margin (−1, failures' shape).
    # Measured: worse settles at look 1 in 731 and by look 2 in 999 (8 or 16 of 64 units; at 8 inputs the
    # pseudo-pair floor under the standard error, `gradebench._stats.adjusted`, holds back 117 of the 848 the plain t
    # settled at look 1); as good in 991, from look 5 on (256 at look 5, as before the floor); on the margin 888 stop
    # for futility before the last look: 40 units on average, 38% fewer than racing all 64.
    n = size.n
    worse = verdicts(races(smooth, 0.0, -4.0, n, seed=3))
    good = verdicts(races(smooth, 0.0, 0.3, n, seed=4))
    edge = verdicts(races(failures, FAILURES_MEAN, -1.0, n, seed=5))
    assert all(v.verdict == WORSE for v in worse) and sum(v.look == 1 for v in worse) >= size.at_least(0.7) * n
    assert sum(v.look <= 2 for v in worse) >= size.at_least(0.99) * n
    assert sum(v.verdict == AS_GOOD for v in good) >= size.at_least(0.95) * n
    assert all(v.look >= FIRST_GOOD for v in good)
    units = [LOOKS_AT[v.look - 1] for v in edge]
    assert sum(v.futile for v in edge) >= size.at_least(0.8) * n and np.mean(units) <= 0.65 * LOOKS_AT[-1]


# ------------------------------------------------------------------------------------------- small samples, edges


def test_no_as_good_before_half_the_units_however_clear_but_worse_from_the_first_look() -> None:
    clear = [(f"q{i}", 0.1 * (i % 3)) for i in range(16)]  # as good as can be, one run an input
    v = look_verdict(clear, LOOKS_AT, MARGIN)
    assert v.verdict == INCONCLUSIVE and v.look == 2 and not v.futile
    assert "from look 4 on it may also be called as good" in v.reason
    settled = look_verdict(clear * 2, LOOKS_AT, MARGIN)
    assert settled.verdict == AS_GOOD and settled.look == FIRST_GOOD  # the fourth look (32 units) settles it
    bad = [(f"q{i}", -9.0 + 0.1 * (i % 3)) for i in range(8)]
    assert look_verdict(bad, LOOKS_AT, MARGIN).verdict == WORSE  # "worse" at the first look, 8 units


def test_a_verdict_needs_eight_inputs() -> None:
    draws = [(f"q{i % 5}", -6.0 + (i % 4)) for i in range(64)]  # five inputs, repeated
    v = look_verdict(draws, LOOKS_AT, MARGIN)
    assert v.verdict == INCONCLUSIVE and v.n_inputs == 5 and "a verdict needs at least 8" in v.reason


def test_differences_that_do_not_vary_settle_nothing() -> None:
    v = look_verdict([(f"q{i % 16}", 0.0) for i in range(64)], LOOKS_AT, MARGIN)
    assert v.verdict == INCONCLUSIVE and "no spread to test" in v.reason


def test_a_race_cut_short_keeps_the_verdict_of_its_last_look() -> None:
    rng = np.random.default_rng(6)
    draws = [(f"q{i % 16}", float(rng.normal(-1.0, 2.0))) for i in range(64)]
    no_futility = LookRule(futility=0.0)
    cut = look_verdict(draws[:36], LOOKS_AT, MARGIN, no_futility)  # the budget ran out 4 units into look 5's wave
    assert cut.look == 4 and cut.n == 32 and cut.n_inputs == 16  # the 4 units past look 4 are never read
    assert look_verdict(draws[:32], LOOKS_AT, MARGIN, no_futility) == cut
    assert look_verdict(draws[:6], LOOKS_AT, MARGIN).reason == "no look taken yet: the first comes at 8 paired units"


def test_units_without_both_scores_are_left_out() -> None:
    draws = [(f"q{i % 16}", None if i % 5 == 0 else -4.0 + (i % 3)) for i in range(32)]
    v = look_verdict(draws, LOOKS_AT, MARGIN)
    assert v.verdict == WORSE and v.n == sum(value is not None for _, value in draws[: LOOKS_AT[v.look - 1]])


@pytest.mark.parametrize(
    ("looks", "message"),
    [([], "looks must be rising"), ([16, 16, 32], "looks must be rising"), ([0, 8], "looks must be rising")],
)
def test_misuse_raises_with_the_value(looks: list[int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        look_verdict([], looks, MARGIN)
    with pytest.raises(ValueError, match="margin must be >= 0"):
        look_verdict([], [1], -1.0)
    with pytest.raises(ValueError, match="fractions must rise"):
        efficacy_bounds((0.5, 0.4))
    with pytest.raises(ValueError, match="df must be >= 1"):
        t_sf(1.0, 0)
