"""One presenter: what a report says in words, said once and rendered as text (the table), HTML (the panel, a
notebook's repr) and chart titles.

The header line, the stop marker, the judge's headlines (it failed on runs, or could not tell them apart), the
entries not judged, each entry's verdict line, the recommendation, the cost line, the estimate as the panel shows it
and the number formats live here; `render`, `html` and the charts' titles and the panel's tabs only lay them out. It
reads a report through `ReportView` (its meta, frames and per-entry `EntrySummary` records) and an estimate through
`EstimateView`, so it imports neither.
"""

from __future__ import annotations

import html as _html
from dataclasses import dataclass
from typing import Any, Protocol

import polars as pl

from ._evidence import evidence, judge_failure
from ._meta import ReportMeta
from ._models import EntrySummary
from ._records import Run
from ._stats import INCONCLUSIVE, MIN_INPUTS
from ._vocab import Design, Role, Stopped

__all__ = [
    "NOT_JUDGED",
    "ReportView",
    "EstimateView",
    "VerdictLine",
    "estimate",
    "header",
    "html",
    "judge_headlines",
    "not_judged",
    "plural",
    "recommendation",
    "references_first",
    "render",
    "score_interval",
    "self_agreement",
    "signed",
    "stopped",
    "times",
    "totals",
    "verdict_lines",
    "verdicts_title",
]


class ReportView(Protocol):
    """What the presenter reads of a report."""

    meta: ReportMeta

    @property
    def runs(self) -> pl.DataFrame: ...

    @property
    def calls(self) -> pl.DataFrame: ...

    @property
    def models(self) -> pl.DataFrame: ...

    def model_rows(self) -> list[EntrySummary]: ...

    def recommend(self) -> Any: ...

    def to_runs(self) -> list[Run]: ...


class EstimateView(Protocol):
    """What the presenter reads of an estimate (`gradebench._estimate.Estimate`)."""

    @property
    def cost(self) -> float: ...

    @property
    def currency(self) -> str: ...

    def line(self) -> str: ...


# ---------------------------------------------------------------------------------------------------------- numbers


def signed(value: float | None, decimals: int = 2) -> str:
    """A signed number with a real minus sign; ``-`` for none."""
    return "-" if value is None else f"{value:+.{decimals}f}".replace("-", "−")


def times(value: float | None) -> str:
    """A ratio, e.g. ``0.21×``; ``-`` for none."""
    return "-" if value is None else f"{value:.2f}×"


def plural(n: int, word: str) -> str:
    """``1 input``, ``3 inputs``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def _num(value: float | None, fmt: str = ".2f", suffix: str = "") -> str:
    return "-" if value is None else f"{value:{fmt}}{suffix}"


NOT_JUDGED = "not judged"
"""What a score says for an entry with no judged run."""


def score_interval(row: EntrySummary) -> str:
    """A models row's score: ``8.40 [5.87–10.00]``, the mean alone when it has no interval, ``not judged``."""
    if row.score_mean is None:
        return NOT_JUDGED
    ci = f" [{_num(row.score_lo)}–{_num(row.score_hi)}]" if row.score_lo is not None else ""
    return f"{_num(row.score_mean)}{ci}"


# ------------------------------------------------------------------------------------------------------------ lines


def header(report: ReportView) -> str:
    """``job · grade G · reference R · judge J · N inputs × K runs``."""
    m = report.meta
    candidates = report.runs.filter(pl.col("role") == Role.CANDIDATE)
    repeats = candidates["repeat"].n_unique() if candidates.height else 0
    inputs = report.runs["input_id"].n_unique()
    shape = f"{plural(inputs, 'input')} × {plural(repeats, 'run')}"
    if m.spec.design is Design.AUTO:
        shape = f"{plural(inputs, 'input')} · raced to a verdict (at most {m.max_runs} runs an entry)"
    return (
        f"{m.job or '?'} · grade {m.spec.grade or '?'} · reference {m.reference_entry or '-'}"
        f" · judge {m.judge_entry or '-'} · {shape}"
    )


