"""gradebench._stats.sequential: anytime-valid betting bounds, their coverage checked by simulation against a known
truth."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from gradebench._stats.paired import AS_GOOD, INCONCLUSIVE, WORSE
from gradebench._stats.sequential import GRID, BettingBounds, SequentialVerdict, betting_bounds, sequential_verdict

ALPHA = 0.05
SEQUENCES, LENGTH = 500, 200
ALLOWANCE = 3 * math.sqrt(ALPHA * (1 - ALPHA) / SEQUENCES)
"""Monte-Carlo allowance on a miss rate of α over SEQUENCES sequences: 3 binomial standard deviations (0.029)."""

COARSE = 400
"""Grid for the coverage runs: 0.05 points. Every true mean below is a grid point, and a bound that merely touches
the truth counts as a miss; the counted event is then exactly "the capital at the true mean reached 1/α", which does
not depend on the grid's resolution. So the coarse grid checks the same events as the default one, five times faster."""


def score_differences(rng: np.random.Generator, shape: tuple[int, int]) -> tuple[np.ndarray, float]:
    """Differences of two 0..10 scores: mostly within a point or two, now and then a failure costing 8 points."""
    support = np.array([-8.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0])
    p = np.array([0.05, 0.05, 0.10, 0.20, 0.35, 0.20, 0.05])
    return rng.choice(support, size=shape, p=p), float(support @ p)  # mean −0.65


def extremes(rng: np.random.Generator, shape: tuple[int, int]) -> tuple[np.ndarray, float]:
    """Two points at the ends of the range (the largest variance a bounded value can have), +10 one time in 4."""
    return np.where(rng.random(shape) < 0.25, 10.0, -10.0), -5.0


def beta_like(rng: np.random.Generator, shape: tuple[int, int]) -> tuple[np.ndarray, float]:
    """A continuous skewed spread over the whole range: 20·Beta(2, 3) − 10."""
    return 20.0 * rng.beta(2.0, 3.0, shape) - 10.0, -2.0


def realistic(rng: np.random.Generator, shape: tuple[int, int], mean: float = 0.0) -> tuple[np.ndarray, float]:
    """Half-point differences with sd ≈ 2 around ``mean`` (symmetric, so the clipped mean is ``mean`` when 0)."""
    return np.clip(np.round((mean + rng.normal(0.0, 2.0, shape)) * 2) / 2, -10.0, 10.0), mean


