"""JudgeScore statistics over a report's frames: paired bootstrap intervals, non-inferiority, ratios, a recommendation.

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

import hashlib
import math
from dataclasses import dataclass
from functools import partial
from statistics import NormalDist
from typing import Final, Literal

import numpy as np
import polars as pl

from .._base.vocab import Role
from .adjusted import pseudo_pair_se
from .ratios import RATIOS_SCHEMA, ratios

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
    "non_inferiority",
    "number_text",
    "paired_bootstrap",
    "ratios",
    "resample_means",
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
_CHUNK = 1 << 18  # resampled values drawn at once, to bound memory (each of a step's five arrays: 2 MB)

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
    "held": pl.Boolean(),
}
"""One row per candidate entry: its non-inferiority test against the reference entry and its own paired interval."""


@dataclass(frozen=True, kw_only=True)
class Bootstrap:
    """How an interval is drawn: its confidence level, the resamples and the seed (the same seed, the same bounds)."""

    level: float = 0.95
    """Two-sided confidence level of every interval, and of the non-inferiority test's [lower, upper]."""
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
    """Two-sided confidence level of [``lower``, ``upper``]: each bound is one-sided at (1 + level) / 2."""
    mean_diff: float | None = None
    """Mean over common inputs of (candidate mean − reference-entry mean) on that input."""
    lower: float | None = None
    """Lower end of the two-sided ``level`` interval of the mean difference (one-sided (1 + level) / 2)."""
    upper: float | None = None
    """Upper end of the two-sided ``level`` interval of the mean difference."""
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


