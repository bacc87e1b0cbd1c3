"""What a comparison of two races says in words: one sentence per entry, the table and the HTML view.

An entry's sentence names the change, its interval, when the before race was, whether the judge was the same and how
many inputs it rests on, then what could explain it: the provider's model when nothing else moved, or what else did
(the judge, the rubric, the catalog, the failures, the reference). A change in how often an entry fails gets its own
sentence, with its most common error and the change among the runs that finished.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from .._base.html import Markup, join, tag
from .._base.numbers import money
from .._stats.paired import number_text, plural
from .pairing import (
    CHANGED,
    MIN_INPUTS,
    NO_CHANGE,
    NOT_JUDGED,
    NOT_REASKED,
    ONLY_AFTER,
    ONLY_BEFORE,
    TOO_FEW,
    EntryChange,
)
from .terms import NOTE, WARN, Difference

__all__ = ["Comparison", "entry_sentence", "failure_sentence", "html_view", "sentences", "table"]


class Comparison(Protocol):
    """What the words read of a comparison (`gradebench._compare.compare.Comparison`), so this module need not import
    it."""

    @property
    def job(self) -> str: ...

    @property
    def before(self) -> str: ...

    @property
    def after(self) -> str: ...

    @property
    def level(self) -> float: ...

    @property
    def rows(self) -> Sequence[EntryChange]: ...

    @property
    def found(self) -> Sequence[Difference]: ...

    @property
    def shape(self) -> tuple[str, str]: ...

    def sentences(self) -> list[str]: ...


PROVIDER = "the provider may have changed the model"
"""The cause said when nothing else that shapes a score moved between the races."""


def _signed(value: float, decimals: int = 1) -> str:
    text = number_text(value, decimals)
    return text if text.startswith("\u2212") or float(f"{value:.{decimals}f}") == 0 else f"+{text}"


def _size(value: float) -> str:
    return number_text(abs(value), 1 if abs(value) >= 0.1 else 2)


def _interval(lo: float | None, hi: float | None, decimals: int = 1) -> str:
    return "" if lo is None or hi is None else f"[{number_text(lo, decimals)}, {number_text(hi, decimals)}]"


def entry_sentence(row: EntryChange, when: str, judge: str) -> str:
    """The entry's change in one sentence; ``when`` is the before race (``on 2026-11-01``), ``judge`` how it was
    judged (``same judge``)."""
    e = row.entry
    if row.status == ONLY_BEFORE:
        return f"{e} was raced only before" + (f" (not after: {row.causes[0]})" if row.causes else "")
    if row.status == ONLY_AFTER:
        return f"{e} was raced only after" + (f" (not before: {row.causes[0]})" if row.causes else "")
    if row.status == NOT_REASKED:
        return f"{e}: its after runs are its before runs, from the cache: nothing was re-asked"
    if row.status == NOT_JUDGED:
        return f"{e}: nothing to compare: {row.causes[0] if row.causes else 'no scored run on one side'}"
    assert row.change is not None
    rest = f"{judge}, {plural(row.n_inputs, 'input')}"
    if row.status == TOO_FEW:
        spread = f" {_interval(row.lo, row.hi)}" if row.lo is not None else ""
        said = (
            f"{e}: {plural(row.n_inputs, 'input')} compared, too few to say whether it changed (a change needs at "
            f"least {MIN_INPUTS}; it scores {_signed(row.change)}{spread} against {when})"
        )
    elif row.status == CHANGED:
        way = "lower" if row.change < 0 else "higher"
        said = (
            f"{e} scores {_size(row.change)} {way} {_interval(row.lo, row.hi)} than {when} ({rest}): "
            f"{'; '.join(row.causes) or PROVIDER}"
        )
    else:
        assert row.status == NO_CHANGE and row.lo is not None and row.hi is not None
        hidden = max(-row.lo, row.hi)
        said = (
            f"{e} scores about the same as {when} ({_signed(row.change)} {_interval(row.lo, row.hi)}, {rest}): no "
            f"change detected, though one of up to {number_text(hidden, 1)} points could hide in that interval"
        )
    if row.unjudged:
        said += f"; the judge gave no score to {plural(row.unjudged, 'run')}, left out"
    return said


def _percent(value: float | None) -> str:
    return "?" if value is None else f"{value:.0%}"


def failure_sentence(row: EntryChange, when: str) -> str | None:
    """For an entry whose failure rate changed: how, and what its score did among the runs that finished."""
    if not row.failures_changed or row.failed_change is None:
        return None
    points = _signed(row.failed_change * 100, 0)
    spread = ""
    if row.failed_lo is not None and row.failed_hi is not None:
        spread = f" [{number_text(row.failed_lo * 100, 0)}, {number_text(row.failed_hi * 100, 0)}]"
    often = f"; most often: {row.common_error}" if row.common_error else ""
    said = (
        f"{row.entry} failed {_percent(row.failed_after)} of its runs against {_percent(row.failed_before)} {when} "
        f"({points} points{spread}{often}): a failed run counts as 0, so part of its score change is failures, not "
        "answers"
    )
    if row.finished_change is None:
        return said
    finished = row.finished_lo is not None and row.finished_hi is not None
    settled = finished and (row.finished_lo > 0 or row.finished_hi < 0)  # type: ignore[operator]
    if settled:
        way = "lower" if row.finished_change < 0 else "higher"
        among = f"{_size(row.finished_change)} {way} {_interval(row.finished_lo, row.finished_hi)}"
    else:
        among = f"about the same ({_signed(row.finished_change)} {_interval(row.finished_lo, row.finished_hi)})"
    return f"{said}; among the runs that finished it scores {among}"


def sentences(comparison: Comparison) -> list[str]:
    """The warnings, each entry's sentence (and its failure sentence), then the notes."""
    said = [d.sentence for d in comparison.found if d.weight == WARN]
    for row in comparison.rows:
        if row.status == NOT_REASKED:
            continue  # the warning above says it once for the whole race
        said.append(row.sentence)
        if (failures := failure_sentence(row, comparison.before)) is not None:
            said.append(failures)
    said += [d.sentence for d in comparison.found if d.weight == NOTE]
    return said


