"""Anytime-valid bounds for a bounded mean: the betting confidence sequence behind racing to a verdict.

Racing to a verdict looks at each candidate's bounds after every wave and stops an entry the moment its verdict
settles. A fixed-sample interval — the nested bootstrap of `gradebench._stats.paired`, a t or normal interval — cannot
be
used that way. Its promise is about one interval, computed once, at a number of inputs fixed in advance: that
interval misses the truth 5% of the time. Looking after every wave and stopping at the first look that says
``as good`` buys a fresh 5% lottery ticket at every look, and a difference that drifts across the line by chance at
any one of them ends the race with a false verdict. In this module's own simulation (tests/stats/test_sequential.py,
benchmarks/sequential_coverage.py) a one-sided 95% normal interval looked at after every input from the 8th to
the 200th excludes the true mean from a given side in 16–50% of the sequences, not 5%.

The bound here is built so that looking is free. For every candidate mean m it keeps the capital of a gambler who
starts with 1 and, input by input, stakes a fraction of that capital on "the mean is above m", sizing each stake only
from the inputs already seen; a second gambler bets the other way. If m is the true mean every bet is fair, so each
gambler's capital is a nonnegative martingale, and by Ville's inequality the chance that it *ever* reaches 1/α — at
any input, however long the race runs, whenever anyone looks or stops — is at most α. The bound is the set of m
whose gambler has not (yet) reached 1/α, so the true mean is ever excluded with probability at most α: checking
after every wave, and stopping an entry as soon as its verdict settles, keeps the error rate at α. The price is
width: at a given number of inputs the bound is wider than a fixed-sample interval (about 2× at 50 inputs).

The method is the predictable plug-in hedged capital confidence sequence of Waudby-Smith & Ramdas,
"Estimating means of bounded random variables by betting", JRSS-B 86(1), 2024 (doi:10.1093/jrsssb/qkad009,
arXiv:2010.09686), as in the authors' `confseq` package (``betting.hedged_cs``, ``lambda_predmix_eb``), with the
values rescaled to [0, 1] (x = (value − lo)/(hi − lo)):

- running estimates (the paper's predictable plug-in): μ̂_t = (1/2 + Σ_{i≤t} x_i)/(t + 1) and
  σ̂²_t = (1/4 + Σ_{i≤t} (x_i − μ̂_i)²)/(t + 1), with μ̂_0 = 1/2, σ̂²_0 = 1/4;
- the bet for input t, from inputs before it only: λ̇_t = sqrt(2 log(1/α) / (σ̂²_{t−1} · t · log(1 + t)));
- the capital against "mean = m" from above and below:
  K⁺_t(m) = Π_{i≤t} (1 + λ⁺_i(m)(x_i − m)) with λ⁺_i(m) = min(λ̇_i, c/m), and
  K⁻_t(m) = Π_{i≤t} (1 − λ⁻_i(m)(x_i − m)) with λ⁻_i(m) = min(λ̇_i, c/(1 − m));
- the bounds: the lower bound is the largest m with K⁺_t(m) ≥ 1/α (K⁺_t falls as m rises), the upper bound
  the smallest m with K⁻_t(m) ≥ 1/α, each then intersected with all earlier bounds (running intersection).

Each side alone is a one-sided (1 − α) confidence sequence, like the fixed design's one-sided bounds at ``level``.
Together they are the paper's hedged capital process K^± = max(θK⁺, (1 − θ)K⁻) with θ = 1/2 at level 2α (its
Theorem 3): max(K⁺, K⁻)/2 ≥ 1/(2α) exactly when one side reaches 1/α, and log(1/α) = log(2/(2α)) is the paper's
hedged λ at 2α. So both bounds hold at every input at once with probability ≥ 1 − 2α; pass α/2 for a two-sided
(1 − α) sequence. Truncation c < 1 keeps every factor ≥ 1 − c > 0; the paper recommends c = 1/2 or 3/4, and
`TRUNCATION` is 3/4: on score-like differences (sd ≈ 2 points) the bound then settles ``as good`` at margin 1
after a median of 44 inputs instead of 62 (benchmarks/sequential_coverage.py).

The capital is kept as log-capital on a fixed grid of candidate means (``grid`` steps across [lo, hi]), so an
update costs O(grid) whatever the number of inputs; each bound is rounded outward to the grid, which keeps it valid.
A grid point outside the bounds stays excluded, so its capital is dropped: updates get cheaper as the bounds narrow,
and the bounds never pass each other — values that contradict earlier ones make them meet, which values sharing
one mean do with probability ≤ 2α.

What the guarantee needs: values in [lo, hi], each with the same mean given the values before it (inputs drawn in
a seeded random order from one population of tasks, the number of runs behind each value fixed before it is seen),
fed in input order — not in the order runs finish, which can depend on the outcome.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from typing import Final

import numpy as np

from .paired import AS_GOOD, DEFAULT_MARGIN, INCONCLUSIVE, MIN_INPUTS, WORSE, VerdictLabel, number_text

__all__ = [
    "GRID",
    "SCORE_DIFF",
    "TRUNCATION",
    "BettingBounds",
    "SequentialVerdict",
    "betting_bounds",
    "sequential_verdict",
]

TRUNCATION: Final = 0.75
"""Truncation c of the bets, λ⁺(m) ≤ c/m and λ⁻(m) ≤ c/(1 − m) on the [0, 1] scale (the paper: 1/2 or 3/4).

