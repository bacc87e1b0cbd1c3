"""Cohen's weighted κ with quadratic weights: how far two sets of scores of the same runs agree, beyond chance.

The one κ of gradebench: a judge against a judge (`gradebench._judge.agreement`) and a judge against a person
(`gradebench._verdict.label_agreement`) are the same figure on the same pairs of scores.

With quadratic weights on the score itself, κ = 1 − Σ w·observed / Σ w·expected-by-chance is a ratio of moments,

    κ = 1 − mean((a − b)²) / (var a + var b + (mean a − mean b)²)        (population variances)

— the observed squared disagreement over the one expected of two scorers that scored independently with the same
spreads. On whole points 0..10 this is the textbook weighted κ of the 11 × 11 table with w_ij = ((i − j)/10)² (Fleiss
& Cohen 1973; the 1/10² cancels), and it equals Lin's concordance coefficient. No score is rounded to a category:
a half point (a judge's mean of the two orders of a swap check) counts as a half.

A side that never varies against one that does has κ 0, the formula's own value (the squared disagreement is then
exactly the one chance gives): a judge that gives every run one score cannot tell runs apart. κ is undefined (NaN, or
None for `kappa`) only when neither side varies (0 / 0). A side's variance at most `FLAT` of its mean square is taken
as none: it is what rounding leaves of sums of identical scores.

`kappa_interval` is κ's confidence interval from per-unit sums (a unit is a label, or an input whose runs are alike):
the hull of two intervals (`gradebench._stats.hull`, which Spearman's ρ of labels shares), each short where the other
is not — a delete-one-unit jackknife on Fisher's z scale with Student's t at m − 1 degrees of freedom (Lin 1989's
scale for the concordance coefficient), and a Bayesian bootstrap of the units (Rubin 1981) whose every draw also holds
one pseudo-run of complete disagreement (κ −1 on its own: its squared disagreement twice chance's), weight g ~
Gamma(1), so a draw's κ is (W·κ_w − g) / (W + g) with W the draw's weight of runs. The jackknife and a bootstrap alone
miss when a few labels happen to show none of the judge's rare big errors (a 10 for a wrong answer): the sample then
looks like near-perfect agreement and its spread is near 0. The pseudo-run allows for the disagreement such a sample
has not shown, as the rule of three does for a count of 0. Chosen by simulation over a percentile bootstrap, BCa, a
studentized bootstrap and a pseudo-run of chance agreement
(`benchmarks/agreement_coverage.py` prints the coverage measured, and where it falls short).
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np
from numpy.typing import ArrayLike

from .hull import agreement_hull, bayes_weights, with_disagreement

__all__ = ["FLAT", "INTERVAL_DRAWS", "kappa", "kappa_interval", "kappa_of_sums", "unit_sums", "weighted_kappa"]

FLAT: Final = 1e-9
"""A side whose variance is at most this share of its mean square never varies (module docstring)."""
_DECIMALS = 12  # no −0.00 from rounding error where κ is 0
INTERVAL_DRAWS: Final = 2000
"""Bayesian-bootstrap draws of `kappa_interval`."""


def kappa_of_sums(
    count: ArrayLike, sum_a: ArrayLike, sum_b: ArrayLike, sum_aa: ArrayLike, sum_bb: ArrayLike, sum_dd: ArrayLike
) -> np.ndarray:
    """κ of samples known by their sums — scores a side, Σa, Σb, Σa², Σb² and Σ(a − b)² — elementwise over arrays of
    them (the samples of a delete-one jackknife, say, without holding them); NaN where undefined (no scores, or
    neither side varies)."""
    n = np.maximum(np.asarray(count, dtype=float), 1.0)
    mean_a, mean_b = np.asarray(sum_a, dtype=float) / n, np.asarray(sum_b, dtype=float) / n
    square_a, square_b = np.asarray(sum_aa, dtype=float) / n, np.asarray(sum_bb, dtype=float) / n
    var_a, var_b = square_a - mean_a**2, square_b - mean_b**2
    flat_a, flat_b = var_a <= FLAT * square_a, var_b <= FLAT * square_b
    varies = ~(flat_a & flat_b)
    expected = var_a + var_b + (mean_a - mean_b) ** 2
    observed = np.asarray(sum_dd, dtype=float) / n
    found = np.where(varies, 1.0 - observed / np.where(varies, expected, 1.0), np.nan)
    found = np.where(flat_a | flat_b, np.where(varies, 0.0, np.nan), found)  # exactly 0, not rounding's ±1e-16
    return np.round(found, _DECIMALS)


def weighted_kappa(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """κ of each row of two (rows, runs) score arrays (a 1-D pair is one row): one κ a row, NaN where undefined."""
    x, y = np.atleast_2d(np.asarray(a, dtype=float)), np.atleast_2d(np.asarray(b, dtype=float))
    if x.shape != y.shape:
        raise ValueError(f"the two sides must score the same runs, got shapes {x.shape} and {y.shape}")
    return kappa_of_sums(
        x.shape[1], x.sum(axis=1), y.sum(axis=1), (x * x).sum(axis=1), (y * y).sum(axis=1), ((x - y) ** 2).sum(axis=1)
    )


def kappa(a: ArrayLike, b: ArrayLike) -> float | None:
    """κ of one pair of score arrays over the same runs; None when undefined (no runs, or neither side varies)."""
    found = float(weighted_kappa(a, b)[0])
    return None if np.isnan(found) else found


def unit_sums(a: ArrayLike, b: ArrayLike, units: ArrayLike | None = None) -> np.ndarray:
    """The (6, m) sums `kappa_of_sums` takes, one column a unit: each run its own unit, or the runs of each distinct
    value of ``units`` (an input id, say) together, in order of first appearance."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if units is None:
        index, m = np.arange(x.size), x.size
    else:
        _, first, index = np.unique(np.asarray(units), return_index=True, return_inverse=True)
        order = np.argsort(np.argsort(first))  # unit numbers in order of first appearance
        index, m = order[index.ravel()], first.size
    columns = (np.ones_like(x), x, y, x * x, y * y, (x - y) ** 2)
    return np.stack([np.bincount(index, weights=v, minlength=m) for v in columns])


def kappa_interval(
    sums: np.ndarray, level: float, *, seed: int = 0, draws: int = INTERVAL_DRAWS
) -> tuple[float, float] | None:
    """The ``level`` interval of κ from per-unit sums (`unit_sums`; the module docstring says how, and
    `gradebench._stats.hull` the hull it takes): None below 3 units, or when κ is undefined."""
    m = sums.shape[1]
    total = sums.sum(axis=1)
    found = float(kappa_of_sums(*total))
    if m < 3 or math.isnan(found):
        return None
    unit_weights, pseudo = bayes_weights(seed, draws, m)
    weighted = unit_weights @ sums.T  # (draws, 6)
    drawn = with_disagreement(kappa_of_sums(*weighted.T), weighted[:, 0], pseudo)
    return agreement_hull(found, kappa_of_sums(*(total[:, None] - sums)), drawn, level)
