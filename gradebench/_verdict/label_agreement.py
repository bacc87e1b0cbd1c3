"""How far the judge agrees with a person: weighted κ, Spearman ρ and the judge − human bias, with 95% intervals, and
a plain sentence — per entry and over every label (how a panel's judges agree: `gradebench._judge.agreement`).

Only labels on runs that can be labelled count (`gradebench._verdict.labels.labellable`: candidate runs that did not
fail and that the judge scored); the others are counted in ``left_out``. For each group of labelled runs (an entry's, or
all of them):

- **κ**: Cohen's weighted kappa with quadratic weights on the score itself (`gradebench._stats.kappa`, the same κ
  a panel's judges agree by): 1 is agreement, 0 what chance gives — and what a judge that gives every run one score
  gets (the sentence then says so); None when neither side varies.
- **ρ**: Spearman's rank correlation of the scores (ties get their mean rank); None when a side is constant.
- **bias**: the mean of judge − human, in points of 10; ``relative_bias`` is an entry's bias less the reference
  entry's — what moves its verdict (a judge that over-scores both alike leaves the difference alone).

Intervals are 95%, each input's labels one unit (runs of one input are alike). κ's is `gradebench._stats.kappa.
kappa_interval` (a jackknife t on Fisher's z joined with a Bayesian bootstrap that allows for disagreement the labels
have not shown: `gradebench._stats.hull`). ρ's is that Bayesian bootstrap (each input's weight Gamma(1), every draw
with a pseudo-run of complete disagreement; `weighted_spearman` ranks a draw's weighted labels) joined with Fisher's
z with Bonett & Wright's (2000) standard error √((1 + ρ²/2)/(m − 3)), m the inputs (none below 4, or for a ρ of ±1);
none below 3 inputs, and labels in perfect order still get an interval below 1. Bonett & Wright's alone covered
17–89% where agreement is high (its spread shrinks as the sample's ρ nears 1); the bootstrap alone misses where a
rare score shows in too few labels (pass/fail, most answers right); κ's jackknife joined in made it 97.7–99.9% at 10
labels. The bias's is a percentile bootstrap of the labelled runs (`BOOTSTRAP_RESAMPLES` resamples; the k-th entry's
seeded with `SEED` + k, the whole with `SEED`, so ``relative_bias`` pairs an entry's resamples with the reference
entry's, independent of them). Their coverage is measured by `benchmarks/agreement_coverage.py`.

The sentence's words follow Landis & Koch's bands for κ (1977): above 0.80 "very well" (their "almost perfect"), above
0.60 "well" ("substantial"), above 0.40 "moderately", above 0.20 "fairly", from 0 "slightly", below 0 "no better
than chance". Below `MIN_AGREEMENT` labels it says "too few labels to say"; of a judge that gave every labelled run
one score, that it cannot tell runs apart (and "neither varies" only when your scores do not vary either). A bias
is said when its interval leaves out 0 and it is at least `BIAS_SAID` points; an entry whose bias against the
reference entry's is at least half the margin, its interval leaving out 0, gets "don't trust its judge-only
verdict".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final

import numpy as np
import polars as pl

from .._base.numbers import figure, span
from .._base.vocab import Role
from .._stats.hull import agreement_hull, bayes_weights, with_disagreement
from .._stats.kappa import INTERVAL_DRAWS, kappa_interval, unit_sums, weighted_kappa
from .labels import labellable

__all__ = [
    "AGREEMENT_SCHEMA",
    "ALL_ENTRIES",
    "BIAS_SAID",
    "MIN_AGREEMENT",
    "Agreement",
    "agreement",
    "agreement_rows",
    "agreement_word",
    "interval_text",
    "spearman",
    "weighted_spearman",
]

MIN_AGREEMENT: Final = 10
"""Fewest labels the agreement of a group is said on ("too few labels to say" below)."""
FEW_OTHER: Final = 3
"""Fewer labels than this off the person's most common score and the sentence warns that κ rests on them: in the
pass/fail worlds of `benchmarks/agreement_coverage.py` with 85% of runs passing (2000 samples a cell, seed 0), κ's
interval covered the population's κ in 46–96% of the samples it warns on, 80–100% of the others."""
BIAS_SAID: Final = 0.5
"""Smallest bias, in points of 10, the sentence names (when its interval leaves out 0)."""
BOOTSTRAP_RESAMPLES: Final = 2000
SEED: Final = 0
LEVEL: Final = 0.95
_NORMAL_975 = 1.959963984540054  # the standard normal's 97.5% point, for Bonett & Wright's interval
_NEAR_ONE = 1 - 1e-9  # ρ of ±1 is infinite on Fisher's z scale
_FLAT_RANKS = 1e-12  # a side whose ranks vary by at most this share of their scale is constant (rounding's rest)
ALL_ENTRIES: Final = "(all)"
"""The ``entry`` of the agreement frame's row over every label."""
_BANDS = ((0.80, "very well"), (0.60, "well"), (0.40, "moderately"), (0.20, "fairly"), (0.0, "slightly"))
_CHUNK = 200  # bootstrap rows ranked at once (the rank step is quadratic in the labels)

