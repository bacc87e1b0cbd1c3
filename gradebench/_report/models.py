"""The per-entry view of a report: means with their intervals, the verdict against the reference, ratios, floors.

One `EntrySummary` record is one row of ``report.models``, and the frame's schema (`MODELS_SCHEMA`) is derived from
the record's fields (`Columns`), so it is never written twice. `entry_summaries` makes each entry's means from the
``runs`` frame; `models_frame` joins in its verdict as the verdict pipeline made it (`gradebench._verdict.pipeline`:
the design's bounds, the evidence, the negative controls, the labels), its ratios to the reference entry, the judge's
order gap and noise floor (the judge-noise rows), and why it stopped. Means over scores count a failed run as 0 (it
is never judged); token means are unknown (null) when any run's tokens are; ``cost_per_run`` spreads every run's
cost, failed ones included, and is unknown when any run's cost is, or when no call of any run was answered (the
endpoint failed them all: nothing was priced, so what it costs is unknown, not 0). An entry whose calls were answered
and priced but whose job code failed on every answer has its cost: it was paid.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from .._base.vocab import Role, VerdictBasis
from .._records.codec import Columns, frame
from .._records.meta import ReportMeta
from .._stats import paired as _stats
from .._verdict.gold import GoldScore, gold_inputs, reference_gold
from .._verdict.pipeline import EntryVerdicts

__all__ = [
    "MODELS_PARTS",
    "MODELS_SCHEMA",
    "NOISE_SCHEMA",
    "EntrySummary",
    "GoldScore",
    "conform",
    "entry_summaries",
    "gold_inputs",
    "models_frame",
    "noise_rows",
    "reference_gold",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class EntrySummary:
    """One candidate entry of a report (a row of ``report.models``): its means and their interval, the verdict
    against the reference entry, the ratios to it, the judge's order gap and noise floor, and why it stopped.

    Means over scores count a failed run as 0; token means are unknown (None) when any ok run's tokens are. The
    fields after ``is_reference`` are joined in from the verdicts, ratios and judge-noise rows (None: not there).
    """

    entry: str
    """The catalog entry raced."""
    model: str
    """Model id of the entry."""
    grade: str
    """Grade of the entry."""
    simulated: bool
    """True when the entry is part of the simulated fleet."""
    runs: int
    """The entry's candidate runs, failed ones included."""
    ok_rate: float
    """Share of the runs that returned an output."""
    score_mean: float | None
    """Mean judge score, 0..10, over the runs that have one (a failed run scores 0); None when none was judged."""
    score_lo: float | None
    """Lower end of the seeded 95% paired bootstrap interval of the score (inputs resampled, repeats nested)."""
    score_hi: float | None
    """Upper end of that interval; both ends None below two scored runs."""
    accuracy_mean: float | None
    """Mean accuracy, 0..7, over the runs that have one (a failed run scores 0)."""
    work_mean: float | None
    """Mean work, 0..3, over the runs that have one (a failed run scores 0)."""
    scorer_mean: float | None
    """Mean score in code, 0..1, over the runs the scorer scored; None without a scorer."""
    gold_mean: float | None = None
    """Accuracy against the gold labels the inputs carry, 0..1: the mean score of a scorer that reads the input (a
    gold scorer, which scores the reference run too) over the entry's runs, a failed run counting 0 on an input with a
    gold label; None when the scorer compares with the reference's output (or there is none)."""
    calls_mean: float | None
    """Model calls per ok run."""
    input_tokens_mean: float | None
    """Prompt tokens per ok run (cached ones included); None when any ok run's are unknown."""
    output_tokens_mean: float | None
    """Completion tokens per ok run (reasoning ones included); None when any ok run's are unknown."""
    cached_input_tokens_mean: float | None
    """Prompt tokens served from the provider's cache, per ok run; None when any ok run's are unknown."""
    reasoning_tokens_mean: float | None
    """Completion tokens spent reasoning, per ok run; None when any ok run's are unknown."""
    latency_s_mean: float | None
    """Sum of the model-call latencies per ok run, in seconds."""
    wall_s_mean: float | None
    """Wall time per ok run, in seconds."""
    cost_per_run: float | None
    """Every run's cost (failed ones included) spread over ``runs``; None when any run's cost is unknown, or when no
    call of any run was answered (the endpoint failed them all: nothing was priced, so its cost is unknown, not 0).
    Runs that failed in the job's code on answers the provider priced have their cost."""
    spent_now: float | None
    """What the entry's runs cost this time (cache hits cost nothing); None when any run's cost is unknown."""
    currency: str
    """Currency of the costs."""
    judged: int
    """Runs the judge scored (a failed run is never judged; a judge error leaves a run out)."""
    is_reference: bool
    """True on the reference entry's own candidate runs against its reference run (``*`` in the table)."""
    verdict: str | None = None
    """``as good``, ``worse`` or ``inconclusive`` against the reference entry; None when not tested (the reference
    entry itself), or when the entry's endpoint failed most of its runs (``verdict_basis`` ``unmeasured``)."""
    margin: float | None = None
    """The non-inferiority margin tested, points of 10."""
    mean_diff: float | None = None
    """Mean over the paired inputs of this entry's mean minus the reference entry's."""
    lower: float | None = None
    """Lower confidence bound of ``mean_diff`` (one-sided 95%; repeated over the looks, one-sided 97.5%, when raced to a
    verdict)."""
    upper: float | None = None
    """Upper confidence bound of ``mean_diff``."""
    p_value: float | None = None
    """One-sided bootstrap p-value for H0: difference ≤ −margin (None when raced to a verdict)."""
    n_inputs: int | None = None
    """Paired inputs the verdict rests on (it needs `MIN_INPUTS` of them)."""
    n_pairs: int | None = None
    """Paired runs the verdict rests on."""
    more_runs: int | None = None
    """For ``inconclusive``: about how many more paired runs would likely settle it; else None."""
    verdict_reason: str | None = None
    """Why the verdict is what it is, in one sentence."""
    verdict_held: bool | None = None
    """True when what the runs show keeps the verdict open whatever its bounds say (the judge gave every run one
    score, or the entry's answers were cut off or refused on most runs): more runs of the same would not settle it."""
    verdict_basis: VerdictBasis | None = None
    """What the verdict rests on: ``judge-only``, or ``label-corrected`` by human labels (`BenchmarkReport.with_labels`;
    its bounds then hold on the person's scale, whatever the judge's bias); ``unmeasured`` when the entry's endpoint
    failed more than half its runs (no connection, an HTTP error, a timeout: the runs' ``endpoint_error``), so it has
    no verdict and ``verdict_reason`` says why; None when not tested. Runs the endpoint failed are left out of every
    verdict's pairs (never scored 0 there), and the reason says how many."""
    more_labels: int | None = None
    """For an inconclusive label-corrected verdict: about how many more labels (on the entry and the reference entry
    together) would likely settle it; None otherwise, or when labelling every run would not."""
    cost_ratio: float | None = None
    """``cost_per_run`` over the reference entry's; None when either is unknown or the reference's is 0."""
    latency_ratio: float | None = None
    """``latency_s_mean`` over the reference entry's."""
    cost_per_point: float | None = None
    """``cost_per_run`` per point of ``score_mean``; None when the score is 0 or unknown."""
    cost_per_point_ratio: float | None = None
    """``cost_per_point`` over the reference entry's."""
    swap_gap_mean: float | None = None
    """Under the label-bias check: the mean gap between the two presentation orders' scores (None otherwise)."""
    floor_runs: int | None = None
    """Runs re-judged for the judge-noise floor (None until `Benchmark.judge_noise`)."""
    floor_std: float | None = None
    """The judge-noise floor: the mean spread (std) of a re-judged run's scores."""
    floor_range: float | None = None
    """The mean range (max − min) of a re-judged run's scores."""
    floor_moved: float | None = None
    """Share of the re-judged runs whose score moved."""
    stopped: str | None = None
    """Why the entry stopped receiving runs before the plan's end (settled, max_runs, budget); None when it did not."""

    def to_row(self) -> dict[str, Any]:
        """The entry's row in the report's ``models`` frame."""
        return _ENTRY.row(self)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> EntrySummary:
        """An entry taken back from its row."""
        return cls(**_ENTRY.values(row))