3/4 lets the bets grow when the differences are concentrated, as score differences are: a quarter narrower at 50
inputs than 1/2 for sd ≈ 2 points. 1/2 is up to a tenth narrower when they spread over the whole range."""

GRID: Final = 2000
"""Steps of the grid of candidate means across [lo, hi]: 0.01 points on the [−10, 10] scale of score differences."""

SCORE_DIFF: Final = (-10.0, 10.0)
"""The range of a paired difference of two 0..10 scores."""


def _check(lo: float, hi: float, alpha: float, c: float, grid: int) -> None:
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"need finite lo < hi, got lo={lo}, hi={hi}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not 0.0 < c < 1.0:
        raise ValueError(f"c must be in (0, 1), got {c}")
    if isinstance(grid, bool) or not isinstance(grid, int | np.integer) or grid < 2:
        raise ValueError(f"grid must be an integer >= 2, got {grid}")


def _rescaled(values: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """``values`` mapped onto [0, 1]; a ValueError names the first value outside [lo, hi] (or not a number)."""
    bad = ~((values >= lo) & (values <= hi))  # NaN compares false: it is bad too
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        at = where[0] if len(where) == 1 else where
        raise ValueError(f"value {float(values[where])} at position {at} is outside [{lo:g}, {hi:g}]")
    return (values - lo) / (hi - lo)


class _Capital:
    """Log-capital of both one-sided betting processes on the grid, for a batch of independent sequences (rows).

    A grid point outside a row's current bounds is excluded for good (running intersection), so its capital is
    no longer needed: each step updates only the points still inside some row's bounds, and an update gets cheaper
    as the bounds narrow. The bounds are kept as grid indices: ``low`` (−1: the floor 0) and ``high`` (``m.size``:
    the ceiling 1).
    """

    def __init__(self, batch: int, alpha: float, c: float, grid: int) -> None:
        self.m = np.arange(1, grid) / grid  # candidate means inside (0, 1)
        self.cap_up = c / self.m  # λ⁺(m) ≤ c/m
        self.cap_down = c / (1.0 - self.m)  # λ⁻(m) ≤ c/(1 − m)
        self.log_up = np.zeros((batch, self.m.size))  # log K⁺_t(m)
        self.log_down = np.zeros((batch, self.m.size))  # log K⁻_t(m)
        self.threshold = math.log(1.0 / alpha)
        self.log_term = 2.0 * math.log(1.0 / alpha)
        self.t = 0
        self.total = np.zeros(batch)  # Σ x_i
        self.squares = np.zeros(batch)  # Σ (x_i − μ̂_i)²
        self.var = np.full(batch, 0.25)  # σ̂²_{t−1}: the estimate before the next value
        self.low = np.full(batch, -1)
        self.high = np.full(batch, self.m.size)

    def step(self, x: np.ndarray) -> None:
        """Take one value per sequence (shape (batch,), on the [0, 1] scale)."""
        t = self.t + 1
        a, b = int(self.low.min()) + 1, int(self.high.max())  # the grid points still inside some row's bounds
        if a < b:
            bet = np.sqrt(self.log_term / (self.var * t * math.log1p(t)))[:, None]  # λ̇_t, predictable
            gap = x[:, None] - self.m[a:b]
            up, down = self.log_up[:, a:b], self.log_down[:, a:b]
            up += np.log1p(np.minimum(bet, self.cap_up[a:b]) * gap)
            down += np.log1p(-np.minimum(bet, self.cap_down[a:b]) * gap)
            # K⁺ falls and K⁻ rises with m, so within a row's bounds the newly excluded points are a prefix (by K⁺)
            # and a suffix (by K⁻): counting them moves each bound inward.
            cols = np.arange(a, b)
            inside = (cols > self.low[:, None]) & (cols < self.high[:, None])
            self.low = self.low + np.count_nonzero(inside & (up >= self.threshold), axis=1)
            self.high = self.high - np.count_nonzero(inside & (down >= self.threshold), axis=1)
        self.t = t
        self.total += x
        self.squares += (x - (0.5 + self.total) / (t + 1)) ** 2
        self.var = (0.25 + self.squares) / (t + 1)

    @property
    def lower(self) -> np.ndarray:
        """The running lower bounds on the [0, 1] scale."""
        return np.where(self.low >= 0, self.m[np.clip(self.low, 0, self.m.size - 1)], 0.0)

    @property
    def upper(self) -> np.ndarray:
        """The running upper bounds on the [0, 1] scale."""
        return np.where(self.high < self.m.size, self.m[np.clip(self.high, 0, self.m.size - 1)], 1.0)


def betting_bounds(
    values: Iterable[float] | np.ndarray,
    lo: float,
    hi: float,
    *,
    alpha: float = 0.05,
    c: float = TRUNCATION,
    grid: int = GRID,
) -> tuple[np.ndarray, np.ndarray]:
    """The running lower and upper bounds after each value, for one sequence or many at once.

    ``values`` is one sequence (shape ``(t,)``) or a batch of independent sequences (shape ``(sequences, t)``),
    each value in [lo, hi]. Returns ``(lower, upper)`` of the same shape: after the k-th value of a sequence, its
    one-sided (1 − alpha) anytime-valid bounds on the mean (method in the module docstring). A ValueError names the
    first value outside [lo, hi].
    """
    _check(lo, hi, alpha, c, grid)
    data = np.asarray(values, dtype=float)
    if data.ndim not in (1, 2):
        raise ValueError(f"values must be one sequence or a 2-d batch of sequences, got shape {data.shape}")
    x = np.atleast_2d(_rescaled(data, lo, hi))
    capital = _Capital(x.shape[0], alpha, c, grid)
    lower, upper = np.empty(x.shape), np.empty(x.shape)
    for k in range(x.shape[1]):
        capital.step(x[:, k])
        lower[:, k], upper[:, k] = capital.lower, capital.upper
    lower, upper = lo + (hi - lo) * lower, lo + (hi - lo) * upper
    return (lower[0], upper[0]) if data.ndim == 1 else (lower, upper)


class BettingBounds:
    """Anytime-valid lower and upper bounds on the mean of values in [lo, hi], updated as values arrive.

    Each bound alone holds at every number of values at once with probability ≥ 1 − ``alpha``; both together with
    probability ≥ 1 − 2·``alpha``. An update costs O(``grid``), whatever the number of values already taken.
    """

    def __init__(self, lo: float, hi: float, *, alpha: float = 0.05, c: float = TRUNCATION, grid: int = GRID) -> None:
        _check(lo, hi, alpha, c, grid)
        self.lo, self.hi, self.alpha, self.c, self.grid = float(lo), float(hi), alpha, c, grid
        self._capital = _Capital(1, alpha, c, grid)
        self._sum = 0.0

    def update(self, values: float | Iterable[float]) -> BettingBounds:
        """Take one value, or several in order (a wave, in input order); returns self.

        Values are checked before any is taken: a ValueError names the first one outside [lo, hi].
        """
        data = np.atleast_1d(np.asarray(values, dtype=float))
        if data.ndim != 1:
            raise ValueError(f"values must be a number or a flat sequence, got shape {data.shape}")
        x = _rescaled(data, self.lo, self.hi)
        for value in x:
            self._capital.step(np.array([value]))
        self._sum += float(data.sum())
        return self

    @property
    def n(self) -> int:
        """Values taken so far."""
        return self._capital.t

    @property
    def mean(self) -> float | None:
        """The plain mean of the values taken; None before the first."""
        return self._sum / self.n if self.n else None

    @property
    def lower(self) -> float:
        """The running lower bound (``lo`` before any value excludes anything)."""
        return self.lo + (self.hi - self.lo) * float(self._capital.lower[0])

    @property
    def upper(self) -> float:
        """The running upper bound (``hi`` before any value excludes anything)."""
        return self.lo + (self.hi - self.lo) * float(self._capital.upper[0])


@dataclass(frozen=True, kw_only=True)
class SequentialVerdict:
    """A non-inferiority verdict from anytime-valid bounds: safe to recompute after every wave."""

    verdict: VerdictLabel
    """``as good``, ``worse`` or ``inconclusive``."""
    lower: float | None
    """Anytime-valid one-sided lower bound of the mean difference at 1 − alpha; None without values."""
    upper: float | None
    """Anytime-valid one-sided upper bound of the mean difference at 1 − alpha; None without values."""
    mean: float | None
    """The plain mean of the paired differences; None without values."""
    n: int
    """Paired inputs (values) used."""
    margin: float
    """How many points worse still counts as as good."""
    alpha: float
    """Error rate of each one-sided bound, over every look at once."""
    settled_at: int | None
    """For a settled verdict: the number of inputs at which it first settled (the race would stop there)."""
    reason: str
    """One sentence saying why."""


def sequential_verdict(
    values: Iterable[float] | np.ndarray,
    margin: float = DEFAULT_MARGIN,
    *,
    alpha: float = 0.05,
    min_inputs: int = MIN_INPUTS,
    lo: float = SCORE_DIFF[0],
    hi: float = SCORE_DIFF[1],
    c: float = TRUNCATION,
    grid: int = GRID,
) -> SequentialVerdict:
    """Is the candidate at most ``margin`` points worse than the reference entry, from paired differences in order?

    ``values`` are the per-input differences, in input order: mean(candidate scores on the input) − mean(reference
    entry's scores on it), each in [lo, hi] (default [−10, 10]). The bounds are `betting_bounds` at ``alpha``.
    JudgeScore: ``as good`` once lower > −margin; ``worse`` once upper < −margin; otherwise ``inconclusive`` — also
    below ``min_inputs`` values whatever the bounds say, as in `gradebench._stats.paired.non_inferiority`. A verdict,
    once settled, stays: the bounds only tighten and never pass each other, so later values can make them meet
    (the reason then says so: with one mean that has probability ≤ 2·alpha) but not overturn it. The chance
    of a false ``as good`` (true difference ≤ −margin) ever being reported, however often this is recomputed and
    whenever the race stops, is at most ``alpha``; likewise for a false ``worse``.
    """
    if margin < 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    if min_inputs < 1:
        raise ValueError(f"min_inputs must be >= 1, got {min_inputs}")
    data = np.asarray(values if isinstance(values, np.ndarray) else list(values), dtype=float)
    if data.ndim != 1:
        raise ValueError(f"values must be a flat sequence, got shape {data.shape}")
    lower, upper = betting_bounds(data, lo, hi, alpha=alpha, c=c, grid=grid)
    n, line = data.size, -margin
    make = partial(SequentialVerdict, n=n, margin=margin, alpha=alpha)
    if n == 0:
        return make(
            verdict=INCONCLUSIVE, lower=None, upper=None, mean=None, settled_at=None, reason="no paired inputs yet"
        )
    low, high = float(lower[-1]), float(upper[-1])
    make = partial(make, lower=low, upper=high, mean=float(data.mean()))
    bounds = f"[{number_text(low, 2)}, {number_text(high, 2)}]"
    if n < min_inputs:
        leaning = AS_GOOD if low > line else WORSE if high < line else None
        said = f"bounds {bounds} say {leaning}, but" if leaning else f"bounds {bounds}"
        reason = f"{said} on {n} inputs only: a verdict needs at least {min_inputs}"
        return make(verdict=INCONCLUSIVE, settled_at=None, reason=reason)
    counted = np.arange(1, n + 1) >= min_inputs
    good, bad = np.flatnonzero(counted & (lower > line)), np.flatnonzero(counted & (upper < line))
    good_at = int(good[0]) + 1 if good.size else n + 1
    bad_at = int(bad[0]) + 1 if bad.size else n + 1
    met = ""
    if high - low < (hi - lo) / grid + 1e-9:
        met = (
            ", and the bounds have met since — values with one mean do so with probability ≤ 2·alpha: "
            "check that inputs came in their drawn order and nothing changed mid-race"
        )
    if good_at < bad_at:
        reason = (
            f"lower bound {number_text(low, 2)} > {number_text(line)}: within the margin "
            f"(settled at input {good_at}{met})"
        )
        return make(verdict=AS_GOOD, settled_at=good_at, reason=reason)
    if bad_at < good_at:
        reason = (
            f"upper bound {number_text(high, 2)} < {number_text(line)}: worse by more than the margin "
            f"(settled at input {bad_at}{met})"
        )
        return make(verdict=WORSE, settled_at=bad_at, reason=reason)
    if good_at <= n:
        reason = (
            f"bounds {bounds} crossed {number_text(line)} from both sides at input {good_at}: "
            "the values contradict each other"
        )
        return make(verdict=INCONCLUSIVE, settled_at=None, reason=reason)
    reason = f"bounds {bounds} straddle {number_text(line)} after {n} inputs: more inputs would narrow them{met}"
    return make(verdict=INCONCLUSIVE, settled_at=None, reason=reason)