def resample_means(table: np.ndarray, counts: np.ndarray, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The two-stage bootstrap's means: per row of ``idx`` (the inputs one resample drew), the mean over those inputs
    of the mean of their runs drawn again with replacement. ``table`` holds an input's runs a row, the first
    ``counts`` of them real (the rest padding)."""
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
    groups, dropped = _scores(runs, entry, failed_score)
    n_runs = sum(g.size for g in groups.values())
    if not groups:
        return Interval(mean=None, lo=None, hi=None, n_inputs=0, n_runs=0, n_dropped=dropped)
    mean = float(np.mean([g.mean() for g in groups.values()]))
    if n_runs < 2:
        return Interval(mean=mean, lo=None, hi=None, n_inputs=len(groups), n_runs=n_runs, n_dropped=dropped)
    lo, hi = _bounds(list(groups.values()), bootstrap)
    lo, hi = min(lo, mean), max(hi, mean)
    return Interval(mean=mean, lo=lo, hi=hi, n_inputs=len(groups), n_runs=n_runs, n_dropped=dropped)


_BOUNDS: dict[tuple[object, ...], tuple[float, float]] = {}
"""Bounds drawn already, by what they are a function of (`_bounds`): a report asks for the same entry's interval
for its models row and again for its verdict row, and a race of thousands of runs should not resample twice."""
_BOUNDS_KEPT = 64


def _bounds(groups: list[np.ndarray], bootstrap: Bootstrap) -> tuple[float, float]:
    """The percentile bounds of the nested bootstrap of ``groups`` (per input, in input order): a pure function of
    the values, their grouping and the bootstrap, so one drawn before is given again."""
    values = np.concatenate(groups)
    sizes = np.array([g.size for g in groups], dtype=np.int64)
    digest = hashlib.sha256(values.tobytes() + b"|" + sizes.tobytes()).hexdigest()
    key = (digest, bootstrap.level, bootstrap.resamples, bootstrap.seed)
    found = _BOUNDS.get(key)
    if found is None:
        rng = np.random.default_rng(bootstrap.seed)
        idx = rng.integers(0, len(groups), size=(bootstrap.resamples, len(groups)))
        means = resample_means(*_padded(groups), idx, rng)
        alpha = (1.0 - bootstrap.level) / 2.0
        lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
        found = (float(lo), float(hi))
        if len(_BOUNDS) >= _BOUNDS_KEPT:
            del _BOUNDS[next(iter(_BOUNDS))]  # the oldest
        _BOUNDS[key] = found
    return found


def plural(n: int, word: str) -> str:
    """``1 run``, ``3 runs``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def number_text(value: float, decimals: int = 1) -> str:
    """A number with the Unicode minus sign (and no negative zero)."""
    text = f"{value:.{decimals}f}"
    return "0." + "0" * decimals if float(text) == 0 else text.replace("-", "\u2212")


def _no_verdict(sides: list[tuple[str, int, bool]]) -> str | None:
    """Why nothing pairs when the judge scored none of a side's runs: the judge failed, not the entry; None when each
    side (entry, runs without a score, whether any has one) has a score or never ran."""
    unjudged = [f"{entry} ({plural(n, 'run')})" for entry, n, scored in sides if n and not scored]
    return f"the judge gave no verdict on any run of {' or of '.join(unjudged)}: nothing to pair" if unjudged else None


def unjudged(runs: pl.DataFrame, candidate: str, reference_entry: str) -> str | None:
    """`non_inferiority`'s reason when the judge scored none of the runs of ``candidate`` or ``reference_entry``."""
    sides = [
        (e, dropped, bool(groups)) for e in (candidate, reference_entry) for groups, dropped in [_scores(runs, e, 0.0)]
    ]
    return _no_verdict(sides)


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
    two-sided ``level`` interval: ``lower`` is the (1 − level)/2 quantile, ``upper`` the (1 + level)/2 quantile, each
    a one-sided bound at 97.5% with the default 0.95 — the level non-inferiority trials read, and the one the
    group-sequential race's "as good" spends. At one-sided 95% a job whose inputs differ with a long left tail (a few
    inputs much worse) was called "as good" on the margin in 6.2% of races at 16 × 4 (exact 95% bound 7.4%); at 97.5%
    in 3.4% (4.2%), `benchmarks/design_validity.py`, seed 22, 2,000 races. Each bound is then taken at least z
    standard errors from D̄, z the bound's normal quantile and the standard error the pseudo-pair one of the d_i
    (`gradebench._stats.adjusted`: Bonett and Price's for paired 0/1 scores): a sample with few or no discordant
    pairs — ties, a 0/1 score — makes the bootstrap too sure (no loss drawn, and every resample is ≥ 0). JudgeScore:
    ``as good`` when lower > −margin; ``worse`` when upper < −margin; otherwise ``inconclusive`` (also when there is
    nothing to pair, or a single run on each side of a single input, with the reason). The p-value for H0: Δ ≤ −margin
    is the larger of the bootstrap share (1 + #{D* ≤ −margin}) / (resamples + 1), the dual of the percentile bound,
    never 0, and the normal p-value Φ((−margin − D̄)/se) of the pseudo-pair standard error.
    ``more_runs`` (inconclusive only) is ceil(n · ((z + z_0.8) · se / (D̄ + margin))²) − n, z the bound's one-sided
    quantile, with n the paired runs and se the larger of the bootstrap standard error and the pseudo-pair one, at
    least 1; None when D̄ ≤ −margin (more runs would likely show ``worse``).
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
    if no_verdict := _no_verdict([(candidate, dropped_c, bool(cand)), (reference_entry, dropped_r, bool(ref))]):
        reason = no_verdict
    elif not ref:
        reason = f"{reference_entry} has no usable candidate runs to pair with (its reference run carries no score)"
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
    boot = resample_means(*_padded([cand[k] for k in common]), idx, rng)
    boot -= resample_means(*_padded([ref[k] for k in common]), idx, rng)
    tail = (1.0 - level) / 2.0  # each end of the two-sided interval
    # The bootstrap reads the sample's spread as the job's: with few or no discordant pairs (ties) it is too sure, so
    # each bound lies at least z pseudo-pair standard errors from the mean (`gradebench._stats.adjusted`).
    floor = pseudo_pair_se([cand[k].mean() - ref[k].mean() for k in common])
    half = NormalDist().inv_cdf(1.0 - tail) * floor
    lower = min(float(np.quantile(boot, tail)), mean_diff - half)
    upper = max(float(np.quantile(boot, 1.0 - tail)), mean_diff + half)
    floor_p = NormalDist().cdf((-margin - mean_diff) / floor)  # the floor's own p-value: the dual of its bound
    p_value = max((1 + int(np.count_nonzero(boot <= -margin))) / (resamples + 1), floor_p)
    make = partial(make, lower=lower, upper=upper, p_value=p_value)
    line, bounds = number_text(-margin), f"[{number_text(lower, 2)}, {number_text(upper, 2)}]"
    if len(common) < min_inputs and (lower > -margin or upper < -margin):
        leaning = AS_GOOD if lower > -margin else WORSE
        more = (min_inputs - len(common)) * math.ceil(n_pairs / len(common))
        reason = (
            f"bounds {bounds} say {leaning}, but on {len(common)} inputs only: a verdict needs at least "
            f"{min_inputs}; about {more} more paired runs on new inputs"
        )
        return make(verdict=INCONCLUSIVE, reason=reason, more_runs=more)
    if lower > -margin:
        return make(verdict=AS_GOOD, reason=f"lower bound {number_text(lower, 2)} > {line}: within the margin")
    if upper < -margin:
        return make(
            verdict=WORSE, reason=f"upper bound {number_text(upper, 2)} < {line}: worse by more than the margin"
        )
    se = max(float(boot.std(ddof=1)) if resamples > 1 else 0.0, floor)
    if mean_diff + margin <= 0 or se == 0:
        reason = f"bounds {bounds} straddle {line} with the mean at or below it: more runs would likely show worse"
        return make(verdict=INCONCLUSIVE, reason=reason)
    z = NormalDist().inv_cdf(1.0 - tail) + NormalDist().inv_cdf(POWER)
    more = max(1, math.ceil(n_pairs * (z * se / (mean_diff + margin)) ** 2) - n_pairs)
    if more > MORE_RUNS_CAP * n_pairs:  # the mean sits on the margin line: no sensible number of runs settles it
        reason = (
            f"bounds {bounds} straddle {line} with the mean just above it: only very many more runs would settle it"
        )
        return make(verdict=INCONCLUSIVE, reason=reason)
    reason = f"bounds {bounds} straddle {line}: about {more} more paired runs would likely settle it"
    return make(verdict=INCONCLUSIVE, reason=reason, more_runs=more)


def verdicts(
    runs: pl.DataFrame,
    reference_entry: str,
    *,
    margin: float = DEFAULT_MARGIN,
    bootstrap: Bootstrap = BOOTSTRAP,
    failed_score: float = 0.0,
    min_inputs: int = MIN_INPUTS,
    complete: int | None = None,
) -> pl.DataFrame:
    """`non_inferiority` of every candidate entry (first-appearance order) against ``reference_entry``, plus the
    entry's own `paired_bootstrap` interval (``paired_*``), in the columns of `VERDICT_SCHEMA`.

    The reference entry's row has a null verdict and null test columns (it is not tested against itself).
    ``complete``, for a race stopped early: the runs the plan gave every entry on each input. Each entry is then
    tested only on the inputs where all of its runs and all of the reference entry's landed (a run still in flight
    when the race stopped is often a failure being retried: leaving out its input leaves no survivor's flattery in
    the comparison), and the reason says on how many.
    """
    candidates = runs.filter(pl.col("role") == Role.CANDIDATE)
    entries = candidates["entry"].unique(maintain_order=True).to_list()
    landed = {(e, i): n for e, i, n in candidates.group_by("entry", "input_id").len().iter_rows()}
    rows = []
    for entry in entries:
        inputs = [
            i
            for (e, i), n in landed.items()
            if e == entry and min(n, landed.get((reference_entry, i), 0)) >= (complete or 0)
        ]
        tested_on = runs if complete is None else runs.filter(pl.col("input_id").is_in(inputs))
        test = non_inferiority(
            tested_on,
            entry,
            reference_entry,
            margin=margin,
            bootstrap=bootstrap,
            failed_score=failed_score,
            min_inputs=min_inputs,
        )
        own_ = paired_bootstrap(runs, entry, bootstrap=bootstrap, failed_score=failed_score)
        tested = {f: getattr(test, f) for f in ("verdict", "mean_diff", "lower", "upper", "p_value", "more_runs")}
        reason = test.reason
        if test.verdict is not None:
            tested.update(n_inputs=test.n_inputs, n_pairs=test.n_pairs)
            if complete is not None:
                reason += f"; on {plural(len(inputs), 'input')} complete before the stop"
        own = {"paired_mean": own_.mean, "paired_lo": own_.lo, "paired_hi": own_.hi, "n_dropped": own_.n_dropped}
        rows.append({"entry": entry, "margin": float(margin), "reason": reason, **tested, **own})
    return pl.DataFrame({c: [r.get(c) for r in rows] for c in VERDICT_SCHEMA}, schema=VERDICT_SCHEMA)
