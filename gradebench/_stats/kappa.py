"""Cohen's weighted κ with quadratic weights: how far two sets of scores of the same runs agree, beyond chance.

The one κ of gradebench: a judge against a judge (`gradebench._judge.agreement`) and a judge against a person
(`gradebench._verdict.label_agreement`) are the same figure on the same pairs of scores.

With quadratic weights on the score itself, κ = 1 − Σ w·observed / Σ w·expected-by-chance is a ratio of moments,

    κ = 1 − mean((a − b)²) / (var a + var b + (mean a − mean b)²)        (population variances)

— the observed squared disagreement over the one expected of two scorers that scored independently with the same
spreads. On whole points 0..10 this is the textbook weighted κ of the 11 × 11 table with w_ij = ((i − j)/10)² (Fleiss
& Cohen 1973; the 1/10² cancels), and it equals Lin's concordance coefficient. No score is rounded to a category:
a half point (a judge's mean of the two orders of a swap check) counts as a half.

κ is undefined (NaN, or None for `kappa`) when either side never varies: a constant side leaves κ at 0 or below
however well the other matches it, so it measures nothing (a resample of a few labels, mostly full marks, would
otherwise read "no better than chance"). A side's variance at most `FLAT` of its mean square is taken as none: it is
what rounding leaves of sums of identical scores.
"""

from __future__ import annotations

from typing import Final

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["FLAT", "kappa", "kappa_of_sums", "weighted_kappa"]

FLAT: Final = 1e-9
"""A side whose variance is at most this share of its mean square never varies (module docstring)."""
_DECIMALS = 12  # no −0.00 from rounding error where κ is 0


def kappa_of_sums(
    count: ArrayLike, sum_a: ArrayLike, sum_b: ArrayLike, sum_aa: ArrayLike, sum_bb: ArrayLike, sum_dd: ArrayLike
) -> np.ndarray:
    """κ of samples known by their sums — scores a side, Σa, Σb, Σa², Σb² and Σ(a − b)² — elementwise over arrays of
    them (the samples of a delete-one jackknife, say, without holding them); NaN where undefined (no scores, or a side
    that never varies)."""
    n = np.maximum(np.asarray(count, dtype=float), 1.0)
    mean_a, mean_b = np.asarray(sum_a, dtype=float) / n, np.asarray(sum_b, dtype=float) / n
    square_a, square_b = np.asarray(sum_aa, dtype=float) / n, np.asarray(sum_bb, dtype=float) / n
    var_a, var_b = square_a - mean_a**2, square_b - mean_b**2
    varies = (var_a > FLAT * square_a) & (var_b > FLAT * square_b)
    expected = var_a + var_b + (mean_a - mean_b) ** 2
    observed = np.asarray(sum_dd, dtype=float) / n
    found = np.where(varies, 1.0 - observed / np.where(varies, expected, 1.0), np.nan)
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
    """κ of one pair of score arrays over the same runs; None when undefined (no runs, or a side that never varies)."""
    found = float(weighted_kappa(a, b)[0])
    return None if np.isnan(found) else found
