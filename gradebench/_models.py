"""The per-entry view of a report: means with their intervals, the verdict against the reference, ratios, floors.

Built from the ``runs`` frame (and the judge-noise rows). Means over scores count a failed run as 0 (it is never
judged); token means are unknown (null) when any run's tokens are; ``cost_per_run`` spreads every run's cost, failed
ones included, and is unknown when any run's cost is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import polars as pl

from . import _stats
from ._adaptive import Unit, unit_verdicts
from ._codec import frame
from ._meta import ReportMeta
from ._vocab import Design, Role

__all__ = ["MODELS_SCHEMA", "NOISE_SCHEMA", "conform", "models_frame"]

MODELS_SCHEMA: dict[str, pl.DataType] = {
    "entry": pl.String(),
    "model": pl.String(),
    "grade": pl.String(),
    "simulated": pl.Boolean(),
    "runs": pl.Int64(),
    "ok_rate": pl.Float64(),
    "score_mean": pl.Float64(),
    "score_lo": pl.Float64(),
    "score_hi": pl.Float64(),
    "accuracy_mean": pl.Float64(),
    "work_mean": pl.Float64(),
    "scorer_mean": pl.Float64(),
    "calls_mean": pl.Float64(),
    "input_tokens_mean": pl.Float64(),
    "output_tokens_mean": pl.Float64(),
    "cached_input_tokens_mean": pl.Float64(),
    "reasoning_tokens_mean": pl.Float64(),
    "latency_s_mean": pl.Float64(),
    "wall_s_mean": pl.Float64(),
    "cost_per_run": pl.Float64(),
    "spent_now": pl.Float64(),
    "currency": pl.String(),
    "judged": pl.Int64(),
    "is_reference": pl.Boolean(),
    "verdict": pl.String(),
    "margin": pl.Float64(),
    "mean_diff": pl.Float64(),
    "lower": pl.Float64(),
    "upper": pl.Float64(),
    "p_value": pl.Float64(),
    "n_inputs": pl.Int64(),
    "n_pairs": pl.Int64(),
    "more_runs": pl.Int64(),
    "verdict_reason": pl.String(),
    "cost_ratio": pl.Float64(),
    "latency_ratio": pl.Float64(),
    "cost_per_point": pl.Float64(),
    "cost_per_point_ratio": pl.Float64(),
    "swap_gap_mean": pl.Float64(),
    "floor_runs": pl.Int64(),
    "floor_std": pl.Float64(),
    "floor_range": pl.Float64(),
    "floor_moved": pl.Float64(),
    "stopped": pl.String(),
}
"""One row per candidate entry: means and intervals, the verdict against the reference, ratios, the judge's floor."""


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


def models_frame(runs: pl.DataFrame, noise: pl.DataFrame, meta: ReportMeta) -> pl.DataFrame:
    """Per candidate entry, in order of first appearance (columns of `MODELS_SCHEMA`); see `BenchmarkReport.models`."""
    candidates = runs.filter(pl.col("role") == Role.CANDIDATE)
    reference_entry = meta.reference_entry
    rows = []
    for part in candidates.partition_by("entry", maintain_order=True) if candidates.height else []:
        first = part.row(0, named=True)
        ok = part.filter(pl.col("ok"))
        scores = part["score"].drop_nulls()
        lo, hi = _interval(runs, first["entry"], _mean(scores))
        rows.append(
            {
                "entry": first["entry"],
                "model": first["model"],
                "grade": first["grade"],
                "simulated": first["simulated"],
                "runs": part.height,
                "ok_rate": ok.height / part.height,
                "score_mean": _mean(scores),
                "score_lo": lo,
                "score_hi": hi,
                "accuracy_mean": _mean(part["accuracy"]),
                "work_mean": _mean(part["work"]),
                "scorer_mean": _mean(part["scorer"]),
                "calls_mean": _mean(ok["calls"]),
                "input_tokens_mean": _known_mean(ok["input_tokens"]),
                "output_tokens_mean": _known_mean(ok["output_tokens"]),
                "cached_input_tokens_mean": _known_mean(ok["cached_input_tokens"]),
                "reasoning_tokens_mean": _known_mean(ok["reasoning_tokens"]),
                "latency_s_mean": _mean(ok["latency_s"]),
                "wall_s_mean": _mean(ok["wall_s"]),
                "cost_per_run": None if (cost := _total(part["cost"])) is None else cost / part.height,
                "spent_now": _total(part["spent_now"]),
                "currency": first["currency"],
                "judged": part.filter(pl.col("judge_entry").is_not_null() & pl.col("score").is_not_null()).height,
                "is_reference": first["entry"] == reference_entry,
            }
        )
    return _with_verdicts(frame(rows, MODELS_SCHEMA), runs, noise, meta)


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