def stopped(report: ReportView) -> str | None:
    """Why the race ended early, said plainly, or None when it ran to the end."""
    why = report.meta.stopped
    if why is None:
        return None
    if why == Stopped.BUDGET:
        return "STOPPED: the budget would not cover another run; only the runs judged before it are here"
    return "STOPPED EARLY: only the runs judged before the stop are here"


def judge_headlines(report: ReportView) -> list[str]:
    """What the judge did wrong over the whole report, one line each: it gave no verdict on some runs (how many, and
    the first error: what it answered and what was expected), or it gave every run the same score."""
    lines = []
    if (failed := judge_failure(report.runs)) is not None:
        lines.append(f"JUDGE FAILED on {failed.failed} of {failed.sent} runs (left out of every score): {failed.first}")
    if (same := evidence(report.runs).same_score) is not None:
        lines.append(
            f"JUDGE CANNOT TELL RUNS APART: it gave every judged run {same:.2f}, so no verdict is settled on its scores"
        )
    return lines


def estimate(made: EstimateView, *, to_verdict: bool = False, budget: float | None = None) -> str:
    """An estimate as the panel shows it beside Run: its line, that a race to a verdict may stop sooner, and how it
    stands to the budget."""
    parts = [made.line()]
    if to_verdict:
        parts.append("at most: racing to a verdict stops each entry once it is settled")
    if budget is not None:
        cap = f"{budget:g} {made.currency}"
        if made.cost > budget:
            parts.append(f"over the budget ({cap}): the race will stop when the budget runs out")
        else:
            parts.append(f"budget {cap}: no run starts that might not fit, so close to it the race may stop early")
    return " · ".join(parts)


def references_first(missing: int, total: int, entry: str) -> str:
    """Why an estimate waits for a click: it runs the reference runs the cache does not hold, and they cost."""
    held = f" ({total - missing} of {total} are in the cache)" if missing < total else ""
    return (
        f"an estimate runs {plural(missing, 'reference run')} on {entry} first{held}: they are spent now, "
        "and Run then reuses them from the cache"
    )


def not_judged(report: ReportView) -> list[str]:
    """Entries raced with no judged run (none landed, or the judge gave no verdict): never left out silently."""
    rows = report.model_rows()
    raced = report.meta.candidates or [r.entry for r in rows]
    judged = {r.entry for r in rows if r.score_mean is not None}
    return [e for e in raced if e not in judged and e not in report.meta.skipped]


def totals(report: ReportView) -> str:
    """One line: what the runs cost, what the judge cost, and what was spent now (cache hits cost nothing now).

    A sum over calls whose cost is unknown (no usage reported) says so instead of passing for the whole.
    """
    currencies = report.runs["currency"].drop_nulls().unique(maintain_order=True).to_list()
    cur = currencies[0] if len(currencies) == 1 else "(mixed currencies)" if currencies else ""
    judge = [c for r in report.to_runs() if r.verdict is not None and r.role != Role.REFERENCE for c in r.verdict.calls]

    def money(*parts: tuple[list[float | None], str]) -> str:
        total = sum(v for values, _ in parts for v in values if v is not None)
        unknown = [plural(n, what) for values, what in parts if (n := sum(v is None for v in values))]
        text = f"{total:.6f} {cur}".rstrip()
        return f"{text} + unknown for {' and '.join(unknown)} without usage" if unknown else text

    runs, calls = (report.runs["cost"].to_list(), "run"), ([c.cost for c in judge], "judge call")
    spent = (report.runs["spent_now"].to_list(), "run"), ([c.spent_now for c in judge], "judge call")
    return f"cost of the runs {money(runs)} (+ judge {money(calls)}) · spent now {money(*spent)}"


