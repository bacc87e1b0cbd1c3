"""How far the judges of a panel agree: weighted κ and the mean difference of each pair, per entry too, in words.

Over the runs both judges of a pair scored: Cohen's κ with quadratic weights on the score itself
(`gradebench._stats.kappa`, the same κ a judge's agreement with a person's labels is measured by; undefined when a
neither judge's scores vary; 0 for a judge that gave every run one score, which the sentence names) and the mean
difference ``b − a`` (the second judge's score minus the first's). Both with a 95% interval over inputs (the runs of
one input are alike, so inputs are the units; see `_intervals`), whose coverage is measured by
`benchmarks/agreement_coverage.py` (and checked in `tests/judge/test_judges.py`).

Per entry, the mean difference says whom a judge favours: a judge that scores one entry's runs higher than the other
judge does, and the other entries' not, is biased for that entry — most often one of its own family (Panickssery et
al. 2024; see the ``judge_family`` diagnostic, which quotes these figures). The sentences are said beside the
verdicts and the judge-noise floor (`gradebench._report.present`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import polars as pl

from .._base.numbers import figure, signed, span
from .._records.meta import ReportMeta
from .._stats.kappa import kappa, kappa_interval, unit_sums
from .._stats.paired import BOOTSTRAP
from .._stats.t import t_two_sided
from .panel import panel_label

__all__ = ["JudgeAgreement", "JudgePair", "judge_agreement", "judges_lines", "judges_text"]

WELL = 0.8
"""κ from which two judges are said to agree well (from 0.6: at least fairly; below 0.6: poorly)."""
FAIRLY = 0.6
LEVEL = BOOTSTRAP.level
"""The intervals' confidence level: the report's (95%)."""
MIN_INPUTS = 5
"""Fewest inputs the intervals are drawn over: fewer say little about a race."""


@dataclass(frozen=True, kw_only=True)
class JudgePair:
    """Two judges of a panel over the runs both scored: their κ and mean difference, overall and per entry."""

    first: str
    """The first judge (of the panel's order)."""
    second: str
    """The second judge: ``mean_diff`` is its score minus the first's."""
    runs: int
    """Runs both judges scored."""
    kappa: float | None
    """Quadratic-weighted κ (1: the same scores; 0: no better than chance, or a judge gave every run one score);
    None when not defined (no run both scored, or neither judge's scores vary)."""
    kappa_lo: float | None
    """Lower end of its 95% interval (over inputs; None below `MIN_INPUTS` inputs)."""
    kappa_hi: float | None
    """Upper end."""
    mean_diff: float | None
    """Mean of the second judge's score minus the first's, points of 10."""
    diff_lo: float | None
    """Lower end of its 95% interval."""
    diff_hi: float | None
    """Upper end."""
    by_entry: dict[str, float] = field(default_factory=dict)
    """Per entry, the mean of the second judge's score minus the first's over its runs both scored."""
    entry_runs: dict[str, int] = field(default_factory=dict)
    """Per entry, the runs both scored."""
    one_score: dict[str, float] = field(default_factory=dict)
    """The judges of the pair that gave every run both scored one score, and that score."""

    def difference_of(self, entry: str, against: Iterable[str] | None = None) -> float | None:
        """How much more the second judge gives ``entry``'s runs than the first does, beyond what it gives the runs of
        the entries ``against`` (default: every other entry; their mean difference over their runs); None when either
        side has no run."""
        pool = set(self.by_entry) - {entry} if against is None else set(against) - {entry}
        others = [(d, self.entry_runs[e]) for e, d in self.by_entry.items() if e in pool]
        if entry not in self.by_entry or not others:
            return None
        rest = sum(d * n for d, n in others) / sum(n for _, n in others)
        return self.by_entry[entry] - rest

    def sentence(self) -> str:
        """``sim/oracle and sim/sage agree well: weighted κ 0.86 [0.78–0.91]; sim/sage scores 0.42 higher [+0.20,
        +0.66] on 80 runs both judged``. How well they agree is said of the whole interval (`agreement_word`)."""
        if self.kappa is None or len(self.one_score) == 2:
            how = "cannot be compared (neither judge's scores vary)" if self.runs else "scored no run in common"
            return f"{self.first} and {self.second} {how}"
        if self.one_score:
            judge, score = next(iter(self.one_score.items()))
            other = self.second if judge == self.first else self.first
            return (
                f"{judge} gave one score ({score:g}) to every run whatever the answer: it cannot tell runs apart "
                f"(weighted κ {_n(self.kappa)} against {other}, {self.runs} runs both judged)"
            )
        interval = f" {span(self.kappa_lo, self.kappa_hi)}" if self.kappa_lo is not None else ""
        head = f"{self.first} and {self.second} {self.agreement_word()}: weighted κ {_n(self.kappa)}{interval}"
        d, lo, hi = self.mean_diff, self.diff_lo, self.diff_hi
        assert d is not None
        if lo is not None and hi is not None and (lo > 0 or hi < 0):
            who = f"{self.second} scores {abs(d):.2f} {'higher' if d > 0 else 'lower'} [{_signed(lo)}, {_signed(hi)}]"
        else:
            within = f" [{_signed(lo)}, {_signed(hi)}]" if lo is not None and hi is not None else ""
            who = f"no systematic difference ({self.second} − {self.first} {_signed(d)}{within})"
        poor = self.kappa_hi is not None and self.kappa_hi < FAIRLY
        tail = ": read the runs they disagree on before trusting a verdict" if poor else ""
        return f"{head}; {who} on {self.runs} runs both judged{tail}"

    def agreement_word(self) -> str:
        """How well the two agree, said only as far as the interval of κ carries it: ``agree well`` (its lower end at
        least 0.8), ``agree at least fairly`` (0.6), ``agree poorly`` (its upper end below 0.6), else that the runs are
        too few to say (and so too when there is no interval: fewer than `MIN_INPUTS` inputs)."""
        lo, hi = self.kappa_lo, self.kappa_hi
        if lo is None or hi is None:
            return "cannot be said to agree or not: too few inputs"
        if lo >= WELL:
            return "agree well"
        if lo >= FAIRLY:
            return "agree at least fairly"
        if hi < FAIRLY:
            return "agree poorly"
        return "cannot be said to agree or not: too few runs"


@dataclass(frozen=True, kw_only=True)
class JudgeAgreement:
    """The agreement of a panel of judges (``report.judge_agreement()``): each pair, and the runs some judges of the
    panel gave no verdict on (unjudged: a panel's score is every judge's mean)."""

    judges: tuple[str, ...]
    """The panel, in its order."""
    pairs: tuple[JudgePair, ...]
    """Every pair of judges, in the panel's order."""
    incomplete: int = 0
    """Runs some judges scored and others gave no verdict on: left unjudged (out of every score)."""

    def lines(self, families: Mapping[str, str] | None = None, floor: float | None = None) -> list[str]:
        """The agreement in words: one line a pair (beside the judge-noise ``floor`` when measured), each entry's
        difference (marked where it shares the second judge's family) and the runs left unjudged."""
        fam = families or {}
        lines = []
        for pair in self.pairs:
            noise = f" (judge noise ±{floor:.2f} for comparison)" if floor is not None else ""
            lines.append(f"judges: {pair.sentence()}{noise}")
            if len(pair.by_entry) > 1:
                parts = []
                for entry, d in pair.by_entry.items():
                    own = [j for j in (pair.second, pair.first) if fam.get(j) and fam.get(j) == fam.get(entry)]
                    mark = f" (family of {own[0]})" if own else ""
                    parts.append(f"{entry} {_signed(d)}{mark}")
                lines.append(f"  by entry, {pair.second} − {pair.first}: " + ", ".join(parts))
        if self.incomplete:
            lines.append(
                f"judges: {self.incomplete} run{'s' * (self.incomplete != 1)} judged by only part of the panel "
                "(a judge gave no verdict) are left unjudged: a panel's score is every judge's mean"
            )
        return lines

    def notes(self) -> dict[str, str]:
        """Per entry, what its verdict line says of the judges: ``judges: sim/sage +1.10 vs sim/oracle``."""
        out: dict[str, list[str]] = {}
        for pair in self.pairs:
            for entry, d in pair.by_entry.items():
                out.setdefault(entry, []).append(f"{pair.second} {_signed(d)} vs {pair.first}")
        return {entry: "judges: " + ", ".join(parts) for entry, parts in out.items()}


def judge_agreement(verdicts: pl.DataFrame, judges: Sequence[str], *, level: float = LEVEL) -> JudgeAgreement | None:
    """The agreement of a panel from its verdicts frame (``report.verdicts``); None for fewer than two judges."""
    if len(judges) < 2:
        return None
    scored = verdicts.filter(pl.col("score").is_not_null())
    pairs = tuple(_pair(scored, a, b, level) for a, b in itertools.combinations(judges, 2))
    per_run = verdicts.group_by("run_id").agg(pl.col("score").is_not_null().sum().alias("scored"), pl.len())
    incomplete = per_run.filter((pl.col("scored") > 0) & (pl.col("scored") < pl.col("len"))).height
    return JudgeAgreement(judges=tuple(judges), pairs=pairs, incomplete=incomplete)


def _pair(scored: pl.DataFrame, first: str, second: str, level: float) -> JudgePair:
    a = scored.filter(pl.col("judge_entry") == first).select("run_id", "entry", "input_id", pl.col("score").alias("a"))
    b = scored.filter(pl.col("judge_entry") == second).select("run_id", pl.col("score").alias("b"))
    both = a.join(b, on="run_id", how="inner", maintain_order="left")
    x, y = both["a"].to_numpy().astype(float), both["b"].to_numpy().astype(float)
    by = both.group_by("entry", maintain_order=True).agg((pl.col("b") - pl.col("a")).mean().alias("d"), pl.len())
    k, d = kappa(x, y), float(np.mean(y - x)) if both.height else None
    k_lo, k_hi, d_lo, d_hi = _intervals(x, y, both["input_id"].to_list(), level)
    one_score = {j: float(v[0]) for j, v in ((first, x), (second, y)) if v.size and bool((v == v[0]).all())}
    return JudgePair(
        first=first,
        second=second,
        runs=both.height,
        kappa=k,
        kappa_lo=k_lo,
        kappa_hi=k_hi,
        mean_diff=d,
        diff_lo=d_lo,
        diff_hi=d_hi,
        by_entry={row["entry"]: float(row["d"]) for row in by.iter_rows(named=True)},
        entry_runs={row["entry"]: int(row["len"]) for row in by.iter_rows(named=True)},
        one_score=one_score,
    )


def _intervals(
    x: np.ndarray, y: np.ndarray, inputs: list[str], level: float
) -> tuple[float | None, float | None, float | None, float | None]:
    """``level`` intervals of κ and of the mean difference over inputs (none below `MIN_INPUTS` inputs), from the
    inputs' sums (so memory grows with inputs, not runs). κ's is `gradebench._stats.kappa.kappa_interval` (seeded, so
    a report says the same each time); the difference's the delete-one-input jackknife with Student's t at m − 1
    degrees of freedom. Coverage as measured: `benchmarks/agreement_coverage.py`."""
    sums = unit_sums(x, y, inputs)
    m = sums.shape[1]
    if m < MIN_INPUTS:
        return None, None, None, None
    n, sx, sy = (sums.sum(axis=1)[:, None] - sums)[:3]  # the sums without each input in turn
    t = t_two_sided(level, m - 1)
    d, spread = float(np.mean(y - x)), _jackknife_se(sy / n - sx / n)
    k_lo, k_hi = kappa_interval(sums, level, seed=_SEED) or (None, None)
    return k_lo, k_hi, d - t * spread, d + t * spread


_SEED = 0
"""The seed of κ's interval draws."""


def _jackknife_se(values: np.ndarray) -> float:
    """The jackknife standard error of a figure from its delete-one values."""
    m = len(values)
    return math.sqrt((m - 1) / m * float(((values - values.mean()) ** 2).sum()))


def judges_text(judges: Sequence[str]) -> str:
    """Who judged, as the report's header says it: ``judge sim/oracle``, ``judges sim/oracle + sim/sage``."""
    return f"judge{'s' * (len(judges) > 1)} {panel_label(judges) or '-'}"


class _Judged(Protocol):
    """What `judges_lines` reads of a report."""

    meta: ReportMeta

    @property
    def models(self) -> pl.DataFrame: ...

    def judge_agreement(self) -> JudgeAgreement | None: ...


def judges_lines(report: _Judged) -> list[str]:
    """A panel report's lines on its judges' agreement (`JudgeAgreement.lines`, beside the mean judge-noise floor
    when measured); none for a one-judge report."""
    found = report.judge_agreement()
    if found is None:
        return []
    floors = report.models["floor_std"].drop_nulls()
    floor = float(floors.mean()) if floors.len() else None  # type: ignore[arg-type]
    return found.lines(report.meta.families, floor)


def _n(value: float | None) -> str:
    return "-" if value is None else figure(value)


def _signed(value: float | None) -> str:
    return "-" if value is None else signed(value)
