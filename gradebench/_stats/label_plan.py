"""How many labels a side would settle a verdict, planned before any label exists: from the judge's scores alone.

The label-corrected verdict (`gradebench._stats.ppi`) tests θ, the person's mean difference, candidate − reference
entry. Before anyone has labelled a run nothing says how far the judge tracks the person, so the plan takes the two
things the judge's scores do say, and the worst case for the rest:

- **Where θ lies**: at the judge-only difference Δ (the mean over inputs of the candidate's mean judge score less the
  reference entry's). If the judge is biased the truth lies elsewhere, and the labels find out: that is the point of
  labelling; the plan says how many labels confirm the judge *if it is right*, or overturn it by as much.
- **How the estimate varies**: with every run labelled the corrected estimate varies as the runs' paired difference
  does, estimated by the judge's (s²(d)/n over inputs); with m of an entry's N runs labelled, a simple random sample
  (the panel's order, active or random: without a measured swap gap the active order is a random sample's), the
  labels add (1/m − 1/N)·S²_e a side, S²_e the variance of the entry's run scores. That is the labels-alone estimate's
  variance (the judge's weight λ = 0): PPI++ tunes λ to be at most about that (within 5% for a judge that is noise,
  `gradebench._stats.ppi`), and much less for a judge that tracks the person, so the plan is on the safe side for the
  variance. The person's scale is taken to spread as the judge's does.

The plan is the fewest labels a side m (from `FEWEST_LABELS`, the same number on both sides, each at most all its
runs) at which |Δ + margin| ≥ (q + z_POWER) · se(m), q Student's t at ``level`` on min(n − 1, m − 1) degrees of
freedom: the distance from the margin line the corrected bound needs with probability `POWER` — as ``more_runs`` and
`gradebench._stats.ppi.more_labels` plan. 0 when even every run labelled would not (only more runs would).
benchmarks/labels_needed.py measures how often the planned labels settle the verdict on the simulated worlds.
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Final

import numpy as np

from .ppi import FEWEST_LABELS, POWER
from .t import t_quantile

__all__ = ["NO_PLAN", "planned_labels"]

NO_PLAN: Final = 0
"""What `planned_labels` gives where labelling every run would likely not settle the verdict."""


def planned_labels(
    judge_c: np.ndarray,
    labellable_c: np.ndarray,
    judge_r: np.ndarray,
    labellable_r: np.ndarray,
    margin: float,
    *,
    level: float = 0.95,
) -> np.ndarray:
    """Labels a side that would likely settle each race's label-corrected verdict (module docstring), or `NO_PLAN`.

    ``judge_*`` are (batch, inputs, runs): each usable run's judge score (a failed run its failed score), NaN where an
    input has fewer runs; ``labellable_*`` which runs a person could label (ok and judged). Every input needs a usable
    run of both entries, and there must be two inputs at least. Returns an int array (batch,)."""
    n = judge_c.shape[1]
    if n < 2:
        raise ValueError(f"a plan needs at least 2 paired inputs, got {n}")
    d = np.nanmean(judge_c, axis=-1) - np.nanmean(judge_r, axis=-1)  # (B, n)
    delta = d.mean(axis=1)
    runs_var = d.var(axis=1, ddof=1) / n
    sides = []
    for judge, can in ((judge_c, labellable_c), (judge_r, labellable_r)):
        can = can.astype(bool) & ~np.isnan(judge)
        big_n = can.sum(axis=(1, 2)).astype(float)
        values = np.where(can, judge, 0.0).reshape(judge.shape[0], -1)
        mean = values.sum(axis=1) / np.maximum(big_n, 1)
        squares = (np.where(can.reshape(values.shape), values - mean[:, None], 0.0) ** 2).sum(axis=1)
        sides.append((big_n, np.where(big_n >= 2, squares / np.maximum(big_n - 1, 1), 0.0)))
    gap = np.abs(delta + margin)
    z = NormalDist().inv_cdf(POWER)
    most = int(max(max(big_n.max(initial=0) for big_n, _ in sides), FEWEST_LABELS))
    found = np.full(judge_c.shape[0], NO_PLAN, dtype=int)
    open_ = np.ones(judge_c.shape[0], dtype=bool)
    for m in range(FEWEST_LABELS, most + 1):
        var = runs_var.copy()
        fewest = np.full(judge_c.shape[0], np.inf)
        for big_n, spread in sides:
            m_e = np.minimum(m, big_n)
            var += np.where(m_e > 0, 1 / np.maximum(m_e, 1) - 1 / np.maximum(big_n, 1), 0.0) * spread
            fewest = np.minimum(fewest, m_e)
        df = np.minimum(n - 1, np.maximum(fewest - 1, 1)).astype(int)
        q = np.array([t_quantile(level, int(k)) for k in df])
        settles = open_ & (gap >= (q + z) * np.sqrt(var)) & (gap > 0)
        found[settles] = m
        open_ &= ~settles
        if not open_.any():
            break
    return found