@dataclass(frozen=True, kw_only=True)
class VerdictLine:
    """One entry's verdict against the reference entry, with the evidence and what would settle it."""

    entry: str
    """The entry tested."""
    verdict: str
    """``as good``, ``worse`` or ``inconclusive``."""
    delta: str
    """``Δ −0.42 [lower −1.10]``: the mean paired difference and its lower bound."""
    pairs: int
    """Paired runs behind it."""
    ratios: str
    """``cost 0.21× latency 0.28×`` (``cost unknown`` when it is)."""
    notes: tuple[str, ...]
    """What would settle it, the judge's order gap and noise floor."""

    def text(self, width: int) -> str:
        notes = "  · " + " · ".join(self.notes) if self.notes else ""
        return (
            f"{'  ' + self.entry:<{width}} {self.verdict:<12} {self.delta:<24} {self.pairs:>4} paired runs  "
            f"{self.ratios}{notes}"
        )


def verdict_lines(report: ReportView) -> list[VerdictLine]:
    """Each tested entry's verdict line, in the models frame's order."""
    margin, auto, found = report.meta.spec.margin, report.meta.spec.design is Design.AUTO, evidence(report.runs)
    lines = []
    for r in report.model_rows():
        if r.verdict is None:  # untested (the reference entry itself): no verdict line
            continue
        held = found.notes(r.entry)
        notes = [r.stopped or "still racing"] if auto else []
        if not auto and r.verdict == INCONCLUSIVE and (not held or not r.n_pairs):
            notes.append(_what_would_settle(r, margin))  # unless held: more runs of the same would not settle it
        elif not auto and r.stopped and not held:
            notes.append(r.stopped)
        notes += held
        if report.meta.stopped is not None:
            what = "unit" if auto else "input"
            notes.append(f"on {plural((r.n_pairs if auto else r.n_inputs) or 0, what)} complete before the stop")
        if r.swap_gap_mean is not None:
            notes.append(f"order gap {r.swap_gap_mean:.2f}")
        if r.floor_std is not None:
            notes.append(f"judge noise ±{r.floor_std:.2f}")
        cost = "unknown" if r.cost_per_run is None else times(r.cost_ratio)
        lines.append(
            VerdictLine(
                entry=r.entry,
                verdict=r.verdict,
                delta=f"Δ {signed(r.mean_diff)} [lower {signed(r.lower)}]",
                pairs=r.n_pairs or 0,
                ratios=f"cost {cost} latency {times(r.latency_ratio)}",
                notes=tuple(notes),
            )
        )
    return lines


def _what_would_settle(row: EntrySummary, margin: float) -> str:
    if not row.n_pairs:
        return row.verdict_reason or "nothing could be paired"
    if (row.n_inputs or 0) < MIN_INPUTS:
        missing = MIN_INPUTS - (row.n_inputs or 0)
        return f"a verdict needs {MIN_INPUTS} inputs: {missing} more"
    if row.more_runs:
        return f"~{row.more_runs} more paired runs would likely settle it"
    if row.mean_diff is not None and row.mean_diff <= -margin:
        return "leans worse: more runs would likely show it"
    return "sits on the margin: only very many more runs would settle it"


def verdicts_title(report: ReportView) -> str:
    m = report.meta
    if m.spec.design is Design.AUTO:
        return (
            f"verdict vs {m.reference_entry} (raced to a verdict: anytime-valid bounds, "
            f"margin {m.spec.margin:g} of 10, paired by unit, 95%):"
        )
    return f"verdict vs {m.reference_entry} (non-inferiority, margin {m.spec.margin:g} of 10, paired by input, 95%):"


def self_agreement(report: ReportView) -> str | None:
    """How well the reference agrees with itself: its own entry's score against its reference run."""
    own = next((r for r in report.model_rows() if r.is_reference), None)
    if own is None or own.score_mean is None:
        return None
    return (
        f"{own.entry} against its own reference run scores {own.score_mean:.2f}: "
        "how well the reference agrees with itself, the most a candidate can expect"
    )


