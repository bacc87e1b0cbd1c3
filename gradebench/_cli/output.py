"""What the command prints and writes beside a report's table: the width it fits lines to, the charts."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from .._report.report import BenchmarkReport

__all__ = ["sim_models", "terminal_width", "write_charts"]


def terminal_width() -> int | None:
    """The columns the table is fitted to: the terminal's, or ``$COLUMNS``; None (no limit) when output goes to a
    file or a pipe that says nothing, so a log keeps every column."""
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() else None


def write_charts(report: BenchmarkReport, out: Path) -> list[str]:
    """The report's charts as offline files beside its parquet: PNG to look at, SVG and self-contained HTML to embed.

    Every chart is written, also when no run was judged: one with nothing to plot says so in its title.
    """
    from .._report import charts

    made = {
        "cost_quality": charts.cost_quality(report),
        "latency_quality": charts.latency_quality(report),
        "score_distribution": charts.score_distribution(report),
    }
    if report.runs["scorer"].drop_nulls().len():
        made["scorer_agreement"] = charts.scorer_agreement(report)
    written = []
    for name, chart in made.items():
        for suffix in (".png", ".svg", ".html") if name == "cost_quality" else (".png",):
            written.append(str(charts.save_chart(chart, out / f"{name}{suffix}")))
    return written


def sim_models() -> str:
    """The model ids the simulated fleet serves, by grade, with their entry names and prices: the help's epilog."""
    from ..sim._profiles import PROFILES

    lines = ["model ids served, listed by GET /v1/models", "(entry name, grade, USD per 1M tokens in/out):"]
    for p in PROFILES:
        lines.append(f"  {p.model:<14} {p.name:<12} {p.grade:<9} {p.price_in:g}/{p.price_out:g}")
    return "\n".join(lines)
