"""Where the charts put their points: a fixed sample of a large race's runs, each run's own jitter, and the labels of
the quality charts' entries, placed clear of the points, the interval bars and the Pareto front's steps."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

import polars as pl

from .models import EntrySummary

__all__ = ["HEIGHT", "WIDTH", "Point", "drawn_runs", "jitter", "place_labels"]

WIDTH, HEIGHT = 560, 340
"""A chart's plot area, in pixels (what the labels are placed in)."""


def drawn_runs(runs: pl.DataFrame, later: pl.Expr, most: int) -> tuple[pl.DataFrame, str]:
    """The runs drawn as points (at most ``most`` an entry, in their order) and the note that says so when some are
    left out (empty when none is). ``later``: the runs drawn after the others (the common ones)."""
    counts = runs.group_by("entry").len()
    if not counts.height or counts["len"].max() <= most:  # type: ignore[operator]
        return runs, ""
    key = pl.col("run_id").map_elements(lambda r: jitter(r + "draw", 1.0), pl.Float64)  # the same sample each time
    ranked = runs.with_row_index("_at").with_columns(later.alias("_later"), key.alias("_key"))
    kept = ranked.sort("_later", "_key").group_by("entry", maintain_order=True).head(most)
    drawn = runs.with_row_index("_at").filter(pl.col("_at").is_in(kept["_at"].implode())).drop("_at")
    note = (
        f"{drawn.height:,} of {runs.height:,} runs drawn (at most {most:,} an entry, the rarer first, then "
        "a fixed sample): the means, intervals and counts use every run"
    )
    return drawn, note


def jitter(key: str, spread: float) -> float:
    """A deterministic offset in [-spread, spread] (the same run always lands in the same place)."""
    return (int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF * 2 - 1) * spread


@dataclass(frozen=True, slots=True)
class Point:
    """An entry as a quality chart draws it: its models row, its x (None: unknown) and its label."""

    row: EntrySummary
    x: float | None
    label: str
    data: dict[str, Any]
    """Its row of the chart's data: the models row and how it is drawn (`place_labels` adds ``lx``, ``ly``)."""


def place_labels(points: list[Point], front: list[str], lo: float, hi: float) -> None:
    """Give each drawn point a label position (``lx``, ``ly`` in data units) that avoids the points, the interval
    bars, the front's steps, the plot's edges and the labels already placed: a greedy pick among eight spots."""
    span = math.log10(hi) - math.log10(lo)

    def px(v: float) -> float:
        return WIDTH * (math.log10(v) - math.log10(lo)) / span

    def py(v: float) -> float:
        return HEIGHT * (1 - v / 10)

    def overlap(a: tuple[float, ...], b: tuple[float, ...]) -> float:
        return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))

    drawn = [(p, p.x, p.row.score_mean) for p in points if p.x is not None and p.row.score_mean is not None]
    boxes: list[tuple[float, ...]] = []
    for p, vx, vy in drawn:
        x, y = px(vx), py(vy)
        boxes.append((x - 9, y - 9, x + 9, y + 9))
        if p.row.score_lo is not None and p.row.score_hi is not None:
            boxes.append((x - 4, py(p.row.score_hi), x + 4, py(p.row.score_lo)))
    steps = [(px(vx), py(vy)) for name in front for p, vx, vy in drawn if p.row.entry == name]
    for (x0, y0), (x1, y1) in zip(steps, steps[1:], strict=False):  # up at x0, then across at y1 (step-before)
        boxes += [(x0 - 2, min(y0, y1), x0 + 2, max(y0, y1)), (x0, y1 - 2, x1, y1 + 2)]

    def cost(box: tuple[float, ...]) -> float:  # overlap with what is drawn, and a steep price for leaving the plot
        area = (box[2] - box[0]) * (box[3] - box[1])
        return sum(overlap(box, other) for other in boxes) + 50 * (area - overlap(box, (0, 0, WIDTH, HEIGHT)))

    for p, vx, vy in sorted(drawn, key=lambda d: d[1]):
        x, y, w, h = px(vx), py(vy), 6.0 * len(p.label) + 2, 14
        spots = [
            (w / 2 + 10, 0),
            (w / 2 + 5, -13),
            (w / 2 + 5, 13),
            (-w / 2 - 10, 0),
            (-w / 2 - 5, -13),
            (-w / 2 - 5, 13),
            (0, -17),
            (0, 17),
        ]
        # min keeps the first of equal costs: right of the point is preferred
        dx, dy = min(
            spots, key=lambda d: cost((x + d[0] - w / 2, y + d[1] - h / 2, x + d[0] + w / 2, y + d[1] + h / 2))
        )
        boxes.append((x + dx - w / 2, y + dy - h / 2, x + dx + w / 2, y + dy + h / 2))
        p.data["lx"] = 10 ** (math.log10(lo) + (x + dx) / WIDTH * span)
        p.data["ly"] = 10 * (1 - (y + dy) / HEIGHT)
