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

**The draw.** Sequential Poisson sampling (Ohlsson, "Sequential Poisson sampling", J. Official Statistics 14,
1998): each run draws U_s uniform, and runs are asked in the order of U_s / π_s (`ask`); the first b are the sample.
Its chances of being asked are π_s to a close approximation (exactly, for the Poisson sample U_s < π_s whose size
is random; a fixed b is what a person labelling "20 a side" gives). In the Poisson sample the runs' coins are
independent, so each input's share of the estimate (its u_i, `gradebench._stats.ppi`) depends on that input's runs
and coins alone and s²(u)/n estimates the variance the design adds (derivation in `gradebench._stats.ppi`); a fixed
b couples the runs only through the cut-off, as a simple random sample's fixed size does. A larger budget keeps the
order: its sample contains every run of a smaller one, so a person who labels more extends the sample; the chances
recorded are then those of the larger budget (`label_chances` with it). Measured against the Poisson draw on the
simulated worlds (benchmarks/label_validity.py, 20 labels a side, 20,000 races): lower bounds covered 0.930–0.951
against 0.927–0.950.

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
2.5-fold: every one-sided bound of benchmarks/label_validity.py's judges then covered at least 0.930 at 20 labels a
side (20,000 races; with floor 0.5 and ceiling 2 the lowest was 0.921, with 0.3 and 3 0.905; docs/labels.md,
"Fewer labels")."""


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
    """Sequential Poisson sampling with these chances (module docstring): the order to ask in, by U_s / π_s along
    the last axis (runs of chance 0 last, never asked), and which runs are labelled — the first b of that order, b
    the chances' sum rounded (the budget they were made for)."""
    chances = np.asarray(chances, dtype=float)
    keys = np.where(chances > 0, rng.random(chances.shape) / np.where(chances > 0, chances, 1.0), np.inf)
    order = np.argsort(keys, axis=-1, kind="stable")
    place = np.argsort(order, axis=-1, kind="stable")  # each run's place in the order
    budget = np.rint(chances.sum(axis=-1, keepdims=True))
    return (place < budget) & (chances > 0), order
