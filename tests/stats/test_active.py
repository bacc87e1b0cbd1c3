"""Active labelling (gradebench._stats.active) and the label-corrected verdict weighted by the chance each run was asked
with: exact on the chances, and by simulation against a known truth that the weighted estimate is unbiased and its
bounds cover while labels lean heavily toward some runs — and that without the weights it is not.

The world is gradebench.sim._label_world's fair judge at the margin line (truth −1 exactly); the chances follow the
judge's score, so the runs asked most are the ones it scores low (the floor at 0.3 of the mean chance) — a judge-led
choice that, unweighted, biases the labels' mean. Seeds and counts are in each test.
"""

from __future__ import annotations

import numpy as np
import pytest

from gradebench._stats.active import ask, judge_uncertainty, label_chances
from gradebench._stats.ppi import MIN_LABELS, corrected_difference
from gradebench.sim._label_world import JUDGES, draw

RACES, INPUTS, RUNS = 4000, 16, 4
"""Races in the fast slice: a coverage of 0.95 is measured to ±0.007, a mean estimate to about ±0.01."""


def test_chances_spend_the_budget_stay_between_floor_and_ceiling_and_cap_at_one() -> None:
    uncertainty = np.array([[0.0, 0.0, 1.0, 2.0, 40.0, np.nan], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]])
    chances = label_chances(uncertainty, 3, floor=0.2, ceiling=10.0)
    assert chances.sum(axis=1) == pytest.approx([3.0, 3.0])
    assert chances[0, 5] == 0.0  # cannot be labelled
    assert chances[0, 4] == 1.0  # capped: what it would have had beyond 1 goes to the others
    assert chances[0, :4].min() >= 0.2 * 3 / 5 - 1e-12  # the floor: a fifth of the mean chance
    assert chances[1].tolist() == pytest.approx([0.5] * 6)  # equal uncertainty: a uniform sample
    bounded = label_chances(uncertainty[0], 3)  # the defaults: 0.6 to 1.5 times the mean chance of 0.6
    assert bounded.sum() == pytest.approx(3.0) and bounded[4] == pytest.approx(1.5 * 0.6)
    assert bounded[:5].min() >= 0.6 * 0.6 - 1e-12 and bounded[5] == 0.0


def test_the_judges_uncertainty_is_its_spread_and_nearness_to_a_boundary() -> None:
    ratings = np.array([[5.0, 5.0, 5.0], [2.0, 4.0, np.nan], [np.nan, np.nan, np.nan]])
    assert judge_uncertainty(ratings)[:2].tolist() == pytest.approx([0.0, 1.0])
    assert np.isnan(judge_uncertainty(ratings)[2])
    assert judge_uncertainty(ratings, boundary=5.5, width=1.0)[:2].tolist() == pytest.approx([0.5, 1.0])


def test_the_draw_asks_the_budget_each_run_about_as_often_as_its_chance_and_the_labelled_first() -> None:
    chances = np.tile(np.array([0.1, 0.5, 0.9, 0.5, 0.0]), (20_000, 1))  # a budget of 2
    labelled, order = ask(chances, np.random.default_rng(3))
    assert np.all(labelled.sum(axis=1) == 2)  # exactly the budget, as a person labelling "2" gives
    assert labelled.mean(axis=0) == pytest.approx([0.1, 0.5, 0.9, 0.5, 0.0], abs=0.04)
    first = np.take_along_axis(labelled, order, axis=1)
    assert np.all(first[:, :2]) and not np.any(first[:, 2:])  # the labelled runs are the first of the order
    assert np.all(order[:, -1] == 4)  # a run of chance 0 comes last


def active_world(seed: int) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...], float]:
    """The fair judge's world with labels drawn with chances led by the judge's score (low scores asked about most,
    down to the floor): the weighted arrays, the same labels read as a uniform sample, and the truth."""
    scenario = next(j for j in JUDGES if j.name == "fair")
    world = draw(scenario, np.random.default_rng(seed), races=RACES, inputs=INPUTS, runs=RUNS)
    rng = np.random.default_rng([seed, 1])
    weighted, uniform = [], []
    for judge, human in ((world.judge_c, world.human_c), (world.judge_r, world.human_r)):
        flat = judge.reshape(RACES, -1)
        chances = label_chances((10.0 - flat) ** 2, MIN_LABELS, floor=0.3, ceiling=10.0)
        labelled, _ = ask(chances, rng)
        said = np.where(labelled.reshape(judge.shape), human, np.nan)
        weighted += [judge, said, chances.reshape(judge.shape)]
        uniform += [judge, said, np.ones(judge.shape, dtype=bool)]
    return tuple(weighted), tuple(uniform), scenario.truth


def test_weighted_by_the_chance_asked_the_estimate_is_unbiased_and_its_bounds_cover() -> None:
    """4000 races a seed, seeds 11, 12, 13 measured: mean estimate −0.987, −0.987, −0.980 (truth −1; chances up to
    tenfold apart, where the fixed-size draw's approximation shows), lower bound covering 0.950–0.951, upper
    0.955–0.962, se 0.95–0.97 of the estimates' spread; read as a uniform sample, the same labels give −1.15 and the
    upper bound covers 0.83."""
    weighted, uniform, truth = active_world(seed=11)
    found = corrected_difference(*weighted)
    assert float(found.estimate.mean()) == pytest.approx(truth, abs=0.03)
    assert float(np.mean(found.lower <= truth)) >= 0.93
    assert float(np.mean(found.upper >= truth)) >= 0.93
    assert float(np.mean(found.se)) >= 0.8 * float(found.estimate.std())
    assert 19 < float(found.labels.mean()) < 21  # the budget is spent, in expectation
    unweighted = corrected_difference(*uniform)  # the weights dropped: the labels lean toward low scores
    assert float(unweighted.estimate.mean()) - truth < -0.1
    assert float(np.mean(unweighted.upper >= truth)) < 0.9
