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
so). H̄_e and F̄_e are the labelled runs' mean person and judge score, each run weighted by its share 1/k_{e,i} of its
input (with as many runs on every input, the plain means). With a weight λ_e on the judge (PPI++: Angelopoulos,
Duchi & Zrnic, "PPI++: Efficient prediction-powered inference", 2024),

    θ̂ = Σ_e ± [ H̄_e + λ_e (mean_i f̄_{e,i} − F̄_e) ]

(+ for the candidate, − for the reference entry): the labels' own estimate of each side, moved by λ_e times the
judge's difference between every run and the labelled ones. Over the draw of the labels that difference has mean
0 (exactly with as many runs on every input; to O(1/m) otherwise, as a ratio), so θ̂ estimates θ whatever the judge's
bias and whatever λ — the judge only moves the variance. λ = 1 is classic PPI (the judge's paired difference
corrected by the judge − human gap on each side); λ = 0 is the labels alone. The variance-minimising λ makes a judge
that carries no information cost nothing (λ → 0: the labels alone) and a perfect one count fully (λ → 1).

**The interval.** Inputs are independent, so the variance comes from each input's share of θ̂ (its influence), which
is linear in λ:

    u_i = a_i + λ_C b_{C,i} − λ_R b_{R,i},
    a_i = Σ_e ± (H̄_e + W_{e,i} Σ_{labelled s of e on i} (h_s − H̄_e)),
    b_{e,i} = f̄_{e,i} − F̄_e − W_{e,i} Σ_{labelled s of e on i} (f_s − F̄_e),      W_{e,i} = N_e / (m_e · k_{e,i});