def _with_verdicts(models: pl.DataFrame, runs: pl.DataFrame, noise: pl.DataFrame, meta: ReportMeta) -> pl.DataFrame:
    """The verdict of each entry against the reference entry, the ratios to it, the swap gap and noise floor."""
    if not models.height:
        return models
    reference = meta.reference_entry
    if meta.spec.design is Design.AUTO:
        verdicts = _sequential_verdicts(runs, meta)
    else:
        verdicts = _stats.verdicts(runs, reference, margin=meta.spec.margin)
    verdicts = verdicts.select(
        "entry",
        "verdict",
        "margin",
        "mean_diff",
        "lower",
        "upper",
        "p_value",
        "n_inputs",
        "n_pairs",
        "more_runs",
        pl.col("reason").alias("verdict_reason"),
    )
    candidates = runs.filter(pl.col("role") == Role.CANDIDATE)
    swap = candidates.group_by("entry").agg(pl.col("swap_gap").mean().alias("swap_gap_mean"))
    floor = noise.group_by("entry").agg(
        pl.len().cast(pl.Int64).alias("floor_runs"),
        pl.col("std").mean().alias("floor_std"),
        pl.col("range").mean().alias("floor_range"),
        pl.col("moved").cast(pl.Float64).mean().alias("floor_moved"),
    )
    stops = pl.DataFrame(
        {"entry": list(meta.stops), "stopped": list(meta.stops.values())},
        schema={"entry": pl.String, "stopped": pl.String},
    )
    extras = (verdicts, _stats.ratios(models, reference), swap, floor, stops)
    out = models.drop([c for extra in extras for c in extra.columns if c != "entry"])
    for extra in extras:
        out = out.join(extra, on="entry", how="left", maintain_order="left")
    return conform(out, MODELS_SCHEMA, "models")


def _sequential_verdicts(runs: pl.DataFrame, meta: ReportMeta) -> pl.DataFrame:
    """A race to a verdict's verdicts: each entry's anytime-valid bounds over its paired units, in draw order."""
    candidates = runs.filter(pl.col("role") == Role.CANDIDATE)
    scores = {
        (r["entry"], Unit(r["input_id"], r["repeat"])): r["score"]
        for r in candidates.select("entry", "input_id", "repeat", "score").iter_rows(named=True)
    }
    units = [Unit(i, k) for i, k in meta.units]
    entries = candidates["entry"].unique(maintain_order=True).to_list()
    found = unit_verdicts(scores, entries, meta.reference_entry, units, meta.spec.margin)
    rows = []
    for entry in entries:
        v = found.get(entry)
        row: dict[str, Any] = {"entry": entry, "margin": meta.spec.margin}
        if v is not None:
            inputs = {u.input_id for u in units if (entry, u) in scores and (meta.reference_entry, u) in scores}
            row.update(
                verdict=v.verdict,
                mean_diff=v.mean,
                lower=v.lower,
                upper=v.upper,
                n_inputs=len(inputs),
                n_pairs=v.n,
                reason=v.reason,
            )
        rows.append(row)
    return frame(rows, _stats.VERDICT_SCHEMA)
