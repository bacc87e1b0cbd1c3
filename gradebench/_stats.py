"""Verdict statistics over a report's frames: paired bootstrap intervals, non-inferiority, ratios, a recommendation.

Everything here is a pure, seeded function of the ``runs`` (or ``models``) frame: the same call gives the same
numbers in any process. Only candidate runs are used (the reference run carries no score). A failed run (``ok`` false)
counts as ``failed_score`` (default 0: a run that fails does the job no good); a run whose score is null because
judging failed is dropped, and counted in ``n_dropped``.

Means weigh every input equally (the mean of the per-input means; the plain run mean when inputs have as many runs).
Intervals come from a nested percentile bootstrap: each resample draws the inputs with replacement and, within each
drawn input, that input's runs with replacement; all input indices are drawn first (``rng.integers(0, n_inputs,
(resamples, n_inputs))`` from ``numpy.random.default_rng(seed)``), then the runs within them. Resampling at both levels
is slightly conservative (the repeat noise is counted twice, a known property of the two-stage bootstrap).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from statistics import NormalDist
from typing import Final, Literal

import numpy as np
import polars as pl

from ._vocab import Role

__all__ = [
    "AS_GOOD",
    "BOOTSTRAP",
    "Bootstrap",
    "DEFAULT_MARGIN",
    "INCONCLUSIVE",
    "RATIOS_SCHEMA",
    "VERDICT_SCHEMA",
    "WORSE",
    "Interval",
    "NonInferiority",
    "Recommendation",
    "non_inferiority",
    "paired_bootstrap",
    "ratios",
    "recommend",
    "verdicts",
]

AS_GOOD: Final = "as good"
WORSE: Final = "worse"
INCONCLUSIVE: Final = "inconclusive"
VerdictLabel = Literal["as good", "worse", "inconclusive"]
DEFAULT_MARGIN = 1.0
"""The non-inferiority margin when none is given: a candidate within 1 point of 10 of the reference is as good."""
MIN_INPUTS = 8
"""Fewest paired inputs a verdict of ``as good`` or ``worse`` rests on: a bootstrap over fewer inputs is too sure."""

MORE_RUNS_CAP = 20
"""Past this many times the runs already made, `more_runs` is not given: the mean sits on the margin line."""

POWER = 0.8
_CHUNK = 1 << 20  # resampled values drawn at once, to bound memory

_F, _I, _S = pl.Float64(), pl.Int64(), pl.String()
VERDICT_SCHEMA: dict[str, pl.DataType] = {
    "entry": _S,
    "verdict": _S,
    "mean_diff": _F,
    "lower": _F,
    "upper": _F,
    "p_value": _F,
    "n_inputs": _I,
    "n_pairs": _I,
    "more_runs": _I,
    "margin": _F,
    "paired_mean": _F,
    "paired_lo": _F,
    "paired_hi": _F,
    "n_dropped": _I,
    "reason": _S,
}
"""One row per candidate entry: its non-inferiority test against the reference entry and its own paired interval."""

RATIOS_SCHEMA: dict[str, pl.DataType] = {
    "entry": _S,
    "cost_ratio": _F,
    "latency_ratio": _F,
    "cost_per_point": _F,
    "cost_per_point_ratio": _F,
}
"""One row per entry of the models frame: cost and latency relative to the reference entry."""


@dataclass(frozen=True, kw_only=True)
class Bootstrap:
    """How an interval is drawn: its confidence level, the resamples and the seed (the same seed, the same bounds)."""

    level: float = 0.95
    """Confidence level (two-sided for an interval, of each one-sided bound for a test)."""
    resamples: int = 2000
    """Bootstrap resamples."""
    seed: int = 0
    """Seed of ``numpy.random.default_rng``."""

    def check(self, lowest: float = 0.0) -> None:
        if not lowest < self.level < 1.0:
            raise ValueError(f"level must be in ({lowest:g}, 1), got {self.level}")
        if self.resamples < 1:
            raise ValueError(f"resamples must be >= 1, got {self.resamples}")


BOOTSTRAP = Bootstrap()
"""The bootstrap every report draws with."""


@dataclass(frozen=True, kw_only=True)
class Interval:
    """An entry's mean score with its nested paired-bootstrap interval."""

    mean: float | None
    """Mean score over inputs (each input weighted equally); None without usable runs."""
    lo: float | None
    """Lower end of the two-sided percentile interval at ``level``; None below two usable runs."""
    hi: float | None
    """Upper end of the two-sided percentile interval at ``level``; None below two usable runs."""
    n_inputs: int
    """Inputs with at least one usable run."""
    n_runs: int
    """Usable runs (failed runs included at ``failed_score``)."""
    n_dropped: int = 0
    """Runs dropped because their score is null (judging failed)."""