_F, _I, _S = pl.Float64(), pl.Int64(), pl.String()
AGREEMENT_SCHEMA: dict[str, pl.DataType] = {
    "entry": _S,
    "labels": _I,
    "left_out": _I,
    "kappa": _F,
    "kappa_lo": _F,
    "kappa_hi": _F,
    "spearman": _F,
    "spearman_lo": _F,
    "spearman_hi": _F,
    "bias": _F,
    "bias_lo": _F,
    "bias_hi": _F,
    "relative_bias": _F,
    "relative_lo": _F,
    "relative_hi": _F,
    "agreement": _S,
    "sentence": _S,
    "judge_verdict": _S,
    "judge_mean_diff": _F,
    "judge_lower": _F,
    "correction": _S,
    "settle": _S,
}
"""``report.agreement``: one row per candidate entry (the models frame's order), then `ALL_ENTRIES`: the labels used
and left out, κ, ρ and bias with their intervals, the word and the sentence; for a tested entry, its judge-only
verdict (what the judge alone says), ``correction``, whether its verdict is label-corrected and on how many labels
(or why not), and ``settle``, what would likely settle a label-corrected verdict left inconclusive."""


def _ranks(x: np.ndarray) -> np.ndarray:
    """Mean ranks (1-based) along the last axis, ties sharing their mean rank."""
    out = np.empty(x.shape)
    for start in range(0, x.shape[0], _CHUNK):
        part = x[start : start + _CHUNK]
        below = (part[:, :, None] > part[:, None, :]).sum(axis=2)
        same = (part[:, :, None] == part[:, None, :]).sum(axis=2)
        out[start : start + _CHUNK] = below + (same + 1) / 2
    return out


def spearman(judge: np.ndarray, human: np.ndarray) -> np.ndarray:
    """Spearman's ρ of each row of (rows, labels) score arrays; NaN where a side is constant."""
    a, b = _ranks(np.atleast_2d(judge).astype(float)), _ranks(np.atleast_2d(human).astype(float))
    a, b = a - a.mean(axis=1, keepdims=True), b - b.mean(axis=1, keepdims=True)
    scale = np.sqrt((a**2).sum(axis=1) * (b**2).sum(axis=1))
    return np.where(scale > 0, (a * b).sum(axis=1) / np.where(scale > 0, scale, 1.0), np.nan)


