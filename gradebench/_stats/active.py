"""Active labelling: which runs to ask a person about, and the chance each was asked with.

Zrnic & Candès ("Active statistical inference", ICML 2024) label each run with its own chance π_s, larger where the
judge is less certain, and weight each label by 1/π_s so the estimate stays unbiased whatever the chances. Here:

**The chances.** Each labellable run gets an uncertainty u_s ≥ 0 (`judge_uncertainty`: the spread of the judge's
repeats or panel, and how near its score lies to a boundary). With a budget of b labels among N runs,

    π_s = b/N · (floor + (1 − floor) · u_s / mean(u)),

capped at ``ceiling`` × b/N and at 1 (what a cap removes is spread over the uncapped runs in proportion, until none
exceeds it): the mean chance is b/N, every run's at least ``floor`` × the mean (`FLOOR`) and at most ``ceiling`` ×
(`CEILING`). The floor mixes the uncertainty-led chances with uniform sampling, as Zrnic & Candès do, so no run is
all but never asked and no label's weight 1/π_s is more than 1/floor times a uniform sample's; the ceiling keeps a
few runs from taking the budget. Together they bound how unevenly labels are weighted, which is what the interval
pays for (`gradebench._stats.ppi`, "Labels asked with chances"). Uncertainty that is the same for every run gives
π_s = b/N: a uniform sample.

**The draw.** Poisson sampling: run s is labelled when U_s < π_s, U_s uniform and independent (`ask`), so the number
of labels is random with mean b. Independence across runs is what the interval needs: each input's share of the
estimate (its u_i, `gradebench._stats.ppi`) then depends on that input's runs and coins alone, so inputs stay
independent and s²(u)/n estimates the variance the design adds (derivation in `gradebench._stats.ppi`). The order to
ask in is by U_s / π_s: the labelled runs first, the likeliest first, so a sample for a larger budget (the same U,
larger chances) contains every run of a smaller one.

**The estimate.** `gradebench._stats.ppi.corrected_difference` takes the chances in place of the labellable mask and
weights each label by 1/π_s (``labellable`` as floats: the chance each run was asked with, 0 where it could not be).
Drop the weights and the estimate leans toward the runs asked most: tests/stats/test_active.py fails then.
"""

from __future__ import annotations

from typing import Final

import numpy as np

__all__ = ["CEILING", "FLOOR", "ask", "judge_uncertainty", "label_chances"]

FLOOR: Final = 0.6
"""Every run's chance is at least this share of the mean chance (`CEILING` says how it was chosen)."""
CEILING: Final = 1.5
"""No run's chance is above this many times the mean chance (nor above 1). With `FLOOR`, chances differ at most
2.5-fold: the widest range measured at which every one-sided bound of benchmarks/label_validity.py's judges covered
within 0.003 of 93% of races at 20 labels a side (lowest 0.927; floor 0.5 and ceiling 2: 0.921; 0.3 and 3: 0.905;
docs/labels.md, "Fewer labels")."""


def judge_uncertainty(ratings: np.ndarray, *, boundary: float | None = None, width: float = 1.0) -> np.ndarray:
    """Per run, how unsure the judge is, in points: the standard deviation of its ratings of the run (the last axis:
    repeats, or a panel's judges; NaN where a rating is missing), plus, with a ``boundary``, up to ``width`` points
    more the nearer the mean rating lies to it (``width`` − distance, where the distance is below ``width``). A run
    with no rating at all gets NaN (it cannot be labelled)."""
    ratings = np.asarray(ratings, dtype=float)
    counted = (~np.isnan(ratings)).sum(axis=-1)
    filled = np.where(np.isnan(ratings), 0.0, ratings)
    mean = filled.sum(axis=-1) / np.maximum(counted, 1)
    spread = np.sqrt(
        np.where(np.isnan(ratings), 0.0, (ratings - mean[..., None]) ** 2).sum(axis=-1) / np.maximum(counted, 1)
    )
    if boundary is not None:
        spread = spread + np.maximum(width - np.abs(mean - boundary), 0.0)
    return np.where(counted > 0, spread, np.nan)


def label_chances(
    uncertainty: np.ndarray, budget: float, *, floor: float = FLOOR, ceiling: float = CEILING
) -> np.ndarray:
    """π_s for each run (module docstring): ``uncertainty`` is (..., runs), NaN where a run cannot be labelled (its
    chance is then 0); ``budget`` the expected number of labels along the last axis (all labellable runs at most)."""
    if not 0.0 < floor <= 1.0 <= ceiling:
        raise ValueError(f"need 0 < floor <= 1 <= ceiling, got floor {floor} and ceiling {ceiling}")
    if budget <= 0:
        raise ValueError(f"budget must be > 0, got {budget}")
    u = np.asarray(uncertainty, dtype=float)
    if np.any(u < 0):
        raise ValueError("uncertainty must be >= 0")
    can = ~np.isnan(u)
    count = can.sum(axis=-1, keepdims=True)
    mean = np.where(can, u, 0.0).sum(axis=-1, keepdims=True) / np.maximum(count, 1)
    relative = np.where(mean > 0, np.where(can, u, 0.0) / np.where(mean > 0, mean, 1.0), 1.0)
    shape = np.where(can, floor + (1.0 - floor) * relative, 0.0)  # mean 1 over the labellable runs
    want = np.minimum(float(budget), count)
    cap = np.minimum(ceiling * want / np.maximum(count, 1), 1.0)  # (..., 1): no chance above it
    chances = np.zeros_like(shape)
    capped = np.zeros(shape.shape, dtype=bool)
    for _ in range(shape.shape[-1] + 1):  # each pass caps at least one more run, or is the last
        free = np.where(capped, 0.0, shape)
        left = want - (capped * cap).sum(axis=-1, keepdims=True)
        scale = left / np.maximum(free.sum(axis=-1, keepdims=True), 1e-300)
        chances = np.where(capped, cap, free * scale)
        over = chances > cap * (1 + 1e-12)
        if not over.any():
            break
        capped |= over
    return np.clip(chances, 0.0, cap)


def ask(chances: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A Poisson draw with these chances: which runs are labelled (U_s < π_s), and the order to ask in (by U_s / π_s
    along the last axis, the labelled runs first). Runs of chance 0 are never labelled and come last."""
    chances = np.asarray(chances, dtype=float)
    draws = rng.random(chances.shape)
    labelled = draws < chances
    keys = np.where(chances > 0, draws / np.where(chances > 0, chances, 1.0), np.inf)
    return labelled, np.argsort(keys, axis=-1, kind="stable")