@dataclass(frozen=True, kw_only=True)
class NonInferiority:
    """A one-sided paired test: is ``candidate`` no more than ``margin`` points worse than ``reference``?"""

    candidate: str
    """The entry tested."""
    reference: str
    """The reference entry (its candidate runs are the yardstick)."""
    margin: float
    """How many points worse still counts as as good."""
    level: float
    """Confidence level of each one-sided bound."""
    mean_diff: float | None = None
    """Mean over common inputs of (candidate mean − reference-entry mean) on that input."""
    lower: float | None = None
    """One-sided lower confidence bound of the mean difference at ``level``."""
    upper: float | None = None
    """One-sided upper confidence bound of the mean difference at ``level``."""
    p_value: float | None = None
    """One-sided bootstrap p-value for H0: difference ≤ −margin: (1 + #resamples ≤ −margin) / (resamples + 1)."""
    n_inputs: int = 0
    """Inputs with usable runs of both entries."""
    n_pairs: int = 0
    """Candidate runs used (each paired with the reference entry's runs on the same input)."""
    verdict: VerdictLabel | None
    """``as good``, ``worse`` or ``inconclusive``; None when the candidate is the reference entry (not tested)."""
    more_runs: int | None = None
    """For ``inconclusive``: about how many more paired runs would settle it (power 0.8); else None."""
    reason: str
    """One sentence saying why."""
    n_dropped: int = 0
    """Runs of either entry dropped because their score is null (judging failed)."""


@dataclass(frozen=True, kw_only=True)
class Recommendation:
    """The cheapest entry that is as good as the reference, with a sentence to paste into a review."""

    entry: str
    """The recommended entry (the reference entry itself when nothing cheaper is as good)."""
    reference: str
    """The reference entry."""
    sentence: str
    """One line a user can paste into a review."""
    cost_ratio: float | None
    """cost_per_run of ``entry`` over the reference's; None when the reference's cost is unknown or zero."""
    lower: float | None
    """The lower bound of ``entry``'s non-inferiority test (None for the fallback)."""
    n_pairs: int | None
    """Paired runs behind the verdict (None for the fallback)."""


def _scores(runs: pl.DataFrame, entry: str, failed_score: float) -> tuple[dict[str, np.ndarray], int]:
    """Per input id (sorted), the entry's usable candidate-run scores (by repeat); and how many runs were dropped."""
    missing = [c for c in ("input_id", "role", "entry", "repeat", "ok", "score") if c not in runs.columns]
    if missing:
        raise ValueError(f"runs frame lacks columns {missing}")
    value = pl.when(pl.col("ok").fill_null(True)).then(pl.col("score").cast(pl.Float64)).otherwise(float(failed_score))
    part = runs.filter((pl.col("role") == Role.CANDIDATE) & (pl.col("entry") == entry)).select(
        "input_id", "repeat", value.alias("value")
    )
    usable = part.filter(pl.col("value").is_not_null()).sort("input_id", "repeat")
    groups = {
        str(k): np.asarray(v, dtype=float)
        for k, v in usable.group_by("input_id", maintain_order=True).agg("value").iter_rows()
    }
    return groups, part.height - usable.height