def _header(comparison: Comparison) -> list[str]:
    levels = sorted({r.level for r in comparison.rows if r.level is not None})
    compared = sum(1 for r in comparison.rows if r.level is not None)
    each = f" (each at {levels[0]:.1%})" if levels and compared > 1 else ""
    how = (
        f"intervals hold together at {comparison.level:.0%} over {compared} {'entry' if compared == 1 else 'entries'}"
        f"{each}"
        if compared
        else "no entry compared"
    )
    return [
        f"{comparison.job}: before {comparison.before} ({comparison.shape[0]}) \u2192 after {comparison.after} "
        f"({comparison.shape[1]})",
        f"paired by input · a failed run counts 0 · {how}",
    ]


_COLUMNS = ("entry", "status", "change [interval]", "before \u2192 after", "failed", "cost/run", "latency")


def _cells(row: EntryChange) -> list[str]:
    def pair(b: float | None, a: float | None, show: Callable[[float], str]) -> str:
        if b is None and a is None:
            return ""
        return f"{'-' if b is None else show(b)} \u2192 {'-' if a is None else show(a)}"

    change = "" if row.change is None else f"{_signed(row.change, 2)} {_interval(row.lo, row.hi, 2)}".strip()
    cost = pair(row.cost_before, row.cost_after, money)
    if row.cost_ratio is not None:
        cost += f" {row.cost_ratio:.2f}\u00d7"
    latency = pair(row.latency_before, row.latency_after, lambda s: f"{s:.2f}s")
    return [
        row.entry + (" *" if row.is_reference else ""),
        row.status,
        change,
        pair(row.score_before, row.score_after, lambda s: f"{s:.2f}"),
        pair(row.failed_before, row.failed_after, _percent),
        cost,
        latency,
    ]


def table(comparison: Comparison) -> str:
    """The header, then one line per entry (``*`` marks the reference entry)."""
    rows = [list(_COLUMNS), *(_cells(r) for r in comparison.rows)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_COLUMNS))]
    lines = _header(comparison)
    for r in rows:
        lines.append("  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
    return "\n".join(lines)


def html_view(comparison: Comparison) -> Markup:
    """The comparison as an HTML fragment for a notebook: the header, the table, the sentences (all escaped)."""
    head = tag("tr", *(tag("th", c, style="text-align:left") for c in _COLUMNS))
    cell = "text-align:left;white-space:nowrap"
    body = (tag("tr", *(tag("td", c, style=cell) for c in _cells(r))) for r in comparison.rows)
    said = (tag("li", s) for s in comparison.sentences())
    header = tag("p", join(_header(comparison), tag("br")))
    table = tag("table", tag("thead", head), tag("tbody", *body))
    return tag("div", header, table, tag("ul", *said), class_="gradebench-compare")