mean_i u_i = θ̂, and s²(u)/n estimates Var θ̂ — the label draw's variance is in it, because which of an input's runs
were labelled is part of u_i (centring at H̄_e, F̄_e is the linearisation of the ratio: without it the number of
labels an input happened to get would count as variance). λ minimises s²(u) over [0, 1]²: the least squares of −a on
(b_C, −b_R), boxed (the paired form of PPI++'s Cov(h, f) / ((1 + m/N) Var f), which it reduces to for one side with
as many runs on every input). Tuned on the same inputs it is judged by, that λ makes s²(u) look smaller than it is
(in-sample, a fair judge's lower bound covered 0.931 where λ = 1 covered 0.946, 10 labels a side), so it is
**cross-fitted**: input i's u_i uses the λ tuned on the other n − 1 inputs, and never chose its own weight. The bounds
are θ̂ ∓ q · s(u)/√n with q Student's t at ``level``, its degrees of freedom n − 1, or fewer labels less one on the
side with fewer (the label part of the variance is estimated from them), widened for skew: a judge's errors come in
jumps (a wrong answer it lets pass costs 4 points), so u is skewed, and a sample that drew few of the jumps is both
too optimistic and too sure of itself. The Edgeworth expansion of the studentized mean (Hall, "The Bootstrap and
Edgeworth Expansion", 1992, §3.5; Johnson 1978) moves the bound's quantile by −γ̂ (2q² + 1) / (6√n), γ̂ the sample
skewness of u; the correction is applied only where it widens a bound. A normal-approximation interval rather than a
bootstrap: PPI's coverage guarantee is a central limit theorem for exactly this mean; it splits the variance into the
part labels can shrink and the part only runs can (what `more_labels` needs); and it is cheap enough to check over
tens of thousands of simulated races (tests/stats/test_ppi.py, benchmarks/label_validity.py and judge_labels.py).

**Labels asked with chances (active labelling, `gradebench._stats.active`).** When run s was labelled with its own
chance π_s (a Poisson draw, each run independently, or the sequential Poisson sample of a fixed size that
approximates it), ``labellable`` carries the chances (floats; only a labelled run's
counts) and each label is weighted by 1/π_s: H̄_e and F̄_e become the Hájek means with weights 1/(k_{e,i} π_s), and
W_{e,i} Σ_labelled (·) becomes Σ_labelled (·)/(k_{e,i} π_s). A simple random sample is the case π_s = m_e/N_e, and
gives the same numbers. Why the interval still holds: given the runs, E[Σ_{labelled s on i} r_s/π_s] = Σ_{s on i} r_s
for any residual r, so each u_i is, to first order, input i's full-label share plus mean-zero label noise of variance
Σ_{s on i} (1 − π_s)/π_s · (r_s/k_{e,i})²; with the coins independent across runs, the u_i stay independent across
inputs, and s²(u)/n estimates the inputs' variance and the design's together — as for a simple random sample, which
is the case where that label variance is (1/m − 1/N)·S². Uneven weights make u heavier-tailed and s²(u) less sure of
itself, so the t's degrees of freedom count a side's labels by Kish's effective number (Σw)²/Σw². Measured with 16
inputs × 4 runs and 20 labels a side: chances at most 2.5-fold apart (`gradebench._stats.active`'s defaults) kept
every lower bound at 0.930 or above; up to 10-fold apart (floor 0.3, ceiling 3), 0.905 (docs/labels.md, "Fewer labels").

**How many labels.** benchmarks/label_validity.py measures the bounds against a known truth for seven judges (fair,
lenient, biased by input, rare, constant, offset, pure noise; `gradebench.sim._label_world.JUDGES`), at the margin
line with real between-input spread, 16 inputs × 4 runs. `MIN_LABELS` is the fewest labels a side at which every
one-sided bound covered in at least 93% of races (docs/labels.md has the figures); below it, from `FEWEST_LABELS`,
a verdict is given and says how many more labels the simulation asks for. What no interval can do: a bias confined
to a few percent of the runs is often not in a small label sample at all, and then nothing in the data shows it
(the benchmark measures how far coverage falls then).

**More labels.** The label part of the variance, per entry, is (1/m_e − 1/N_e)·S²_e, with S²_e the sample variance
over the labelled runs of y_s = N_e ((h_s − H̄_e) − λ_e (f_s − F̄_e))/(n k_{e,i}) (each labelled run's share of u,
λ_e its mean over the cross-fits). What only more runs shrink — the variance with every run labelled, the same at any
λ — is s²(u)/n less that label part, at λ = 0 and at λ = 1, the smaller (not at the tuned λ: the cross-fitted
weights vary by input, label variance that fades as labels grow, and counting it as runs' would say labels cannot
help where they can); the part of se² above it shrinks as Σ_e (1/m_e − 1/N_e)·S²_e does. `more_labels` is the
fewest labels added to both entries alike that bring the estimate's distance from the margin line to (q + z_0.8)
standard errors (power 0.8), as the judge-only verdict's ``more_runs`` does for runs; None when labelling every
run would still not settle it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Final

import numpy as np

from .paired import AS_GOOD, INCONCLUSIVE, WORSE
from .t import t_quantile

__all__ = [
    "FEWEST_LABELS",
    "MIN_LABELS",
    "MIN_TUNED_INPUTS",
    "POWER",
    "Corrected",
    "corrected_difference",
    "corrected_verdicts",
    "more_labels",
]

MIN_LABELS: Final = 20
"""Labelled runs on each side (the candidate and the reference entry) the simulation supports: the fewest at which
each one-sided 95% bound covered the truth in at least 93% of races for every judge of
`gradebench.sim._label_world.JUDGES` (benchmarks/label_validity.py: 0.933 at 20 for the rare judge's lower bound,
0.921 at 10). A verdict on fewer says so (`FEWEST_LABELS`). A bias on a few percent of runs can still escape 20
labels where little else varies (docs/labels.md)."""
FEWEST_LABELS: Final = 10
"""Fewest labelled runs on each side a label-corrected verdict is given on at all; from here to `MIN_LABELS` the
verdict line says how many more the simulation asks for before acting on it."""
MIN_TUNED_INPUTS: Final = 5
"""Fewest paired inputs the judge's weights are tuned on (two fitted weights leave the t n − 3 degrees of freedom);
with fewer, each weight is 1."""
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
    run_var: np.ndarray
    """The part of se² no number of labels would shrink (module docstring, "More labels")."""
    weights: np.ndarray
    """Per side: λ_e, the weight the judge's scores got (0: the labels alone; 1: classic PPI)."""
    df: np.ndarray
    """The t's degrees of freedom: n − 1, less one for each weight fitted inside (0, 1)."""
    n_inputs: int
    """Paired inputs."""
    level: float
    """Confidence level of each one-sided bound."""


@dataclass(frozen=True)
class _Side:
    """One entry's share of u_i split by the judge's weight λ_e: part(λ) = human + λ·judge (module docstring)."""

    human: np.ndarray  # (B, n): H̄_e + W_{e,i} Σ_labelled (h − H̄_e)
    judge: np.ndarray  # (B, n): f̄_{e,i} − F̄_e − W_{e,i} Σ_labelled (f − F̄_e), mean zero over the label draw
    human_resid: np.ndarray  # (B, n, k): h − H̄_e on the labelled runs, 0 elsewhere
    judge_resid: np.ndarray  # (B, n, k): f − F̄_e on the labelled runs, 0 elsewhere
    scale: np.ndarray  # (B, n): N_e / (n k_{e,i}), a labelled run's residual → its y_s
    labelled: np.ndarray  # (B, n, k)
    m: np.ndarray  # (B,)
    big_n: np.ndarray  # (B,)
    effective: np.ndarray  # (B,): Kish's effective number of labels, (Σ w)² / Σ w² over the Hájek weights (m if even)


def _side(judge: np.ndarray, human: np.ndarray, labellable: np.ndarray) -> _Side:
    usable = ~np.isnan(judge)
    k = np.maximum(usable.sum(axis=-1), 1)  # (B, n)
    asked = labellable.dtype != np.bool_  # the chance each run was asked with, not just whether it could be
    can = (labellable > 0) if asked else labellable
    labelled = can & usable & ~np.isnan(human)
    big_n = (can & usable).sum(axis=(-2, -1)).astype(float)
    m = labelled.sum(axis=(-2, -1)).astype(float)
    f = np.where(usable, judge, 0.0)
    h = np.where(labelled, human, 0.0)
    # a labelled run's share of its input over π_s, the chance it was labelled: as given, or m_e / N_e for a simple
    # random sample (a constant, left out of the Hájek means' weights so that they stay exact)
    share = np.where(labelled, 1.0 / k[..., None], 0.0)
    hajek = share / np.where(labelled, labellable, 1.0) if asked else share
    weight = hajek if asked else share * (big_n / np.maximum(m, 1))[:, None, None]
    total = np.maximum(hajek.sum(axis=(-2, -1)), 1e-300)

    def centred(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mean = (hajek * values).sum(axis=(-2, -1)) / total  # the Hájek mean over the labelled runs
        resid = np.where(labelled, values - mean[:, None, None], 0.0)
        return mean, resid

    human_mean, human_resid = centred(h)
    judge_mean, judge_resid = centred(np.where(labelled, f, 0.0))
    n = judge.shape[1]
    return _Side(
        human=human_mean[:, None] + (weight * human_resid).sum(axis=-1),
        judge=f.sum(axis=-1) / k - judge_mean[:, None] - (weight * judge_resid).sum(axis=-1),
        human_resid=human_resid,
        judge_resid=judge_resid,
        scale=np.where(labelled, m[:, None, None] * weight / n, 0.0),
        labelled=labelled,
        m=m,
        big_n=big_n,
        effective=total**2 / np.maximum((hajek**2).sum(axis=(-2, -1)), 1e-300) if asked else m,
    )


def _label_var(side: _Side, weight: np.ndarray) -> np.ndarray:
    """S²_e: the sample variance of y_s over the labelled runs, at the judge's weight λ_e."""
    terms = side.scale * (side.human_resid - weight[:, None, None] * side.judge_resid)
    mean = terms.sum(axis=(-2, -1)) / np.maximum(side.m, 1)
    dev = np.where(side.labelled, terms - mean[:, None, None], 0.0)
    return (dev**2).sum(axis=(-2, -1)) / np.maximum(side.m - 1, 1)


def _run_variance(cand: _Side, ref: _Side, human: np.ndarray, judge: np.ndarray) -> np.ndarray:
    """What only more runs would shrink: the variance θ̂ would have with every run labelled, which is the same at any
    λ. Estimated at λ = 0 and at λ = 1 as s²(u)/n less its label part; each is high when its label sample missed the
    judge's jumps, so the smaller is taken (benchmarks/judge_labels.py checks the labels it suggests settle).
    human: (B, n) and judge: (B, n, 2), u's parts (`corrected_difference`)."""
    n = human.shape[1]
    found = []
    for weight in (0.0, 1.0):
        u = human + weight * judge.sum(axis=-1)
        label_part = sum(
            np.where(side.m < side.big_n, 1 / np.maximum(side.m, 1) - 1 / np.maximum(side.big_n, 1), 0.0)
            * _label_var(side, np.full(u.shape[0], weight))
            for side in (cand, ref)
        )
        found.append(u.var(axis=1, ddof=1) / n - label_part)
    return np.maximum(np.minimum(*found), 0.0)


def _box_minimum(sxx: np.ndarray, sxy: np.ndarray) -> np.ndarray:
    """The λ ∈ [0, 1]² minimising 2 λ·sxy + λᵀ sxx λ (the variance of y + x·λ, less y's own, given the centred sums of
    squares and products): the unconstrained optimum if inside the box, else the best of each edge's optimum and
    the corners. sxx: (..., 2, 2); sxy: (..., 2)."""

    def variance(lam: np.ndarray) -> np.ndarray:
        return 2 * np.einsum("...i,...i->...", lam, sxy) + np.einsum("...i,...ij,...j->...", lam, sxx, lam)

    det = sxx[..., 0, 0] * sxx[..., 1, 1] - sxx[..., 0, 1] ** 2
    safe = np.where(np.abs(det) > 1e-12, det, np.inf)
    interior = np.stack(
        [
            -(sxx[..., 1, 1] * sxy[..., 0] - sxx[..., 0, 1] * sxy[..., 1]) / safe,
            -(sxx[..., 0, 0] * sxy[..., 1] - sxx[..., 0, 1] * sxy[..., 0]) / safe,
        ],
        axis=-1,
    )
    candidates = [np.clip(interior, 0.0, 1.0)]  # feasible; the least only when it was inside
    for free, fixed in ((0, 1), (1, 0)):
        for at in (0.0, 1.0):
            lam = np.empty_like(sxy)
            lam[..., fixed] = at
            lam[..., free] = -(sxy[..., free] + sxx[..., free, fixed] * at) / np.maximum(sxx[..., free, free], 1e-300)
            candidates.append(np.clip(lam, 0.0, 1.0))
    candidates += [np.broadcast_to(np.array(c, dtype=float), sxy.shape) for c in ((0, 0), (0, 1), (1, 0), (1, 1))]
    stacked = np.stack(candidates)  # (C, ..., 2)
    best = np.argmin(np.stack([variance(c) for c in stacked]), axis=0)
    return np.take_along_axis(stacked, best[None, ..., None], axis=0)[0]


def _cross_fitted_weights(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """λ for each input, tuned on the other inputs (leave one input out): the variance-minimising weights of
    y + x·λ, so an input's own u_i never chose the weight it is scaled by. y: (B, n); x: (B, n, 2) → (B, n, 2)."""
    rest = y.shape[1] - 1
    sum_x, sum_y = x.sum(axis=1, keepdims=True) - x, y.sum(axis=1, keepdims=True) - y  # without input i
    sum_xx = np.einsum("bni,bnj->bij", x, x)[:, None] - np.einsum("bni,bnj->bnij", x, x)
    sum_xy = np.einsum("bni,bn->bi", x, y)[:, None] - x * y[..., None]
    sxx = sum_xx - np.einsum("bni,bnj->bnij", sum_x, sum_x) / rest
    sxy = sum_xy - sum_x * sum_y[..., None] / rest
    return _box_minimum(sxx, sxy)


def corrected_difference(
    judge_c: np.ndarray,
    human_c: np.ndarray,
    labellable_c: np.ndarray,
    judge_r: np.ndarray,
    human_r: np.ndarray,
    labellable_r: np.ndarray,
    *,
    level: float = 0.95,
    judge_weight: float | None = None,
) -> Corrected:
    """The label-corrected paired difference, candidate − reference entry (module docstring), for many races at once.

    Every array is (batch, inputs, runs), padded with NaN in ``judge_*`` where an input has fewer runs; ``judge_*``
    holds each usable run's judge score (a failed run its failed score), ``human_*`` the person's score where the
    run was labelled (NaN elsewhere), ``labellable_*`` which runs could be labelled (ok and judged; a label on any
    other run is ignored; the labels a simple random sample of them) — or, as floats, the chance each run was asked
    with by active labelling (0: it could not be; labels weighted by 1/chance, module docstring). Every input needs a
    usable run of both entries, and there must be two inputs at least.
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
    human = cand.human - ref.human
    judge = np.stack([cand.judge, -ref.judge], axis=-1)  # u = human + judge · (λ_C, λ_R)
    labelled = np.stack([cand.m, ref.m], axis=1)
    if judge_weight is None and n >= MIN_TUNED_INPUTS:
        weights = np.where((labelled >= 2)[:, None, :], _cross_fitted_weights(human, judge), 1.0)
    else:
        weights = np.broadcast_to(1.0 if judge_weight is None else float(judge_weight), judge.shape)
    u = human + (judge * weights).sum(axis=-1)
    run_var = _run_variance(cand, ref, human, judge)
    # the label part of the variance is estimated from the fewer side's labels: a t with no more degrees of freedom
    # ... counted by their effective number: labels weighted unevenly (active labelling) carry fewer
    fewer = np.floor(np.minimum(labelled, np.stack([cand.effective, ref.effective], axis=1)) + 1e-9).min(axis=1)
    df = np.where(fewer >= 2, np.minimum(n - 1, fewer - 1), n - 1).astype(int)
    estimate = u.mean(axis=1)
    sd = u.std(axis=1, ddof=1)
    se = sd / math.sqrt(n)
    skew = ((u - estimate[:, None]) ** 3).mean(axis=1) / np.where(sd > 0, sd, np.inf) ** 3
    q = np.vectorize(lambda d: t_quantile(level, int(d)), otypes=[float])(df)
    shift = skew * (2 * q * q + 1) / (6 * math.sqrt(n))  # Edgeworth: the lower bound's quantile is q − shift
    q_lower, q_upper = np.maximum(q - shift, q), np.maximum(q + shift, q)  # only ever wider
    return Corrected(
        estimate=estimate,
        se=se,
        lower=estimate - q_lower * se,
        upper=estimate + q_upper * se,
        q_lower=q_lower,
        q_upper=q_upper,
        label_var=np.stack(
            [_label_var(cand, weights[..., 0].mean(axis=1)), _label_var(ref, weights[..., 1].mean(axis=1))], axis=1
        ),
        labels=labelled,
        run_var=run_var,
        population=np.stack([cand.big_n, ref.big_n], axis=1),
        weights=weights.mean(axis=1),
        df=df,
        n_inputs=n,
        level=level,
    )


def corrected_verdicts(found: Corrected, margin: float) -> np.ndarray:
    """Each race's verdict from its bounds: ``as good`` when the lower bound is above −``margin``, ``worse`` when the
    upper bound is below it, else ``inconclusive`` (the rule `gradebench._verdict.corrected.correct` applies)."""
    return np.where(found.lower > -margin, AS_GOOD, np.where(found.upper < -margin, WORSE, INCONCLUSIVE))


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
    rest = min(float(found.run_var[row]), se**2)
    sampling = float(((1 / np.maximum(m, 1) - 1 / np.maximum(big_n, 1)) * s2).sum())
    if sampling <= 0:
        return None
    for added in range(1, int(max(big_n - m)) + 1):
        now = np.minimum(m + added, big_n)
        var = rest + (se**2 - rest) * float(((1 / now - 1 / np.maximum(big_n, 1)) * s2).sum()) / sampling
        if var <= target:
            more = now - m
            return int(more[0]), int(more[1])
    return None