def weighted_spearman(judge: np.ndarray, human: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Spearman's ρ of the labels weighted by each row of ``weights`` (rows, labels): a score's rank is the weight of
    the scores below it plus half its ties' (weights of 1 give `spearman`), ρ the weighted correlation of the ranks;
    NaN where a side is constant among the labels of positive weight."""
    a, b = _weighted_ranks(judge, weights), _weighted_ranks(human, weights)
    total = weights.sum(axis=1, keepdims=True)
    share = weights / np.where(total > 0, total, 1.0)
    a, b = a - (share * a).sum(axis=1, keepdims=True), b - (share * b).sum(axis=1, keepdims=True)
    var_a, var_b = (share * a * a).sum(axis=1), (share * b * b).sum(axis=1)
    varies = (var_a > _FLAT_RANKS * total[:, 0] ** 2) & (var_b > _FLAT_RANKS * total[:, 0] ** 2)
    scale = np.sqrt(np.where(varies, var_a * var_b, 1.0))
    return np.where(varies, (share * a * b).sum(axis=1) / scale, np.nan)


def _weighted_ranks(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Each label's weighted mid-rank under each row of ``weights``: the weight below its score, plus half its ties'."""
    values, group = np.unique(x, return_inverse=True)
    group = group.ravel()
    order = np.argsort(group, kind="stable")
    tied = np.add.reduceat(weights[:, order], np.searchsorted(group[order], np.arange(values.size)), axis=1)
    return (np.cumsum(tied, axis=1) - tied / 2)[:, group]


def _bonett_wright(rho: float, units: int) -> tuple[float, float] | None:
    """Fisher's z with Bonett & Wright's standard error (module docstring); none below 4 labels, nor for a ρ of ±1
    (its standard error on the z scale is 0)."""
    if units < 4 or abs(rho) > _NEAR_ONE:
        return None
    spread = _NORMAL_975 * math.sqrt((1 + rho**2 / 2) / (units - 3))
    return math.tanh(math.atanh(rho) - spread), math.tanh(math.atanh(rho) + spread)


def _rho_interval(
    judge: np.ndarray, human: np.ndarray, inputs: np.ndarray | None, seed: int
) -> tuple[float, float] | None:
    """ρ's interval, each input's labels one unit (module docstring; `gradebench._stats.hull` the hull it takes,
    joined with `_bonett_wright`'s): None below 3 units, or when ρ is undefined."""
    units = np.arange(judge.size) if inputs is None else np.unique(np.asarray(inputs), return_inverse=True)[1].ravel()
    m = int(units.max()) + 1
    found = _value(spearman(judge, human))
    if m < 3 or found is None:
        return None
    member = (units[None, :] == np.arange(m)[:, None]).astype(float)  # (units, labels)
    unit_weights, pseudo = bayes_weights(seed, INTERVAL_DRAWS, m)
    weights = unit_weights @ member
    drawn = with_disagreement(weighted_spearman(judge, human, weights), weights.sum(axis=1), pseudo)
    # no jackknife: joined in, it made ρ's interval over-cover at 10 labels (module docstring)
    ends = [agreement_hull(found, None, drawn, LEVEL), _bonett_wright(found, m)]
    kept = [e for e in ends if e is not None]
    return (min(lo for lo, _ in kept), max(hi for _, hi in kept)) if kept else None


def _one_score(scores: np.ndarray) -> float | None:
    """The one score a side gave every run, or None when it varies."""
    return float(scores[0]) if scores.size and bool((scores == scores[0]).all()) else None


def _value(x: np.ndarray) -> float | None:
    return None if np.isnan(x[0]) else float(x[0])


@dataclass(frozen=True, kw_only=True)
class Agreement:
    """One group's agreement figures (its row of `AGREEMENT_SCHEMA`, without the words)."""

    labels: int
    """Labelled runs the figures rest on."""
    kappa: float | None = None
    """Quadratic-weighted κ; None when undefined (no variation) or without labels."""
    kappa_lo: float | None = None
    """Lower end of κ's 95% interval (None when most resamples leave κ undefined)."""
    kappa_hi: float | None = None
    """Upper end of κ's 95% interval."""
    spearman: float | None = None
    """Spearman's ρ; None when either side is constant."""
    spearman_lo: float | None = None
    """Lower end of ρ's 95% interval."""
    spearman_hi: float | None = None
    """Upper end of ρ's 95% interval."""
    bias: float | None = None
    """Mean judge − human, in points of 10."""
    bias_lo: float | None = None
    """Lower end of the bias's 95% interval."""
    bias_hi: float | None = None
    """Upper end of the bias's 95% interval."""
    boot_bias: np.ndarray | None = None
    """The bias of each bootstrap resample (for the relative bias)."""
    judge_one_score: float | None = None
    """The one score the judge gave every labelled run (None when its scores vary)."""
    human_one_score: float | None = None
    """The one score you gave every labelled run (None when yours vary)."""
    human_mode: float | None = None
    """Your most common score over the labels (the lowest of the most common)."""
    other_than_mode: int = 0
    """Labels you scored other than `human_mode`."""


def agreement(judge: np.ndarray, human: np.ndarray, *, seed: int = SEED, inputs: np.ndarray | None = None) -> Agreement:
    """κ, ρ and bias of paired judge and human scores, each with its 95% interval (module docstring); ``inputs``,
    the input of each label, makes an input's labels one unit of κ's interval (each label its own without)."""
    judge, human = np.asarray(judge, dtype=float), np.asarray(human, dtype=float)
    m = judge.size
    if m == 0:
        return Agreement(labels=0)
    kappa, rho, bias = (
        _value(weighted_kappa(judge, human)),
        _value(spearman(judge, human)),
        float((judge - human).mean()),
    )
    values, counts = np.unique(human, return_counts=True)
    head = Agreement(
        labels=m,
        kappa=kappa,
        spearman=rho,
        bias=bias,
        judge_one_score=_one_score(judge),
        human_one_score=_one_score(human),
        human_mode=float(values[counts.argmax()]),
        other_than_mode=int(m - counts.max()),
    )
    if m < 2:
        return head
    idx = np.random.default_rng(seed).integers(0, m, size=(BOOTSTRAP_RESAMPLES, m))
    boot_bias = (judge[idx] - human[idx]).mean(axis=1)
    # labels all of one score say nothing of the population's κ: no interval (κ itself is 0, and said why)
    k_lo, k_hi = (
        (None, None)
        if head.human_one_score is not None
        else (kappa_interval(unit_sums(judge, human, inputs), LEVEL, seed=seed) or (None, None))
    )
    r_lo, r_hi = _rho_interval(judge, human, inputs, seed) or (None, None)
    b_lo, b_hi = np.quantile(boot_bias, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return replace(
        head,
        kappa_lo=k_lo,
        kappa_hi=k_hi,
        spearman_lo=r_lo,
        spearman_hi=r_hi,
        bias_lo=float(b_lo),
        bias_hi=float(b_hi),
        boot_bias=boot_bias,
    )


def agreement_word(kappa: float) -> str:
    """The Landis–Koch band of ``kappa`` in plain words (module docstring)."""
    return next(
        (word for line, word in _BANDS if kappa > line or (line == 0.0 and kappa >= 0)), "no better than chance"
    )


def _pairs(runs: pl.DataFrame, scores: Mapping[str, float]) -> tuple[pl.DataFrame, dict[str, int]]:
    """The labelled runs that count (entry, judge score, human score), and per entry how many labels were left out."""
    labelled = runs.filter(pl.col("run_id").is_in(list(scores)) & (pl.col("role") == Role.CANDIDATE))
    human = pl.col("run_id").replace_strict(scores, default=None, return_dtype=pl.Float64)
    used = labelled.filter(labellable()).select(
        "entry", "input_id", pl.col("score").cast(pl.Float64).alias("judge"), human.alias("human")
    )
    out = labelled.filter(~labellable()).group_by("entry").len()
    return used, {e: int(n) for e, n in out.iter_rows()}


def interval_text(lo: float | None, hi: float | None, decimals: int = 2) -> str:
    """``[0.61–0.90]``, or ``[−0.20, 0.40]`` when a bound is negative (a dash would read as a minus)."""
    return span(lo, hi, decimals)


def _how_well(found: Agreement) -> str:
    """What the sentence says of κ: how well the judge agrees, or why κ cannot say (a side gave one score)."""
    judge_one, human_one = found.judge_one_score, found.human_one_score
    if found.kappa is None or (judge_one is not None and human_one is not None):
        return f"neither the judge's scores nor yours vary ({found.labels} labels): κ says nothing"
    if judge_one is not None:
        return (
            f"the judge gave one score ({judge_one:g}) whatever the answer: it cannot tell runs apart "
            f"(κ {figure(found.kappa)}, {found.labels} labels)"
        )
    if human_one is not None:
        return (
            f"you gave every labelled run one score ({human_one:g}): the labels cannot show whether the judge tells "
            f"runs apart (κ {figure(found.kappa)}, {found.labels} labels)"
        )
    text = (
        f"the judge agrees with you {agreement_word(found.kappa)} "
        f"(κ {figure(found.kappa)} {interval_text(found.kappa_lo, found.kappa_hi)}, {found.labels} labels)"
    )
    if found.other_than_mode < FEW_OTHER and found.human_mode is not None:
        text += (
            f"; only {found.other_than_mode} of your labels are other than {found.human_mode:g}: κ rests on "
            f"{'it' if found.other_than_mode == 1 else 'them'}, label more such runs before reading it"
        )
    return text


def _scores_by(bias: float) -> str:
    return "over-scores" if bias > 0 else "under-scores"


def _said(lo: float | None, hi: float | None, value: float | None, least: float) -> bool:
    """A bias worth a sentence: its interval leaves out 0 and it is at least ``least`` points."""
    if value is None or lo is None or hi is None:
        return False
    return (lo > 0 or hi < 0) and abs(value) >= least


def _sentence(
    name: str | None, found: Agreement, relative: tuple[float | None, ...], against: str | None, margin: float
) -> tuple[str, bool]:
    """The plain sentence of one group (``name`` None: every label), and whether it says not to trust the judge-only
    verdict."""
    where = "" if name is None else f"on {name}: "
    if found.labels < MIN_AGREEMENT:
        return f"{where}too few labels to say ({found.labels} labels, {MIN_AGREEMENT} needed)", False
    text = where + _how_well(found)
    rel, rel_lo, rel_hi = relative
    if name is not None and against is not None and _said(rel_lo, rel_hi, rel, margin / 2):
        assert rel is not None
        return (
            f"{text}; the judge {_scores_by(rel)} {name} by {abs(rel):.1f} points against {against} "
            f"{interval_text(rel_lo, rel_hi, 1)}: don't trust its judge-only verdict"
        ), True
    if _said(found.bias_lo, found.bias_hi, found.bias, BIAS_SAID):
        assert found.bias is not None
        whom = f" {name}" if name is not None else ""
        span = interval_text(found.bias_lo, found.bias_hi, 1)
        return f"{text}; it {_scores_by(found.bias)}{whom} by {abs(found.bias):.1f} points {span}", False
    return text, False


def agreement_rows(
    runs: pl.DataFrame, scores: Mapping[str, float], entries: list[str], reference: str, margin: float
) -> list[dict[str, object]]:
    """The agreement frame's figures and words (`AGREEMENT_SCHEMA` without the verdict columns): one row per entry of
    ``entries``, then `ALL_ENTRIES`; ``distrust`` (not a column) says the sentence warns off the judge-only verdict."""
    pairs, left_out = _pairs(runs, scores)
    groups = {e: pairs.filter(pl.col("entry") == e) for e in entries}
    # each group its own seed, so two groups' resamples are independent (the relative bias pairs them)
    found = {
        e: agreement(g["judge"].to_numpy(), g["human"].to_numpy(), seed=SEED + k, inputs=g["input_id"].to_numpy())
        for k, (e, g) in enumerate(groups.items())
    }
    ref = found.get(reference)
    rows: list[dict[str, object]] = []
    for entry in entries:
        own = found[entry]
        relative: tuple[float | None, ...] = (None, None, None)
        comparable = ref is not None and entry != reference and min(own.labels, ref.labels) >= MIN_AGREEMENT
        if comparable and own.boot_bias is not None and ref is not None and ref.boot_bias is not None:
            assert own.bias is not None and ref.bias is not None
            boot = own.boot_bias - ref.boot_bias
            lo, hi = np.quantile(boot, [0.025, 0.975])
            relative = (own.bias - ref.bias, float(lo), float(hi))
        sentence, distrust = _sentence(entry, own, relative, reference if entry != reference else None, margin)
        rows.append({**_row(entry, own, left_out.get(entry, 0), relative, sentence), "distrust": distrust})
    every = agreement(pairs["judge"].to_numpy(), pairs["human"].to_numpy(), inputs=pairs["input_id"].to_numpy())
    dropped = sum(left_out.values())
    sentence, _ = _sentence(None, every, (None, None, None), None, margin)
    if dropped:
        sentence += (
            f"; {dropped} labels on failed or unjudged runs left out (a failed run scores 0 on both scales, "
            "and a run the judge gave no score has nothing to agree with)"
        )
    rows.append({**_row(ALL_ENTRIES, every, dropped, (None, None, None), sentence), "distrust": False})
    return rows


def _row(
    entry: str, found: Agreement, left_out: int, relative: tuple[float | None, ...], sentence: str
) -> dict[str, object]:
    fields = (
        "labels",
        "kappa",
        "kappa_lo",
        "kappa_hi",
        "spearman",
        "spearman_lo",
        "spearman_hi",
        "bias",
        "bias_lo",
        "bias_hi",
    )
    word = _word(found) if found.labels >= MIN_AGREEMENT else None
    return {
        "entry": entry,
        "left_out": left_out,
        **{f: getattr(found, f) for f in fields},
        "relative_bias": relative[0],
        "relative_lo": relative[1],
        "relative_hi": relative[2],
        "agreement": word,
        "sentence": sentence,
    }


def _word(found: Agreement) -> str | None:
    """The agreement column's word: none when κ cannot say (a side gave one score; a judge that did is said to be
    no better than chance, which is what its κ of 0 is)."""
    if found.kappa is None or found.human_one_score is not None:
        return None
    return "no better than chance" if found.judge_one_score is not None else agreement_word(found.kappa)
