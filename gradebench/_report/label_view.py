"""What a report with human labels says about them, in words: the judge's agreement with the person under the models
table, and on each verdict line whether it is label-corrected or judge-only (and what would settle it).

The presenter (`gradebench._report.present`) lays these out in the text table, the HTML (a notebook's repr and the HTML
report) and the panel's Models tab; a report without labels says nothing here, so its output is as before.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from .._base.html import Markup, tag
from .._base.numbers import figure, signed
from .._base.vocab import VerdictBasis
from .._verdict.label_agreement import ALL_ENTRIES, interval_text
from .models import EntrySummary

__all__ = ["AGREEMENT_TITLE", "agreement_html", "agreement_lines", "label_notes"]

AGREEMENT_TITLE = "the judge against your labels (quadratic-weighted κ, Spearman ρ, bias = judge − you, 95% intervals):"


def _figures(row: dict[str, Any]) -> str:
    """``ρ 0.52 [0.20–0.80] · bias +1.40 [+0.80, +2.00]`` (what the sentence does not say already)."""
    parts = []
    if row["spearman"] is not None:
        parts.append(f"ρ {figure(row['spearman'])} {interval_text(row['spearman_lo'], row['spearman_hi'])}")
    if row["bias"] is not None:
        bias = signed(row["bias"])
        parts.append(f"bias {bias} {interval_text(row['bias_lo'], row['bias_hi'])}")
    return " · ".join(parts)


def _items(agreement: pl.DataFrame) -> list[tuple[str, str]]:
    """(group, what is said of it) per row: the sentence (without its ``on entry:``) and the figures."""
    items = []
    for row in agreement.iter_rows(named=True):
        name = "all entries" if row["entry"] == ALL_ENTRIES else row["entry"]
        said = str(row["sentence"]).removeprefix(f"on {row['entry']}: ")
        figures = _figures(row) if row["labels"] else ""
        items.append((name, f"{said} · {figures}" if figures else said))
    return items


def agreement_lines(agreement: pl.DataFrame) -> list[str]:
    """The agreement block of the text table: a title, then one line per entry and one over all; none without
    labels."""
    if not agreement.height:
        return []
    items = _items(agreement)
    width = max(len(name) for name, _ in items) + 2
    return [AGREEMENT_TITLE, *(f"{'  ' + name:<{width}}  {said}" for name, said in items)]


def agreement_html(agreement: pl.DataFrame) -> Markup:
    """The agreement block as escaped HTML ('' without labels)."""
    if not agreement.height:
        return Markup()
    items = (tag("li", tag("b", name), ": ", said) for name, said in _items(agreement))
    return tag("div", tag("p", AGREEMENT_TITLE), tag("ul", *items), class_="gb-agreement")


def label_notes(agreement: pl.DataFrame, row: EntrySummary) -> list[str]:
    """What a verdict line adds when the report has labels: for a label-corrected verdict what would settle it (when
    inconclusive), the labels it rests on and what the judge alone said; for a judge-only one, why it is not
    corrected. Nothing without labels."""
    found = agreement.filter(pl.col("entry") == row.entry) if agreement.height else agreement
    if not found.height or row.verdict is None:
        return []
    own = found.row(0, named=True)
    if row.verdict_basis != VerdictBasis.LABEL_CORRECTED:
        return [f"judge-only ({own['correction']})"]
    notes = [own["settle"]] if own["settle"] and not row.verdict_held else []
    judge = own["judge_verdict"] or "no verdict"
    if own["judge_mean_diff"] is not None:
        judge += f", Δ {own['judge_mean_diff']:+.2f}".replace("-", "\u2212")
    notes.append(f"{own['correction']} (the judge alone: {judge})")
    return notes