def naive_bounds(x: np.ndarray, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """The fixed-sample one-sided normal bounds mean ∓ z_(1−α)·s/√t after every value (each row a sequence)."""
    t = np.arange(1, x.shape[-1] + 1)
    mean = np.cumsum(x, axis=-1) / t
    var = np.maximum(np.cumsum(x**2, axis=-1) - t * mean**2, 0.0) / np.maximum(t - 1, 1)
    half = NormalDist().inv_cdf(1 - alpha) * np.sqrt(var / t)
    return mean - half, mean + half


@pytest.mark.parametrize("draw", [score_differences, extremes, beta_like, realistic])
def test_the_bounds_cover_the_mean_at_every_look_and_a_naive_interval_does_not(draw) -> None:
    x, mu = draw(np.random.default_rng(20), (SEQUENCES, LENGTH))
    assert round((mu + 10) / 20 * COARSE, 9).is_integer()  # the truth is a grid point (see COARSE)
    lower, upper = betting_bounds(x, -10.0, 10.0, alpha=ALPHA, grid=COARSE)
    missed_low = float(np.mean((lower >= mu - 1e-9).any(axis=1)))  # checked at every t, touching counts
    missed_high = float(np.mean((upper <= mu + 1e-9).any(axis=1)))
    assert missed_low <= ALPHA + ALLOWANCE, missed_low
    assert missed_high <= ALPHA + ALLOWANCE, missed_high
    # The reason the module exists: a one-sided 95% normal interval, looked at after every input from the 8th on
    # (as a race looks after every wave), excludes the truth far more often than 5% (measured: 0.18–0.46 a side).
    naive_low, naive_high = naive_bounds(x)
    looked = np.arange(1, LENGTH + 1) >= 8
    naive_missed_low = float(np.mean(((naive_low > mu) & looked).any(axis=1)))
    naive_missed_high = float(np.mean(((naive_high < mu) & looked).any(axis=1)))
    clearly = ALPHA + 2 * ALLOWANCE  # 6 binomial standard deviations above α
    assert naive_missed_low > clearly and naive_missed_high > clearly, (naive_missed_low, naive_missed_high)


def plain_lower(values: np.ndarray, lo: float, hi: float, alpha: float, c: float) -> np.ndarray:
    """The running lower bound read straight off the paper, without a grid: bisection on the capital K⁺_t(m)."""
    x = (np.asarray(values, dtype=float) - lo) / (hi - lo)
    bets, total, squares, var = [], 0.0, 0.0, 0.25
    for t, value in enumerate(x, start=1):
        bets.append(math.sqrt(2 * math.log(1 / alpha) / (var * t * math.log(1 + t))))
        total += value
        squares += (value - (0.5 + total) / (t + 1)) ** 2
        var = (0.25 + squares) / (t + 1)

    def log_capital(m: float, t: int) -> float:
        return sum(math.log(1 + min(bets[i], c / m) * (x[i] - m)) for i in range(t))

    threshold, best, out = math.log(1 / alpha), 0.0, []
    for t in range(1, x.size + 1):
        if log_capital(1e-12, t) >= threshold:
            rejected, kept = 1e-12, 1.0  # K⁺ falls as m rises: bisect between a rejected and a kept mean
            for _ in range(60):
                mid = (rejected + kept) / 2
                rejected, kept = (mid, kept) if log_capital(mid, t) >= threshold else (rejected, mid)
            best = max(best, rejected)
        out.append(best)
    return lo + (hi - lo) * np.array(out)


@pytest.mark.parametrize("grid", [100, GRID])
@pytest.mark.parametrize("c", [0.5, 0.75])
def test_the_grid_bounds_are_the_papers_bounds_rounded_outward(grid: int, c: float) -> None:
    values, _ = realistic(np.random.default_rng(5), (1, 40), mean=-0.5)
    lower, upper = betting_bounds(values[0], -10.0, 10.0, alpha=ALPHA, c=c, grid=grid)
    exact_lower = plain_lower(values[0], -10.0, 10.0, ALPHA, c)
    exact_upper = -plain_lower(-values[0], -10.0, 10.0, ALPHA, c)  # K⁻ on x is K⁺ on the mirrored values
    step = 20.0 / grid
    assert exact_lower[-1] > -10.0 and exact_upper[-1] < 10.0  # both sides have excluded something by then
    assert np.all(lower <= exact_lower + 1e-9) and np.all(lower > exact_lower - step - 1e-9)
    assert np.all(upper >= exact_upper - 1e-9) and np.all(upper < exact_upper + step + 1e-9)


def test_bounds_only_tighten_and_waves_give_the_same_bounds_as_one_value_at_a_time() -> None:
    values, _ = score_differences(np.random.default_rng(9), (1, 120))
    lower, upper = betting_bounds(values[0], -10.0, 10.0)
    assert np.all(np.diff(lower) >= 0) and np.all(np.diff(upper) <= 0) and np.all(lower <= upper)
    bounds = BettingBounds(-10.0, 10.0)
    assert (bounds.n, bounds.mean, bounds.lower, bounds.upper) == (0, None, -10.0, 10.0)
    end = 0
    for size in [1, 7, 12, 40, 59]:  # waves of uneven sizes, in input order
        bounds.update(values[0, end : end + size])
        end += size
        assert (bounds.lower, bounds.upper) == (lower[end - 1], upper[end - 1])
    assert bounds.update(float(values[0, end])).n == end + 1
    assert bounds.mean == pytest.approx(values[0, : end + 1].mean())


def test_batch_rows_are_independent_sequences() -> None:
    values, _ = beta_like(np.random.default_rng(4), (3, 50))
    lower, upper = betting_bounds(values, -10.0, 10.0)
    for row in range(3):
        one_lower, one_upper = betting_bounds(values[row], -10.0, 10.0)
        assert np.array_equal(lower[row], one_lower) and np.array_equal(upper[row], one_upper)


def test_width_on_realistic_differences_shrinks_like_one_over_root_t() -> None:
    # Paired differences with sd ≈ 2 points and a true difference of 0, default grid and c, 200 sequences
    # (measured with this seed): the bound settles `as good` at margin 1 (lower > −1) after a median of 45 inputs
    # (90th percentile 71) — a fixed-sample one-sided 95% bound would need about (1.645·2/1)² ≈ 11 — and its
    # width (upper − lower, each one-sided 95%) is 3.1 / 1.8 / 1.1 / 0.75 points at t = 25 / 50 / 100 / 200,
    # against 1.3 / 0.93 / 0.66 / 0.46 for the naive interval: about 2× at 50 inputs, 1.6× at 200.
    x, _ = realistic(np.random.default_rng(3), (200, LENGTH))
    lower, upper = betting_bounds(x, -10.0, 10.0)
    width = (upper - lower).mean(axis=0)
    slope = math.log(width[199] / width[49]) / math.log(4)  # log-log slope from t = 50 to t = 200
    assert -0.8 < slope < -0.45, slope  # ~1/√t, a little faster while the truncation still binds
    assert width[199] < 1.0
    settled = np.where((lower > -1.0).any(axis=1), np.argmax(lower > -1.0, axis=1) + 1, LENGTH + 1)
    assert np.median(settled) <= 60 and np.quantile(settled, 0.9) <= 100, np.quantile(settled, [0.5, 0.9])


def test_a_clearly_as_good_candidate_is_as_good_and_stays_so() -> None:
    values, _ = realistic(np.random.default_rng(11), (1, 100))
    result = sequential_verdict(values[0], margin=1.0)
    assert isinstance(result, SequentialVerdict)
    assert result.verdict == AS_GOOD and result.n == 100 and result.lower is not None and result.lower > -1.0
    assert result.settled_at is not None and 8 <= result.settled_at < 100
    assert result.reason.startswith(f"lower bound {result.lower:.2f}".replace("-", "\u2212"))
    assert f"settled at input {result.settled_at}" in result.reason
    again = sequential_verdict(values[0, : result.settled_at])  # the race would have stopped right there
    assert again.verdict == AS_GOOD and again.settled_at == result.settled_at
    before = sequential_verdict(values[0, : result.settled_at - 1])
    assert before.verdict == INCONCLUSIVE and "straddle \u22121.0" in before.reason


def test_a_clearly_worse_candidate_is_worse() -> None:
    values, _ = realistic(np.random.default_rng(12), (1, 80), mean=-4.0)
    result = sequential_verdict(values[0], margin=1.0)
    assert result.verdict == WORSE and result.upper is not None and result.upper < -1.0
    assert result.reason.startswith("upper bound") and "worse by more than the margin" in result.reason
    assert result.settled_at is not None and result.settled_at >= 8


def test_fewer_than_min_inputs_stays_inconclusive() -> None:
    result = sequential_verdict([0.0] * 5, margin=1.0)
    assert result.verdict == INCONCLUSIVE and result.settled_at is None and result.n == 5
    assert result.reason.endswith("on 5 inputs only: a verdict needs at least 8")
    values, _ = realistic(np.random.default_rng(11), (1, 100))
    leaning = sequential_verdict(values[0], margin=1.0, min_inputs=150)
    assert leaning.verdict == INCONCLUSIVE and "say as good, but on 100 inputs only" in leaning.reason
    nothing = sequential_verdict([], margin=1.0)
    assert (nothing.verdict, nothing.n, nothing.lower, nothing.mean) == (INCONCLUSIVE, 0, None, None)
    assert nothing.reason == "no paired inputs yet"


def test_a_settled_verdict_stands_and_contradicting_values_make_the_bounds_meet() -> None:
    # As good on the first 60 inputs, then 10 points worse on every input: values with one mean would make the
    # bounds meet with probability ≤ 2α; here they do, the upper bound stopping at the lower one, which stays put.
    result = sequential_verdict([0.0] * 60 + [-10.0] * 300, margin=1.0)
    assert result.lower is not None and result.upper is not None
    assert result.lower > -1.0 and result.upper - result.lower == pytest.approx(20.0 / GRID)
    assert result.verdict == AS_GOOD and result.settled_at is not None and result.settled_at <= 60
    assert "and the bounds have met since" in result.reason


@pytest.mark.parametrize("bad", [10.5, -10.01, float("nan"), float("inf")])
def test_a_value_out_of_range_raises_naming_it(bad: float) -> None:
    values = [0.0, 1.0, bad, 2.0]
    with pytest.raises(ValueError, match=rf"value {re_float(bad)} at position 2 is outside \[-10, 10\]"):
        sequential_verdict(values)
    bounds = BettingBounds(-10.0, 10.0).update([0.5])
    with pytest.raises(ValueError, match=rf"value {re_float(bad)} at position 2"):
        bounds.update(values)
    assert bounds.n == 1  # nothing of the rejected wave was taken
    with pytest.raises(ValueError, match=r"at position \(1, 2\)"):
        betting_bounds(np.array([[0.0] * 4, values]), -10.0, 10.0)


def re_float(value: float) -> str:
    return str(value).replace(".", r"\.")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"alpha": 0.0}, "alpha must be in"),
        ({"alpha": 1.5}, "alpha must be in"),
        ({"c": 1.0}, "c must be in"),
        ({"grid": 1}, "grid must be an integer >= 2"),
        ({"grid": 10.5}, "grid must be an integer >= 2"),
        ({"lo": 1.0, "hi": 1.0}, "need finite lo < hi"),
        ({"margin": -0.5}, "margin must be >= 0, got -0.5"),
        ({"min_inputs": 0}, "min_inputs must be >= 1, got 0"),
    ],
)
def test_misuse_raises_with_the_value(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        sequential_verdict([0.0] * 10, **kwargs)
