"""Student's t distribution, exact for an integer number of degrees of freedom, with no special-function library.

Every t figure of gradebench comes from here: the label-corrected verdict's bounds (`gradebench._stats.ppi`), the
group-sequential boundaries carried to the t (`gradebench._stats.groupseq`), the judges' agreement intervals
(`gradebench._judge.agreement`) and the expanded interval of a change between two races
(`gradebench._compare.stats`).

The tail is the finite series of Abramowitz & Stegun 26.7.3–4: with θ = arctan(|x|/√df), the mass within ±|x| is
(2/π)(θ + sin θ (cos θ + (2/3) cos³θ + …)) for an odd df and sin θ (1 + (1/2) cos²θ + (1·3)/(2·4) cos⁴θ + …) for an
even one, df/2 terms at most — exact up to rounding, so a tail is good to about 1e-16 absolute. A quantile is the
bisection of that tail to the last bit double precision resolves. Where the tail is below what the series resolves
(1e-13) a quantile is infinite rather than a guess.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Final

__all__ = ["RESOLVED_TAIL", "t_cdf", "t_isf", "t_quantile", "t_sf", "t_two_sided"]

RESOLVED_TAIL: Final = 1e-13
"""The smallest tail probability a quantile is sought for: below it the series' rounding (about 1e-16) is more than
a thousandth of the tail, and the quantile is taken as infinite."""


def t_sf(x: float, df: int) -> float:
    """P(T > x) for Student's t with an integer ``df`` ≥ 1 (the module docstring's series)."""
    if df < 1:
        raise ValueError(f"df must be >= 1, got {df}")
    theta = math.atan2(abs(x), math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    odd = df % 2 == 1
    term = total = math.cos(theta) if odd else 1.0
    for k in range(3 if odd else 2, df, 2):
        term *= c2 * (k - 1) / k
        total += term
    within = (2.0 / math.pi) * (theta + (s * total if df > 1 else 0.0)) if odd else s * total  # P(|T| ≤ |x|)
    tail = (1.0 - within) / 2.0  # P(T > |x|)
    return tail if x >= 0 else 1.0 - tail


def t_cdf(x: float, df: int) -> float:
    """P(T ≤ x) for Student's t with an integer ``df`` ≥ 1."""
    return t_sf(-x, df)


@lru_cache(maxsize=1024)
def t_isf(p: float, df: int) -> float:
    """The x with P(T > x) = ``p`` for Student's t with ``df`` degrees of freedom, 0 < p < 1; ±inf for a tail below
    `RESOLVED_TAIL`."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if p >= 0.5:  # the t is symmetric about 0
        return -t_isf(1.0 - p, df) if p > 0.5 else 0.0
    if p < RESOLVED_TAIL:
        return math.inf
    lo, hi = 0.0, 1.0
    while t_sf(hi, df) > p:
        lo, hi = hi, hi * 2.0
    while True:  # bisection until the bracket is two neighbouring floats (about 60 halvings)
        mid = (lo + hi) / 2.0
        if mid in (lo, hi):
            return hi
        lo, hi = (mid, hi) if t_sf(mid, df) > p else (lo, mid)


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom: the x with P(T ≤ x) = p, 0 < p < 1."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    return t_isf(1.0 - p, df)


def t_two_sided(level: float, df: int) -> float:
    """The multiplier of the standard error in a two-sided ``level`` interval at ``df`` degrees of freedom: the
    (1 + level)/2 quantile of Student's t (2.78 for 95% at 4 degrees of freedom)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    return t_isf((1.0 - level) / 2.0, df)
