"""Cost and latency relative to the reference entry: the ratios of a report's models frame (re-exported by
`gradebench._stats.paired`)."""

from __future__ import annotations

import polars as pl

__all__ = ["RATIOS_SCHEMA", "ratios"]

_F, _S = pl.Float64(), pl.String()
RATIOS_SCHEMA: dict[str, pl.DataType] = {
    "entry": _S,
    "cost_ratio": _F,
    "latency_ratio": _F,
    "cost_per_point": _F,
    "cost_per_point_ratio": _F,
}
"""One row per entry of the models frame: cost and latency relative to the reference entry."""


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
