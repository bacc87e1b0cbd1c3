"""The interval of an agreement coefficient (−1..1: weighted κ, Spearman's ρ) that a few labels can make look perfect.

The hull of two intervals, each short where the other is not (`gradebench._stats.kappa` says why for κ):

- a delete-one-unit jackknife on Fisher's z scale with Student's t at m − 1 degrees of freedom, and
- a Bayesian bootstrap of the units (Rubin 1981: each unit's weight Gamma(1)) whose every draw also holds one
  pseudo-run of complete disagreement (the coefficient −1 on its own), weight g ~ Gamma(1): a draw's coefficient is
  (W·c_w − g) / (W + g), c_w the coefficient of the weighted units and W their weight of runs.

Units in perfect agreement have a jackknife spread of 0 and every draw's c_w 1; the pseudo-run then keeps the
interval below 1, as the rule of three does for a count of 0. Spearman's ρ of labels takes the bootstrap without the
jackknife (`gradebench._verdict.label_agreement` says why).
"""

from __future__ import annotations

import math

import numpy as np

from .t import t_two_sided

__all__ = ["agreement_hull", "bayes_weights", "with_disagreement"]

_NEAR_ONE = 1 - 1e-9  # a coefficient of ±1 is infinite on Fisher's z scale: held just inside


def bayes_weights(seed: int, draws: int, units: int) -> tuple[np.ndarray, np.ndarray]:
    """The Bayesian bootstrap's (draws, units) weights of the units and the (draws,) weights of the pseudo-run."""
    rng = np.random.default_rng(seed)
    return rng.gamma(1.0, size=(draws, units)), rng.gamma(1.0, size=draws)


def with_disagreement(found: np.ndarray, runs: np.ndarray, pseudo: np.ndarray) -> np.ndarray:
    """Each draw's coefficient ``found`` of ``runs`` weight of runs joined by a pseudo-run of weight ``pseudo`` whose
    coefficient on its own is −1."""
    return (found * runs - pseudo) / (runs + pseudo)


def agreement_hull(
    found: float, left_one_out: np.ndarray | None, drawn: np.ndarray, level: float
) -> tuple[float, float] | None:
    """The hull of the ``level`` jackknife interval of ``found`` (from its delete-one-unit values ``left_one_out``)
    and the equal-tailed interval of the bootstrap's ``drawn`` values (`with_disagreement`); the jackknife is left out
    when ``left_one_out`` is None or some value of it undefined (NaN), the bootstrap when most draws are; None when
    both are."""
    ends = []
    kept = drawn[~np.isnan(drawn)]
    if kept.size >= drawn.size // 2 and kept.size:
        lo, hi = np.quantile(kept, [(1 - level) / 2, (1 + level) / 2])
        ends.append((float(lo), float(hi)))
    if left_one_out is not None and not np.isnan(left_one_out).any():
        m = left_one_out.size
        z = np.arctanh(np.clip(left_one_out, -_NEAR_ONE, _NEAR_ONE))
        spread = math.sqrt((m - 1) / m * float(((z - z.mean()) ** 2).sum())) * t_two_sided(level, m - 1)
        centre = math.atanh(max(-_NEAR_ONE, min(_NEAR_ONE, found)))
        ends.append((math.tanh(centre - spread), math.tanh(centre + spread)))
    if not ends:
        return None
    return min(lo for lo, _ in ends), max(hi for _, hi in ends)
