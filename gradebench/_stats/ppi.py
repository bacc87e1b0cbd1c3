"""The label-corrected verdict: prediction-powered inference for the paired difference, candidate − reference entry.

The judge scores every run; a person labels a random sample of them. The judge-only verdict tests the judge's
difference; the corrected one tests the *human-scale* difference θ = E[h_C] − E[h_R] (the person's score of a run of
the candidate minus that of a run of the reference entry, inputs weighted equally), whatever the judge's bias. This
is prediction-powered inference (Angelopoulos, Bates, Fannjiang, Jordan & Zrnic, "Prediction-powered inference",
Science 382, 2023; as used for judges by Boyeau et al., "AutoEval done right", 2024), written for runs paired by
input and labels drawn within each entry.

**The estimator.** For entry e on input i with k_{e,i} usable runs, f̄_{e,i} is the mean judge score (a failed run
counts 0 on both scales and is never labelled). Entry e has N_e labellable runs (ok and judged) on the paired
inputs, of which m_e were labelled — a simple random sample of them (`gradebench._verdict.labels.draw_runs` draws it
so).
The rectifier B̂_e is the labelled runs' mean gap h − f, each run weighted by its share 1/k_{e,i} of its input (with
as many runs on every input, the plain mean), and

    θ̂ = mean_i (f̄_{C,i} − f̄_{R,i}) + B̂_C − B̂_R

is the judge's paired difference corrected by the judge − human gap measured on each side: a judge that over-scores
the candidate, the reference entry, or both, is accounted for. Over the draw of the labels B̂_e estimates the mean
of h − f over all of e's runs (exactly, with as many runs on every input; to O(1/m) otherwise, as a ratio), so θ̂
estimates θ whatever the judge's bias — the judge only moves the variance. PPI++'s power-tuning λ (Angelopoulos,
Duchi & Zrnic 2023) is not used: tuned on the same 16 inputs it cost 1–3 points of coverage in every simulated
scenario (0.946 → 0.922 for an unbiased judge at the margin line, 10 labels a side) for intervals 5–25% narrower.

**The interval.** Inputs are independent, so the variance comes from each input's share of θ̂ (its influence):

    u_i = (f̄_{C,i} − f̄_{R,i}) + Σ_e ± (B̂_e + W_{e,i} Σ_{labelled s of e on i} (h_s − f_s − B̂_e)),
    W_{e,i} = N_e / (m_e · k_{e,i}),

+ for the candidate and − for the reference entry; mean_i u_i = θ̂, and s²(u)/n estimates Var θ̂ — the label draw's
variance is in it, because which of an input's runs were labelled is part of u_i (centring at B̂_e is the
linearisation of the ratio: without it the number of labels an input happened to get would count as variance). The
bounds are θ̂ ∓ q · s(u)/√n with q Student's t_{n−1, level}, widened for skew: a judge's errors come in jumps (a
wrong answer it lets pass costs 4 points), so u is skewed, and a sample that drew few of the jumps is both too
optimistic and too sure of itself. The Edgeworth expansion of the studentized mean (Hall, "The Bootstrap and
Edgeworth Expansion", 1992, §3.5; Johnson 1978) moves the bound's quantile by −γ̂ (2q² + 1) / (6√n), γ̂ the sample
skewness of u; the correction is applied only where it widens a bound. A normal-approximation interval rather than
a bootstrap: PPI's coverage guarantee is a central limit theorem for exactly this mean; it splits the variance into
the part labels can shrink and the part only runs can (what `more_labels` needs); and it is cheap enough to check
over 10 000s of simulated races (tests/stats/test_ppi.py, benchmarks/judge_labels.py). There, with 10 labels a side at
the
margin line under a judge that lets 90% of a verbose candidate's wrong answers pass, the plain t bound covered 0.90
and the skew-widened one 0.94 (a studentized bootstrap 0.95, at 1000× the cost). What no interval can do: a bias
confined to a few percent of the runs is often not in a small label sample at all, and then nothing in the data
shows it (the benchmark measures how far coverage falls then: to about 0.88 with 10 labels).

**More labels.** The label part of the variance, per entry, is (1/m_e − 1/N_e)·S²_e, with S²_e the sample variance
over the labelled runs of y_s = N_e (h_s − f_s − B̂_e)/(n k_{e,i}) (each labelled run's share of u); the rest of
s²(u)/n only more runs shrink. `more_labels` is the fewest labels added to both entries
alike that bring the estimate's distance from the margin line to (q + z_0.8) standard errors (power 0.8), as the
judge-only verdict's ``more_runs`` does for runs; None when labelling every run would still not settle it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Final

import numpy as np

from .t import t_quantile

__all__ = ["MIN_LABELS", "POWER", "Corrected", "corrected_difference", "more_labels"]

MIN_LABELS: Final = 10
"""Fewest labelled runs on each side (the candidate and the reference entry) a label-corrected verdict rests on:
below it the correction's own variance is too poorly known (see benchmarks/judge_labels.py)."""
POWER: Final = 0.8
"""The chance the suggested number of labels settles an inconclusive verdict, as for ``more_runs``."""


