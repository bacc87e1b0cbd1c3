"""The verdict's interval on tied and 0/1 paired scores: never degenerate, never "as good" on a sample that cannot
exclude the margin (`gradebench._stats.adjusted`, used by the fixed design and the group-sequential looks)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from gradebench._stats.adjusted import pseudo_pair_se
from gradebench._stats.groupseq import look_verdict, planned_looks
from gradebench._stats.paired import AS_GOOD, INCONCLUSIVE, non_inferiority


def runs_frame(candidate: list[float], reference: list[float]) -> pl.DataFrame:
    """One run of each entry per input, as a report's runs frame holds them."""
    rows = [
        (f"q{i}", "candidate", entry, 0, True, float(score))
        for i, pair in enumerate(zip(candidate, reference, strict=True))
        for entry, score in zip(("cand", "ref"), pair, strict=True)
    ]
    return pl.DataFrame(rows, schema=["input_id", "role", "entry", "repeat", "ok", "score"], orient="row")


def test_on_a_0_1_score_it_is_the_bonett_price_standard_error() -> None:
    diffs = [10.0] * 3 + [-10.0] * 5 + [0.0] * 12  # f12 = 3 won, f21 = 5 lost, 12 tied
    n = len(diffs)
    p12, p21 = (3 + 1) / (n + 2), (5 + 1) / (n + 2)  # Bonett & Price 2012: one pseudo pair each discordant cell
    assert pseudo_pair_se(diffs) == pytest.approx(10 * math.sqrt((p12 + p21 - (p12 - p21) ** 2) / (n + 2)))
    one_won = 10 * math.sqrt((2 / 18 + 1 / 18 - (1 / 18) ** 2) / 18)  # f12 = 1, f21 = 0 of 16
    assert pseudo_pair_se([10.0] + [0.0] * 15) == pytest.approx(one_won)  # no loss drawn: a pseudo loss of −10
    assert pseudo_pair_se([0.0] * 16) == pytest.approx(10 * math.sqrt(2 / 18) / math.sqrt(18))  # all tied: ±10


def test_every_pair_tied_gives_an_interval_and_no_as_good_at_16() -> None:
    # both models right on the same 8 questions and wrong on the same 8: the bootstrap said [0, 0], "as good"
    test = non_inferiority(runs_frame([10] * 8 + [0] * 8, [10] * 8 + [0] * 8), "cand", "ref", margin=1.0)
    assert test.lower is not None and test.upper is not None
    assert test.lower < -1.0 < 1.0 < test.upper  # 0 of 16 discordant leaves a loss rate of 10% or more possible
    assert test.verdict == INCONCLUSIVE


def test_no_loss_drawn_gives_no_as_good_at_16() -> None:
    # the candidate won one question and lost none: every bootstrap resample is >= 0, its lower bound 0
    test = non_inferiority(runs_frame([10] * 9 + [0] * 7, [10] * 8 + [0] * 8), "cand", "ref", margin=1.0)
    assert test.lower is not None and test.lower < -1.0
    assert test.verdict == INCONCLUSIVE and test.p_value is not None and test.p_value > 0.025


def test_the_same_samples_at_64_settle() -> None:
    # where the sample is large enough to exclude the margin, the floor leaves "as good" to be said
    tied = non_inferiority(runs_frame([10] * 32 + [0] * 32, [10] * 32 + [0] * 32), "cand", "ref", margin=1.0)
    assert tied.verdict == AS_GOOD and tied.lower is not None and -1.0 < tied.lower < 0.0


def test_the_group_sequential_looks_are_not_sure_of_a_sample_without_a_loss() -> None:
    looks = planned_looks(16)
    one_win = [(f"q{i}", 10.0 if i == 3 else 0.0) for i in range(16)]
    verdict = look_verdict(one_win, looks, 1.0)
    assert verdict.verdict == INCONCLUSIVE  # the plain t said "as good" at the last look: lower bound −0.79
    assert verdict.lower is not None and verdict.lower < -1.0
    tied = look_verdict([(f"q{i}", 0.0) for i in range(16)], looks, 1.0)
    assert tied.lower is not None and tied.upper is not None and tied.lower < -1.0 < 1.0 < tied.upper  # not [0, 0]


def test_coverage_on_a_0_1_score_where_the_models_agree_on_78_percent() -> None:
    # MMLU-like: the candidate loses 16% of the questions and wins 6%, truth −1 (on the margin); 16 questions a race
    rng = np.random.default_rng(0)
    races, truth, covered, as_good = 500, -1.0, 0, 0
    for _ in range(races):
        u = rng.random(16)
        candidate = np.where(u < 0.16, 0.0, np.where(u < 0.22, 10.0, 5.0))  # 5: a tie, whatever both scored
        reference = np.where(u < 0.16, 10.0, np.where(u < 0.22, 0.0, 5.0))
        test = non_inferiority(runs_frame(list(candidate), list(reference)), "cand", "ref", margin=1.0)
        assert test.lower is not None and test.upper is not None
        covered += test.lower <= truth <= test.upper
        as_good += test.verdict == AS_GOOD
    # measured: 479 of 500 covered and 13 "as good" (seeds 0-5: 469-484 and 8-16); the bootstrap alone: 449 and 25
    assert covered / races >= 0.92 and as_good / races <= 0.045