def recommendation(report: ReportView) -> str | None:
    """``recommendation: …`` — the sentence to paste into a review, marked when the race was stopped early."""
    pick = report.recommend()
    if pick is None:
        return None
    early = " (from a race stopped early)" if report.meta.stopped else ""
    return f"recommendation{early}: {pick.sentence}"


# ---------------------------------------------------------------------------------------------------------- layouts


def render(report: ReportView) -> str:
    """The fixed-width text table logged after a race: ``*`` marks the reference entry, ``(sim)`` simulated ones."""
    models = report.model_rows()
    names = [("* " if r.is_reference else "  ") + r.entry + (" (sim)" if r.simulated else "") for r in models]
    width = max([len("  entry"), *map(len, names)])
    lines = [header(report)]
    if (marker := stopped(report)) is not None:
        lines.append(marker)
    lines += judge_headlines(report)
    lines.append(
        f"{'  entry':<{width}} {'runs':>5} {'ok':>5} {'score [95% CI]':>20} {'acc':>5} {'work':>5} {'scorer':>6}"
        f" {'calls':>6} {'tokens in/out':>15} {'latency':>8} {'wall':>8} {'cost/run':>18}"
    )
    for name, r in zip(names, models, strict=True):
        score = score_interval(r)
        tokens = f"{_num(r.input_tokens_mean, '.0f')}/{_num(r.output_tokens_mean, '.0f')}"
        cost = "unknown" if r.cost_per_run is None else f"{r.cost_per_run:.6f}"
        lines.append(
            f"{name:<{width}} {r.runs:>5} {_num(r.ok_rate * 100, '.0f', '%'):>5} {score:>20}"
            f" {_num(r.accuracy_mean):>5} {_num(r.work_mean):>5} {_num(r.scorer_mean):>6}"
            f" {_num(r.calls_mean, '.1f'):>6} {tokens:>15} {_num(r.latency_s_mean, '.2f', 's'):>8}"
            f" {_num(r.wall_s_mean, '.2f', 's'):>8} {cost:>14} {r.currency or '':<3}"
        )
    if not models:
        lines.append("  (no candidate runs)")
    absent = [e for e in not_judged(report) if e not in {r.entry for r in models}]
    if absent:
        lines.append("not judged (no run landed): " + ", ".join(absent))
    if report.meta.skipped:
        lines.append("skipped: " + "; ".join(f"{entry} ({why})" for entry, why in report.meta.skipped.items()))
    lines.append(totals(report))
    verdicts = verdict_lines(report)
    if verdicts:
        lines.append(verdicts_title(report))
        lines.extend(v.text(width) for v in verdicts)
        if (agreement := self_agreement(report)) is not None:
            lines.append("  " + agreement)
    if (pick := recommendation(report)) is not None:
        lines.append(pick)
    return "\n".join(lines)


def html(report: ReportView) -> str:
    """The report as a notebook shows it: the header, the stop marker, the models frame, skipped entries, the cost."""
    esc = _html.escape
    parts = [f"<p><b>{esc(header(report))}</b></p>"]
    if (marker := stopped(report)) is not None:
        parts.append(f'<p style="color:#b45309"><b>{esc(marker)}</b></p>')
    parts += [f'<p style="color:#b91c1c"><b>{esc(line)}</b></p>' for line in judge_headlines(report)]
    parts.append(report.models._repr_html_())
    if report.meta.skipped:
        items = "".join(f"<li>{esc(str(e))}: {esc(str(w))}</li>" for e, w in report.meta.skipped.items())
        parts.append(f"<p>skipped:</p><ul>{items}</ul>")
    parts.append(f"<p>{esc(totals(report))}</p>")
    if (pick := recommendation(report)) is not None:
        parts.append(f"<p>{esc(pick)}</p>")
    return "\n".join(parts)
