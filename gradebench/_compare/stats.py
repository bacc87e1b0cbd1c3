"""The change of one entry between two races: paired by input, with a nested bootstrap interval.

For each input both races ran the entry on, d_i = mean(after runs) − mean(before runs); the change is the mean of the
d_i. Its interval is the paired bootstrap of `gradebench._stats.paired` over inputs (the input draws of its resampler),
one
stage: each d_i already carries the noise of its runs, its reference run and its verdicts, so drawing the runs again
inside an input would count that noise twice — on a simulation of unchanged models that made ``changed`` two to five
times rarer than the level says, and the intervals as much wider. The interval is read as an *expanded* percentile
interval (Hesterberg 2015): its tails are where a normal quantile equals sqrt(n/(n−1)) · t_{n−1}, so a handful of
inputs does not make it too sure of itself (a plain percentile interval over n inputs is about sqrt((n−1)/n) · z/t
too narrow). A failed run counts as 0, as everywhere; a run the judge gave no score is left out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import polars as pl

from .._stats.paired import resample_means
from .._stats.t import t_two_sided

__all__ = ["Change", "expanded_tail", "paired_change", "per_input"]

_NORMAL = NormalDist()


@dataclass(frozen=True, kw_only=True)
class Change:
    """A paired change (after − before) with its two-sided interval."""

    mean: float | None
    """Mean over the common inputs of (after mean − before mean) on that input; None without a common input."""
    lo: float | None
    """Lower end of the interval; None below two common inputs."""
    hi: float | None
    """Upper end of the interval; None below two common inputs."""
    n_inputs: int
    """Inputs with values on both sides."""

    @property
    def settled(self) -> bool:
        """The interval leaves out 0: a change, up or down."""
        return self.lo is not None and self.hi is not None and (self.lo > 0 or self.hi < 0)


def expanded_tail(level: float, n: int) -> float:
    """The bootstrap tail probability of a two-sided ``level`` interval over ``n`` resampled units, expanded for n."""
    if n < 2:
        raise ValueError(f"an interval needs at least 2 units, got {n}")
    t = t_two_sided(level, n - 1)
    return _NORMAL.cdf(-math.sqrt(n / (n - 1)) * t)


def per_input(runs: pl.DataFrame, value: pl.Expr) -> dict[str, np.ndarray]:
    """Per input id, the non-null values of ``value`` over ``runs`` (by repeat)."""
    part = runs.select("input_id", "repeat", value.alias("value")).filter(pl.col("value").is_not_null())
    grouped = part.sort("input_id", "repeat").group_by("input_id", maintain_order=True).agg("value")
    return {str(k): np.asarray(v, dtype=float) for k, v in grouped.iter_rows()}


def paired_change(
    before: Mapping[str, np.ndarray],
    after: Mapping[str, np.ndarray],
    *,
    level: float,
    resamples: int,
    seed: int,
) -> Change:
    """The paired change of the values after against before, over the inputs both have values on."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    common = sorted(k for k in before if k in after and before[k].size and after[k].size)
    if not common:
        return Change(mean=None, lo=None, hi=None, n_inputs=0)
    mean = float(np.mean([after[k].mean() - before[k].mean() for k in common]))
    if len(common) < 2:
        return Change(mean=mean, lo=None, hi=None, n_inputs=1)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(common), size=(resamples, len(common)))
    diffs = np.array([[after[k].mean() - before[k].mean()] for k in common])
    boot = resample_means(diffs, np.ones(len(common), dtype=np.int64), idx, rng)
    tail = expanded_tail(level, len(common))
    lo, hi = np.quantile(boot, [tail, 1 - tail])
    return Change(mean=mean, lo=min(float(lo), mean), hi=max(float(hi), mean), n_inputs=len(common))
