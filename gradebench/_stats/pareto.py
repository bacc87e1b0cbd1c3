"""The Pareto front of a report's entries: cost (or latency) against quality (`gradebench.charts.pareto_front`)."""

from __future__ import annotations

import polars as pl

__all__ = ["pareto_front"]


def pareto_front(models: pl.DataFrame, x: str = "cost_per_run") -> list[str]:
    """The entries no other entry beats on both ``x`` (lower is better) and ``score_mean``, cheapest first.

    An entry is beaten when another has ``x`` lower-or-equal and score higher-or-equal, one of them strictly; entries
    tied on both stay on the front together. Entries without a score or an ``x`` value are left out, and so is an
    entry with no ok run (``ok_rate`` 0): what it would cost or take to answer is unknown, however little it spent.
    """
    answered = pl.col("ok_rate").fill_null(1.0) > 0 if "ok_rate" in models.columns else pl.lit(True)
    rows = models.filter(answered).select(x, "score_mean", "entry").iter_rows()
    points = [(v, score, entry) for v, score, entry in rows if v is not None and score is not None]

    def beaten(p: tuple[float, float, str]) -> bool:
        return any(q[0] <= p[0] and q[1] >= p[1] and (q[0] < p[0] or q[1] > p[1]) for q in points)

    return [p[2] for p in sorted((p for p in points if not beaten(p)), key=lambda p: (p[0], -p[1]))]