@dataclass(frozen=True, kw_only=True)
class Corrected:
    """The label-corrected paired difference of one race or many at once (arrays over the leading batch axis)."""

    estimate: np.ndarray
    """θ̂: the human-scale mean difference, candidate − reference entry."""
    se: np.ndarray
    """Its standard error, s(u)/√n."""
    lower: np.ndarray
    """One-sided lower bound at ``level`` (skew-widened t)."""
    upper: np.ndarray
    """One-sided upper bound at ``level`` (skew-widened t)."""
    q_lower: np.ndarray
    """The lower bound's multiplier of ``se``: t_{n−1, level}, widened for skew."""
    q_upper: np.ndarray
    """The upper bound's multiplier of ``se``."""
    label_var: np.ndarray
    """Per side (candidate, reference entry), shape (batch, 2): S²_e of the labelled runs' terms (module docstring)."""
    labels: np.ndarray
    """Per side: m_e, the labelled runs used."""
    population: np.ndarray
    """Per side: N_e, the labellable (ok and judged) runs."""
    n_inputs: int
    """Paired inputs."""
    level: float
    """Confidence level of each one-sided bound."""


@dataclass(frozen=True)
class _Side:
    """One entry's share of u_i, and what its label variance needs."""

    part: np.ndarray  # (B, n): f̄_{e,i} + B̂_e + W_{e,i} Σ_labelled (h − f − B̂_e)
    terms: np.ndarray  # (B, n, k): y_s for labelled runs, 0 elsewhere
    labelled: np.ndarray  # (B, n, k)
    m: np.ndarray  # (B,)
    big_n: np.ndarray  # (B,)


def _side(judge: np.ndarray, human: np.ndarray, labellable: np.ndarray) -> _Side:
    usable = ~np.isnan(judge)
    k = np.maximum(usable.sum(axis=-1), 1)  # (B, n)
    labelled = labellable & usable & ~np.isnan(human)
    big_n = (labellable & usable).sum(axis=(-2, -1)).astype(float)
    m = labelled.sum(axis=(-2, -1)).astype(float)
    f = np.where(usable, judge, 0.0)
    gap = np.where(labelled, np.where(labelled, human, 0.0) - f, 0.0)  # h − f on the labelled runs
    w = np.where(labelled, 1.0 / k[..., None], 0.0)  # a run's share of its input
    rectifier = (w * gap).sum(axis=(-2, -1)) / np.maximum(w.sum(axis=(-2, -1)), 1e-300)  # B̂_e (Hájek)
    resid = np.where(labelled, gap - rectifier[:, None, None], 0.0)
    weight = (big_n / np.maximum(m, 1))[:, None] / k  # W_{e,i}
    part = f.sum(axis=-1) / k + weight * resid.sum(axis=-1) + rectifier[:, None]
    n = judge.shape[1]
    terms = big_n[:, None, None] * resid / (n * k)[..., None]
    return _Side(part=part, terms=terms, labelled=labelled, m=m, big_n=big_n)


def _label_var(side: _Side) -> np.ndarray:
    """S²_e: the sample variance of y_s over the labelled runs."""
    mean = side.terms.sum(axis=(-2, -1)) / np.maximum(side.m, 1)
    dev = np.where(side.labelled, side.terms - mean[:, None, None], 0.0)
    return (dev**2).sum(axis=(-2, -1)) / np.maximum(side.m - 1, 1)