def _padded(groups: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    counts = np.array([g.size for g in groups], dtype=np.int64)
    table = np.zeros((len(groups), int(counts.max())))
    for i, g in enumerate(groups):
        table[i, : g.size] = g
    return table, counts


def _resample(table: np.ndarray, counts: np.ndarray, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per row of ``idx``: the mean over the drawn inputs of the mean of their runs, drawn with replacement."""
    width = table.shape[1]
    if width == 1:
        return table[idx, 0].mean(axis=1)
    out = np.empty(idx.shape[0])
    step = max(1, _CHUNK // (idx.shape[1] * width))
    for start in range(0, idx.shape[0], step):
        k = idx[start : start + step]
        n = counts[k]
        pos = (rng.random((*k.shape, width)) * n[..., None]).astype(np.int64)
        mask = np.arange(width) < n[..., None]
        out[start : start + step] = (np.where(mask, table[k[..., None], pos], 0.0).sum(axis=2) / n).mean(axis=1)
    return out


def paired_bootstrap(
    runs: pl.DataFrame,
    entry: str,
    *,
    bootstrap: Bootstrap = BOOTSTRAP,
    failed_score: float = 0.0,
) -> Interval:
    """Mean score of ``entry``'s candidate runs with a two-sided nested percentile bootstrap interval (``bootstrap``).

    Inputs are resampled with replacement, and within each drawn input its runs (nested); the interval is widened if
    needed to hold the mean. ``lo``/``hi`` are None below two usable runs.
    """
    bootstrap.check()
    level, resamples = bootstrap.level, bootstrap.resamples
    groups, dropped = _scores(runs, entry, failed_score)
    n_runs = sum(g.size for g in groups.values())
    if not groups:
        return Interval(mean=None, lo=None, hi=None, n_inputs=0, n_runs=0, n_dropped=dropped)
    mean = float(np.mean([g.mean() for g in groups.values()]))
    if n_runs < 2:
        return Interval(mean=mean, lo=None, hi=None, n_inputs=len(groups), n_runs=n_runs, n_dropped=dropped)
    rng = np.random.default_rng(bootstrap.seed)
    idx = rng.integers(0, len(groups), size=(resamples, len(groups)))
    means = _resample(*_padded(list(groups.values())), idx, rng)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    lo, hi = min(float(lo), mean), max(float(hi), mean)
    return Interval(mean=mean, lo=lo, hi=hi, n_inputs=len(groups), n_runs=n_runs, n_dropped=dropped)


def _num(value: float, decimals: int = 1) -> str:
    """A number with the Unicode minus sign (and no negative zero)."""
    text = f"{value:.{decimals}f}"
    return "0." + "0" * decimals if float(text) == 0 else text.replace("-", "\u2212")


def non_inferiority(
    runs: pl.DataFrame,
    candidate: str,
    reference_entry: str,
    *,
    margin: float = DEFAULT_MARGIN,
    bootstrap: Bootstrap = BOOTSTRAP,
    failed_score: float = 0.0,
    min_inputs: int = MIN_INPUTS,
) -> NonInferiority:
    """Is ``candidate`` at most ``margin`` points worse than ``reference_entry``, paired by input?

    For each input with usable runs of both, d_i = mean(candidate scores) − mean(reference entry's candidate-run
    scores); D̄ is their mean. The nested paired bootstrap (inputs, then each entry's runs within an input) gives the
    one-sided bounds at ``level``: ``lower`` is the (1 − level) quantile, ``upper`` the ``level`` quantile. Verdict:
    ``as good`` when lower > −margin; ``worse`` when upper < −margin; otherwise ``inconclusive`` (also when there is
    nothing to pair, or a single run on each side of a single input, with the reason). The p-value for H0: Δ ≤ −margin
    is the bootstrap share (1 + #{D* ≤ −margin}) / (resamples + 1), the dual of the percentile bound, never 0.
    ``more_runs`` (inconclusive only) is ceil(n · ((z_level + z_0.8) · se / (D̄ + margin))²) − n with n the paired runs
    and se the bootstrap standard error, at least 1; None when D̄ ≤ −margin (more runs would likely show ``worse``).
    The reference entry itself is not tested: ``candidate == reference_entry`` gives verdict None. With fewer than
    ``min_inputs`` paired inputs the verdict stays ``inconclusive`` whatever the bounds say (a percentile bootstrap
    over a handful of inputs is too sure of itself); ``more_runs`` then counts the runs to reach ``min_inputs``.
    """
    bootstrap.check(lowest=0.5)
    level, resamples = bootstrap.level, bootstrap.resamples
    if margin < 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    cand, dropped_c = _scores(runs, candidate, failed_score)
    ref, dropped_r = _scores(runs, reference_entry, failed_score)
    make = partial(NonInferiority, candidate=candidate, reference=reference_entry, margin=margin, level=level)
    if candidate == reference_entry:
        reason = f"{candidate} is the reference entry: it is not tested against itself"
        return make(verdict=None, reason=reason, n_dropped=dropped_c)
    dropped = dropped_c + dropped_r
    common = [k for k in cand if k in ref]
    if not ref:
        why = "its reference run carries no score" if dropped_r == 0 else "none of its runs has a score"
        reason = f"{reference_entry} has no usable candidate runs to pair with ({why})"
    elif not cand:
        reason = f"{candidate} has no usable runs"
    elif not common:
        reason = f"{candidate} and {reference_entry} have no input with usable runs in common"
    if not common:
        return make(verdict=INCONCLUSIVE, reason=reason, n_dropped=dropped)
    n_pairs = sum(cand[k].size for k in common)
    mean_diff = float(np.mean([cand[k].mean() - ref[k].mean() for k in common]))
    make = partial(make, mean_diff=mean_diff, n_inputs=len(common), n_pairs=n_pairs, n_dropped=dropped)
    if len(common) == 1 and cand[common[0]].size == 1 and ref[common[0]].size == 1:
        return make(verdict=INCONCLUSIVE, reason="one run of each on a single input: no spread to estimate")
    rng = np.random.default_rng(bootstrap.seed)
    idx = rng.integers(0, len(common), size=(resamples, len(common)))
    boot = _resample(*_padded([cand[k] for k in common]), idx, rng)
    boot -= _resample(*_padded([ref[k] for k in common]), idx, rng)
    lower = min(float(np.quantile(boot, 1.0 - level)), mean_diff)
    upper = max(float(np.quantile(boot, level)), mean_diff)
    p_value = (1 + int(np.count_nonzero(boot <= -margin))) / (resamples + 1)
    make = partial(make, lower=lower, upper=upper, p_value=p_value)
    line, bounds = _num(-margin), f"[{_num(lower, 2)}, {_num(upper, 2)}]"
    if len(common) < min_inputs and (lower > -margin or upper < -margin):
        leaning = AS_GOOD if lower > -margin else WORSE
        more = (min_inputs - len(common)) * math.ceil(n_pairs / len(common))
        reason = (
            f"bounds {bounds} say {leaning}, but on {len(common)} inputs only: a verdict needs at least "
            f"{min_inputs}; about {more} more paired runs on new inputs"
        )
        return make(verdict=INCONCLUSIVE, reason=reason, more_runs=more)
    if lower > -margin:
        return make(verdict=AS_GOOD, reason=f"lower bound {_num(lower, 2)} > {line}: within the margin")
    if upper < -margin:
        return make(verdict=WORSE, reason=f"upper bound {_num(upper, 2)} < {line}: worse by more than the margin")
    se = float(boot.std(ddof=1)) if resamples > 1 else 0.0
    if mean_diff + margin <= 0 or se == 0:
        reason = f"bounds {bounds} straddle {line} with the mean at or below it: more runs would likely show worse"
        return make(verdict=INCONCLUSIVE, reason=reason)
    z = NormalDist().inv_cdf(level) + NormalDist().inv_cdf(POWER)
    more = max(1, math.ceil(n_pairs * (z * se / (mean_diff + margin)) ** 2) - n_pairs)
    if more > MORE_RUNS_CAP * n_pairs:  # the mean sits on the margin line: no sensible number of runs settles it
        reason = (
            f"bounds {bounds} straddle {line} with the mean just above it: only very many more runs would settle it"
        )
        return make(verdict=INCONCLUSIVE, reason=reason)
    reason = f"bounds {bounds} straddle {line}: about {more} more paired runs would likely settle it"
    return make(verdict=INCONCLUSIVE, reason=reason, more_runs=more)


def ratios(models: pl.DataFrame, reference_entry: str) -> pl.DataFrame:
    """Per entry of ``models`` (same order): cost and latency over the reference entry's, and cost per score point.

    ``cost_ratio`` = cost_per_run / the reference's; ``latency_ratio`` = latency_s_mean / the reference's;
    ``cost_per_point`` = cost_per_run / score_mean (null when score_mean is 0 or null); ``cost_per_point_ratio`` =
    cost_per_point / the reference's. A ratio is null when either side is null or the reference's value is 0
    (and every ratio when the reference entry is not in ``models``).
    """
    missing = [c for c in ("entry", "cost_per_run", "latency_s_mean", "score_mean") if c not in models.columns]
    if missing:
        raise ValueError(f"models frame lacks columns {missing}")
    score = pl.col("score_mean")
    frame = models.select(
        pl.col("entry").cast(pl.String),
        pl.col("cost_per_run").cast(pl.Float64).alias("cost"),
        pl.col("latency_s_mean").cast(pl.Float64).alias("latency"),
        pl.when(score.is_not_null() & (score != 0)).then(pl.col("cost_per_run") / score).cast(pl.Float64).alias("cpp"),
    )
    ref = frame.filter(pl.col("entry") == reference_entry)

    def over(column: str) -> pl.Expr:
        base = ref[column][0] if ref.height else None
        if base is None or base == 0:
            return pl.lit(None, dtype=pl.Float64)
        return pl.col(column) / base

    return frame.select(
        "entry",
        over("cost").alias("cost_ratio"),
        over("latency").alias("latency_ratio"),
        pl.col("cpp").alias("cost_per_point"),
        over("cpp").alias("cost_per_point_ratio"),
    ).cast(RATIOS_SCHEMA)  # type: ignore[arg-type]


def verdicts(
    runs: pl.DataFrame,
    reference_entry: str,
    *,
    margin: float = DEFAULT_MARGIN,
    bootstrap: Bootstrap = BOOTSTRAP,
    failed_score: float = 0.0,
    min_inputs: int = MIN_INPUTS,
) -> pl.DataFrame:
    """`non_inferiority` of every candidate entry (first-appearance order) against ``reference_entry``, plus the
    entry's own `paired_bootstrap` interval (``paired_*``), in the columns of `VERDICT_SCHEMA`.

    The reference entry's row has a null verdict and null test columns (it is not tested against itself).
    """
    entries = runs.filter(pl.col("role") == Role.CANDIDATE)["entry"].unique(maintain_order=True).to_list()
    rows = []
    for entry in entries:
        test = non_inferiority(
            runs,
            entry,
            reference_entry,
            margin=margin,
            bootstrap=bootstrap,
            failed_score=failed_score,
            min_inputs=min_inputs,
        )
        own_ = paired_bootstrap(runs, entry, bootstrap=bootstrap, failed_score=failed_score)
        tested = {f: getattr(test, f) for f in ("verdict", "mean_diff", "lower", "upper", "p_value", "more_runs")}
        if test.verdict is not None:
            tested.update(n_inputs=test.n_inputs, n_pairs=test.n_pairs)
        own = {"paired_mean": own_.mean, "paired_lo": own_.lo, "paired_hi": own_.hi, "n_dropped": own_.n_dropped}
        rows.append({"entry": entry, "margin": float(margin), "reason": test.reason, **tested, **own})
    return pl.DataFrame({c: [r.get(c) for r in rows] for c in VERDICT_SCHEMA}, schema=VERDICT_SCHEMA)


def recommend(
    models_with_verdicts: pl.DataFrame, *, job: str, reference_entry: str, margin: float, currency: str | None
) -> Recommendation | None:
    """The cheapest entry (by ``cost_per_run``; ties in frame order) whose verdict is ``as good``.

    ``models_with_verdicts`` needs ``entry, cost_per_run, verdict, lower, n_pairs`` (the models frame joined with
    `verdicts`). When the reference entry is in the frame, only entries strictly cheaper than it count, and if none is
    as good the reference itself is returned ("no cheaper entry is as good as …"). None when nothing qualifies. The
    cost ratio has 2 decimals (2 significant digits when it would round to 0.00); without a reference cost the
    sentence gives the cost per run in ``currency`` instead.
    """
    missing = [
        c for c in ("entry", "cost_per_run", "verdict", "lower", "n_pairs") if c not in models_with_verdicts.columns
    ]
    if missing:
        raise ValueError(f"models_with_verdicts lacks columns {missing}")
    ref_rows = models_with_verdicts.filter(pl.col("entry") == reference_entry)
    ref_cost = ref_rows["cost_per_run"][0] if ref_rows.height else None
    as_good = models_with_verdicts.filter((pl.col("verdict") == AS_GOOD) & (pl.col("entry") != reference_entry))
    unknown = as_good.filter(pl.col("cost_per_run").is_null())["entry"].to_list()
    unknown_note = f"; as good, cost unknown: {', '.join(unknown)}" if unknown else ""
    fallback = partial(Recommendation, entry=reference_entry, reference=reference_entry, lower=None, n_pairs=None)
    if ref_rows.height and ref_cost is None:
        # Unknown is not cheap: nothing is ranked against a reference whose cost is unknown.
        names = as_good["entry"].to_list()
        sentence = (
            f"cost unknown for {reference_entry} (its endpoint reported no usage): no entry is ranked cheaper than it "
            f"on {job} (margin {_num(margin)})" + (f"; as good: {', '.join(names)}" if names else "")
        )
        return fallback(sentence=sentence, cost_ratio=None)
    good = as_good.filter(pl.col("cost_per_run").is_not_null())
    if ref_cost is not None:
        good = good.filter(pl.col("cost_per_run") < ref_cost)
    if not good.height:
        if not ref_rows.height:
            return None
        sentence = f"no cheaper entry is as good as {reference_entry} on {job} (margin {_num(margin)}){unknown_note}"
        return fallback(sentence=sentence, cost_ratio=1.0 if ref_cost else None)
    best = good.sort("cost_per_run", maintain_order=True).select("entry", "cost_per_run", "n_pairs", "lower")
    entry, best_cost, n_pairs, lower = best.row(0)
    ratio = best_cost / ref_cost if ref_cost else None
    if ratio is None:
        cost = f"at {best_cost:.6g} {currency or ''}".rstrip() + " per run"
    else:
        cost = f"at {f'{ratio:.2f}' if round(ratio, 2) else f'{ratio:.2g}'}\u00d7 the cost"
    runs_text = f"{n_pairs} paired run{'' if n_pairs == 1 else 's'}"
    bound = "" if lower is None else f", lower bound {_num(lower)}"
    sentence = (
        f"{entry} is as good as {reference_entry} on {job} (margin {_num(margin)}, {runs_text}{bound}) {cost}"
        f"{unknown_note}"
    )
    return Recommendation(
        entry=entry,
        reference=reference_entry,
        sentence=sentence,
        cost_ratio=ratio,
        lower=lower,
        n_pairs=n_pairs,
    )