_ENTRY = Columns(EntrySummary, [f.name for f in dataclasses.fields(EntrySummary)])
MODELS_SCHEMA: dict[str, pl.DataType] = _ENTRY.schema
"""One row per candidate entry (the fields of `EntrySummary`): means and intervals, the verdict against the
reference, ratios, the judge's floor."""


NOISE_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String(),
    "entry": pl.String(),
    "input_id": pl.String(),
    "score": pl.Float64(),
    "replicas": pl.List(pl.Float64()),
    "std": pl.Float64(),
    "range": pl.Float64(),
    "moved": pl.Boolean(),
}
"""One row per re-judged run (`Benchmark.judge_noise`): its verdict's score, the replica scores and their spread."""


def noise_rows(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows of ``run_id, entry, input_id, score, replicas`` (a re-judged run's score and its replicas' scores) with
    their spread: the `NOISE_SCHEMA` rows of the judge-noise floor."""
    noise = []
    for r in rows:
        scores = [float(x) for x in r["replicas"]]
        every = [float(r["score"]), *scores] if r["score"] is not None else scores
        spread = {
            "std": float(np.std(every)) if every else None,
            "range": (max(every) - min(every)) if every else None,
            "moved": any(x != r["score"] for x in scores),
        }
        noise.append({**r, "replicas": scores, **spread})
    return noise


def conform(df: pl.DataFrame, schema: dict[str, pl.DataType], what: str) -> pl.DataFrame:
    """Columns in the declared order and dtypes (extra columns kept after them); a missing column raises."""
    missing = [c for c in schema if c not in df.columns]
    if missing:
        raise ValueError(f"{what} lacks columns {missing}")
    extra = [c for c in df.columns if c not in schema]
    return df.select([pl.col(c).cast(t) for c, t in schema.items()] + [pl.col(c) for c in extra])


def _total(values: Iterable[Any]) -> float | None:
    """The sum, or None when any value is unknown."""
    total = 0.0
    for v in values:
        if v is None:
            return None
        total += v
    return total


def _mean(series: pl.Series) -> float | None:
    values = series.drop_nulls()
    return float(values.mean()) if len(values) else None  # type: ignore[arg-type]


def _known_mean(series: pl.Series) -> float | None:
    """The mean, or None when any value is unknown (a mean over the runs that reported would flatter the entry)."""
    return None if series.null_count() else _mean(series)


_SUMMARY_COLUMNS = (
    *("input_id", "role", "entry", "model", "grade", "simulated", "repeat", "ok", "calls"),
    *("input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens", "latency_s", "wall_s"),
    *("cost", "cost_source", "spent_now", "currency", "score", "accuracy", "work", "judge_entry"),
    *("scorer", "scorer_error"),
)
"""The columns of ``runs`` an entry's means read: not its texts (output, reason, tool diff), the bulk of a row."""


def entry_summaries(runs: pl.DataFrame, meta: ReportMeta) -> pl.DataFrame:
    """Per candidate entry, in order of first appearance (columns of `MODELS_SCHEMA`): its means as an `EntrySummary`,
    before the verdicts, ratios and floors are joined in (`models_frame`)."""
    runs = runs.select(_SUMMARY_COLUMNS)  # the filters and parts below copy every column they carry
    candidates = runs.filter(pl.col("role") == Role.CANDIDATE)
    reference_entry = meta.reference_entry
    gold = gold_inputs(runs)
    rows = []
    for part in candidates.partition_by("entry", maintain_order=True) if candidates.height else []:
        first = part.row(0, named=True)
        ok = part.filter(pl.col("ok"))
        scores = part["score"].drop_nulls()
        lo, hi = _interval(runs, first["entry"], _mean(scores))
        cost = _total(part["cost"])
        priced = ok.height or part["cost_source"].is_not_null().any()  # some call was answered and priced
        summary = EntrySummary(
            entry=first["entry"],
            model=first["model"],
            grade=first["grade"],
            simulated=first["simulated"],
            runs=part.height,
            ok_rate=ok.height / part.height,
            score_mean=_mean(scores),
            score_lo=lo,
            score_hi=hi,
            accuracy_mean=_mean(part["accuracy"]),
            work_mean=_mean(part["work"]),
            scorer_mean=_mean(part["scorer"]),
            gold_mean=_gold_mean(part, gold) if gold is not None else None,
            calls_mean=_mean(ok["calls"]),
            input_tokens_mean=_known_mean(ok["input_tokens"]),
            output_tokens_mean=_known_mean(ok["output_tokens"]),
            cached_input_tokens_mean=_known_mean(ok["cached_input_tokens"]),
            reasoning_tokens_mean=_known_mean(ok["reasoning_tokens"]),
            latency_s_mean=_mean(ok["latency_s"]),
            wall_s_mean=_mean(ok["wall_s"]),
            cost_per_run=None if cost is None or not priced else cost / part.height,
            spent_now=_total(part["spent_now"]),
            currency=first["currency"],
            judged=part.filter(pl.col("judge_entry").is_not_null() & pl.col("score").is_not_null()).height,
            is_reference=first["entry"] == reference_entry,
        )
        rows.append(summary.to_row())
    return frame(rows, MODELS_SCHEMA)


def models_frame(
    summaries: pl.DataFrame, verdicts: EntryVerdicts, runs: pl.DataFrame, noise: pl.DataFrame, meta: ReportMeta
) -> pl.DataFrame:
    """The entries' ``summaries`` (`entry_summaries`) with their ``verdicts`` against the reference entry joined in
    as they are (`gradebench._verdict.pipeline`), then the ratios to it, the swap gap, the noise floor and why each
    entry stopped; see `BenchmarkReport.models`."""
    if not summaries.height:
        return summaries
    reference = meta.reference_entry
    candidates = runs.filter(pl.col("role") == Role.CANDIDATE)
    swap = candidates.group_by("entry").agg(pl.col("swap_gap").mean().alias("swap_gap_mean"))
    floor = noise.group_by("entry").agg(
        pl.len().cast(pl.Int64).alias("floor_runs"),
        pl.col("std").mean().alias("floor_std"),
        pl.col("range").mean().alias("floor_range"),
        pl.col("moved").cast(pl.Float64).mean().alias("floor_moved"),
    )
    stops = {**_cut_short(summaries, meta), **verdicts.stops, **meta.stops}
    stopped = pl.DataFrame(
        {"entry": list(stops), "stopped": list(stops.values())}, schema={"entry": pl.String, "stopped": pl.String}
    )
    extras = (verdicts.frame, _stats.ratios(summaries, reference), swap, floor, stopped)
    out = summaries.drop([c for extra in extras for c in extra.columns if c != "entry"])
    for extra in extras:
        out = out.join(extra, on="entry", how="left", maintain_order="left")
    return conform(out, MODELS_SCHEMA, "models")


def _gold_mean(part: pl.DataFrame, gold: set[str]) -> float | None:
    """An entry's mean score against the gold labels: a failed run on an input with a gold label counts 0."""
    values = [
        0.0 if not ok else score
        for ok, score, input_id in part.select("ok", "scorer", "input_id").iter_rows()
        if (score is not None) or (not ok and input_id in gold)
    ]
    return sum(values) / len(values) if values else None


def _interval(runs: pl.DataFrame, entry: str, mean: float | None) -> tuple[float | None, float | None]:
    """95% paired bootstrap interval (inputs resampled, repeats nested) of an entry's mean over its judged runs."""
    if mean is None:
        return None, None
    # the runs the mean is over: every scored run (a failed run is not judged, and scores 0)
    judged = runs.filter((pl.col("entry") == entry) & pl.col("score").is_not_null())
    if judged.height < 2:
        return None, None
    ci = _stats.paired_bootstrap(judged, entry)
    if ci.lo is None or ci.hi is None:
        return None, None
    return min(ci.lo, mean), max(ci.hi, mean)  # inputs weigh equally there: keep the plain mean inside


def _cut_short(models: pl.DataFrame, meta: ReportMeta) -> dict[str, str]:
    """For a race stopped early, each entry whose runs had not all landed, and how many had (a race to a verdict's
    plan is its waves: an entry still racing is cut short whatever it had made)."""
    if meta.stopped is None:
        return {}
    cut = {}
    for entry, runs, tested in models.select("entry", "runs", pl.col("is_reference").not_()).iter_rows():
        if meta.spec.design.to_verdict:
            if tested:
                cut[entry] = f"{meta.stopped}: {_stats.plural(runs, 'run')} landed before the stop"
        elif runs < (planned := int(meta.spec.runs) * len(meta.inputs)):
            cut[entry] = f"{meta.stopped}: {runs} of {planned} runs landed before the stop"
    return cut


MODELS_PARTS: tuple[tuple[type, Columns], ...] = ((EntrySummary, _ENTRY),)
"""The record whose fields are the models frame's columns (the docs' column page reads their docstrings)."""