def corrected_difference(
    judge_c: np.ndarray,
    human_c: np.ndarray,
    labellable_c: np.ndarray,
    judge_r: np.ndarray,
    human_r: np.ndarray,
    labellable_r: np.ndarray,
    *,
    level: float = 0.95,
) -> Corrected:
    """The label-corrected paired difference, candidate − reference entry (module docstring), for many races at once.

    Every array is (batch, inputs, runs), padded with NaN in ``judge_*`` where an input has fewer runs; ``judge_*``
    holds each usable run's judge score (a failed run its failed score), ``human_*`` the person's score where the
    run was labelled (NaN elsewhere), ``labellable_*`` which runs could be labelled (ok and judged; a label on any
    other run is ignored). Every input needs a usable run of both entries, and there must be two inputs at least.
    """
    if not 0.5 < level < 1.0:
        raise ValueError(f"level must be in (0.5, 1), got {level}")
    arrays = (judge_c, human_c, labellable_c, judge_r, human_r, labellable_r)
    if any(a.ndim != 3 for a in arrays) or len({a.shape[:2] for a in arrays}) != 1:
        shapes = [a.shape for a in arrays]
        raise ValueError(f"arrays must be (batch, inputs, runs) with one batch and input count, got {shapes}")
    if np.isnan(judge_c).all(axis=-1).any() or np.isnan(judge_r).all(axis=-1).any():
        raise ValueError("every input needs a usable run of both entries")
    n = judge_c.shape[1]
    if n < 2:
        raise ValueError(f"a corrected difference needs at least 2 paired inputs, got {n}")
    cand, ref = _side(judge_c, human_c, labellable_c), _side(judge_r, human_r, labellable_r)
    u = cand.part - ref.part
    estimate = u.mean(axis=1)
    sd = u.std(axis=1, ddof=1)
    se = sd / math.sqrt(n)
    skew = ((u - estimate[:, None]) ** 3).mean(axis=1) / np.where(sd > 0, sd, np.inf) ** 3
    q = t_quantile(level, n - 1)
    shift = skew * (2 * q * q + 1) / (6 * math.sqrt(n))  # Edgeworth: the lower bound's quantile is q − shift
    q_lower, q_upper = np.maximum(q - shift, q), np.maximum(q + shift, q)  # only ever wider
    return Corrected(
        estimate=estimate,
        se=se,
        lower=estimate - q_lower * se,
        upper=estimate + q_upper * se,
        q_lower=q_lower,
        q_upper=q_upper,
        label_var=np.stack([_label_var(cand), _label_var(ref)], axis=1),
        labels=np.stack([cand.m, ref.m], axis=1),
        population=np.stack([cand.big_n, ref.big_n], axis=1),
        n_inputs=n,
        level=level,
    )


def more_labels(found: Corrected, margin: float, row: int = 0) -> tuple[int, int] | None:
    """About how many more labels (on the candidate, on the reference entry) would likely settle an inconclusive
    corrected verdict (module docstring): the fewest added to both alike, each side at most all its runs; None when
    the estimate sits on the margin line, or labelling every run would still not settle it (more runs are needed)."""
    theta, se = float(found.estimate[row]), float(found.se[row])
    gap = abs(theta + margin)
    if gap == 0 or se == 0:
        return None
    q = found.q_lower[row] if theta > -margin else found.q_upper[row]  # the bound that would settle it
    target = (gap / (float(q) + NormalDist().inv_cdf(POWER))) ** 2
    s2, m, big_n = found.label_var[row], found.labels[row], found.population[row]
    label_part = np.where(m < big_n, (1 / np.maximum(m, 1) - 1 / np.maximum(big_n, 1)) * s2, 0.0)
    rest = max(se**2 - float(label_part.sum()), 0.0)
    for added in range(1, int(max(big_n - m)) + 1):
        now = np.minimum(m + added, big_n)
        var = rest + float(((1 / now - 1 / np.maximum(big_n, 1)) * s2).sum())
        if var <= target:
            more = now - m
            return int(more[0]), int(more[1])
    return None
