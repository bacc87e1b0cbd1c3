"""A floor under the standard error of a mean paired difference of bounded scores: Bonett and Price's pseudo pairs.

Why. A paired difference of bounded scores with many ties — a 0/1 score ×10 where two models agree on most inputs, a
judge that gives identical answers the same score — often shows few or no discordant pairs in a small sample. A
bootstrap, or a t, reads the sample's spread as the job's: with no loss drawn every resample is ≥ 0 and the interval
ends at 0; with every pair tied it is [0, 0]. Either clears any margin, though such a sample is common in a job one
margin worse: on MMLU, where two models agree on 78% of questions, 16 questions often hold no question the candidate
lost, and the fixed design's bootstrap interval held the truth in 87.0% of 570 races (`docs/truth.md`).

The method. For paired 0/1 outcomes Bonett & Price ("Adjusted Wald confidence interval for a difference of binomial
proportions based on paired data", J. Educ. Behav. Stat. 37(4), 2012) add one pseudo pair to each discordant cell,
p̃₁₂ = (f₁₂ + 1)/(n + 2) and p̃₂₁ = (f₂₁ + 1)/(n + 2), with standard error √((p̃₁₂ + p̃₂₁ − (p̃₁₂ − p̃₂₁)²)/(n + 2)):
the plug-in standard error of the sample with two pseudo pairs added, one at each discordant difference (+1, −1).
(Agresti & Min, Biometrics 61, 2005, add half a pair to each cell; in a 0/1 world of 16 pairs, 15% lost and none
won, that interval covered 92% where one pair's covers 99.9%.) A bounded score's discordant differences are not known
in advance, so each side's pseudo pair here is the mean of the sample's differences on that side — on a 0/1 score ×10
exactly ±10, so the standard error is Bonett and Price's — a side the sample holds none of mirrors the other side's
(on a 0/1 score, again ±10: one loss as large as the wins drawn), and with every pair tied both are the score's bound
±`DIFFERENCE_BOUND`.

The verdict's bounds (`gradebench._stats.paired.non_inferiority`, the group-sequential looks in
`gradebench._stats.groupseq`) each lie at least their critical value times this standard error from the sample's
mean: the floor binds where the sample shows few or no discordant pairs and leaves the interval as it was where
the sample has spread on both sides (the pseudo pairs then weigh about like two more ordinary ones). Only the
standard error is floored, not the centre moved (Bonett and Price also move it toward 0): on 0/1 worlds of 16 pairs
with 22% discordant, that keeps coverage at 96% instead of 99% and calls a truly equal candidate "as good" in 13% of
samples instead of 6%, with false "as good" on the margin at 2.3% (20,000 samples a world, seed 2).

Measured through `non_inferiority` (`tests/stats/test_adjusted.py`): a 0/1 score ×10, 16 pairs, the candidate losing
16% and winning 6% (truth −1, on the margin), 3,000 samples, seed 24: coverage 95.9%, "as good" 2.3% (the bootstrap
alone: 87–90% and 5–7.5%). On the rounded 0..10 scores of `benchmarks/design_validity.py` (16 inputs × 4 runs, and
the group-sequential race) power at truth 0 is unchanged to the race on the same 500 jobs a world, seed 22.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np

__all__ = ["DIFFERENCE_BOUND", "pseudo_pair_se"]

DIFFERENCE_BOUND: Final = 10.0
"""The largest paired difference a score of 0..10 allows: both pseudo pairs' size when every pair is tied."""


def pseudo_pair_se(diffs: np.ndarray | Sequence[float], bound: float = DIFFERENCE_BOUND) -> float:
    """The standard error of the mean of paired ``diffs`` with one pseudo pair added on each side (module
    docstring): at the mean of the sample's negative differences and at the mean of its positive ones; a side the
    sample holds none of mirrors the other's; both ±``bound`` when every pair is tied. The plug-in variance of the
    n + 2 values, divided by n + 2."""
    d = np.asarray(diffs, dtype=float)
    if d.size == 0:
        raise ValueError("no paired differences")
    negative, positive = d[d < 0], d[d > 0]
    if negative.size or positive.size:
        low = float(negative.mean()) if negative.size else -float(positive.mean())
        high = float(positive.mean()) if positive.size else -float(negative.mean())
    else:
        low, high = -bound, bound
    total = d.size + 2
    mean = (float(d.sum()) + low + high) / total
    second = (float((d * d).sum()) + low * low + high * high) / total
    return float(np.sqrt(max(second - mean * mean, 0.0) / total))
