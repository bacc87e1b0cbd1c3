"""One presenter: what a report says in words, said once and rendered as text (the table), HTML (the panel, a
notebook's repr) and chart titles.

The header line, the stop marker, the headlines (the judge failed on runs, could not tell them apart, or took planted
wrong answers for right ones; an entry its endpoint failed is unmeasured; the gold labels find the reference mostly
wrong or answering every input alike), the entries not judged, each entry's verdict line, what the negative
controls say, the recommendation, the cost line and the number formats live here; `render`, `html` and the charts'
titles and the panel's tabs only lay them out. It reads a report through `gradebench._report.view.ReportView` (its
meta, frames and per-entry `EntrySummary` records), so it does not import it (the panel says what an estimate is
beside Run: `gradebench.widgets._estimator`).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from .._base.html import Markup, concat, join, tag
from .._base.numbers import fit_line, money
from .._base.vocab import Role, Stopped, VerdictBasis
from .._judge.agreement import judges_lines, judges_text
from .._stats.paired import AS_GOOD, INCONCLUSIVE, MIN_INPUTS
from .._verdict.controls import VOID
from .._verdict.evidence import evidence, judge_failure
from .._verdict.gsd import design_words
from .label_view import agreement_html, agreement_lines, label_notes
from .models import EntrySummary, reference_gold
from .view import ReportView

__all__ = [
    "HTML_STYLE",
    "NOT_JUDGED",
    "VerdictLine",
    "gold_line",
    "header",
    "headlines",
    "html",
    "judge_headlines",
    "lead",
    "model_cells",
    "models_html",
    "not_judged",
    "plural",
    "recommendation",
    "render",
    "score_interval",
    "self_agreement",
    "signed",
    "stopped",
    "times",
    "totals",
    "unmeasured",
    "verdict_lines",
    "verdicts_title",
]


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
    if row.verdict_basis == VerdictBasis.UNMEASURED:  # its failed runs' 0 is no score of the model's
        return VerdictBasis.UNMEASURED
    if row.score_mean is None:
        return NOT_JUDGED
    ci = f" [{_num(row.score_lo)}–{_num(row.score_hi)}]" if row.score_lo is not None else ""
    return f"{_num(row.score_mean)}{ci}"


def model_cells(row: EntrySummary) -> dict[str, str]:
    """A models row's figures as the table shows them (text or HTML), by column; ``cost/run`` without its currency."""
    return {
        "runs": str(row.runs),
        "ok": _num(row.ok_rate * 100, ".0f", "%"),
        "score [95% CI]": score_interval(row),
        "acc": _num(row.accuracy_mean),
        "work": _num(row.work_mean),
        "scorer": _num(row.scorer_mean),
        "calls": _num(row.calls_mean, ".1f"),
        "tokens in/out": f"{_num(row.input_tokens_mean, '.0f')}/{_num(row.output_tokens_mean, '.0f')}",
        "latency": _num(row.latency_s_mean, ".2f", "s"),
        "wall": _num(row.wall_s_mean, ".2f", "s"),
        "cost/run": money(row.cost_per_run),
    }


# ------------------------------------------------------------------------------------------------------------ lines


def header(report: ReportView) -> str:
    """``job · grade G · reference R · judge J · N inputs × K runs``."""
    m = report.meta
    candidates = report.runs.filter(pl.col("role") == Role.CANDIDATE)
    repeats = candidates["repeat"].n_unique() if candidates.height else 0
    inputs = report.runs["input_id"].n_unique()
    shape = f"{plural(inputs, 'input')} × {plural(repeats, 'run')}"
    if m.spec.design.to_verdict:  # runs="auto" is another name for the group-sequential race
        shape = f"{plural(inputs, 'input')} · {design_words(m.max_runs, m.spec.margin)[0]}"
    return (
        f"{m.job or '?'} · grade {m.spec.grade or '?'} · reference {m.reference_entry or '-'}"
        f" · {judges_text(m.judges)} · {shape}"
    )


def lead(report: ReportView) -> list[str]:
    """The lines a report leads with under its header (`gradebench._verdict.worth`): what the judge-only verdicts
    are worth and the labels that would settle them, or what the labels did; none when no verdict was tested."""
    worth = report.worth()
    return [] if worth is None else list(worth.lines)


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
    lines += [void for void in [report.controls_outcome().headline()] if void]  # the negative controls voided it all
    return lines


def unmeasured(report: ReportView) -> list[str]:
    """Each entry with no quality verdict, its endpoint having failed most of its runs, and why: a headline each."""
    rows = [r for r in report.model_rows() if r.verdict_basis == VerdictBasis.UNMEASURED]
    return [f"UNMEASURED {r.entry}: {r.verdict_reason}" for r in rows]


def headlines(report: ReportView) -> list[str]:
    """Every headline above the models table: the judge's, the entries unmeasured, and the gold labels' of the
    reference (mostly wrong, or one answer to every input)."""
    gold = report.gold_check()
    return judge_headlines(report) + unmeasured(report) + (gold.headlines() if gold is not None else [])


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

    def summed(*parts: tuple[list[float | None], str]) -> str:
        total = sum(v for values, _ in parts for v in values if v is not None)
        unknown = [plural(n, what) for values, what in parts if (n := sum(v is None for v in values))]
        text = f"{money(total)} {cur}".rstrip()
        return f"{text} + unknown for {' and '.join(unknown)} without usage" if unknown else text

    runs, calls = (report.runs["cost"].to_list(), "run"), ([c.cost for c in judge if c.answered], "judge call")
    spent = (report.runs["spent_now"].to_list(), "run"), ([c.spent_now for c in judge if c.answered], "judge call")
    return f"cost of the runs {summed(runs)} (+ judge {summed(calls)}) · spent now {summed(*spent)}"


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

    def evidence(self) -> str:
        """What the verdict rests on, in one run of words: ``Δ … · 20 paired runs · cost … · notes`` (the HTML's)."""
        return " · ".join(p for p in [self.delta, plural(self.pairs, "paired run"), self.ratios, *self.notes] if p)


def verdict_lines(report: ReportView) -> list[VerdictLine]:
    """Each tested entry's verdict line, in the models frame's order."""
    margin, auto, found = report.meta.spec.margin, report.meta.spec.design.to_verdict, evidence(report.runs)
    void = [f"void: {VOID}"] if report.controls_outcome().void else []
    lines, panel = [], report.judge_agreement()
    for r in report.model_rows():
        if r.verdict_basis == VerdictBasis.UNMEASURED:  # no run (or too few) reached the model: no figure to show
            unmeasured_line = VerdictLine(
                entry=r.entry,
                verdict=VerdictBasis.UNMEASURED,
                delta="Δ —",
                pairs=0,
                ratios=f"cost {'unknown' if r.cost_per_run is None else times(r.cost_ratio)}",
                notes=(r.verdict_reason or "",),
            )
            lines.append(unmeasured_line)
            continue
        if r.verdict is None:  # untested (the reference entry itself): no verdict line
            continue
        corrected = r.verdict_basis == VerdictBasis.LABEL_CORRECTED  # labels settle it
        held = [*([] if corrected else void), *found.notes(r.entry)]  # a corrected verdict stands on the labels
        notes = [r.stopped or "still racing"] if auto else []
        if not auto and r.verdict == INCONCLUSIVE and (not held or not r.n_pairs) and not corrected:
            notes.append(_what_would_settle(r, margin))  # unless held: more runs of the same would not settle it
        elif not auto and r.stopped and not held:
            notes.append(r.stopped)
        notes += held + label_notes(report.agreement, r)
        notes += [found.outages[r.entry].note()] if r.entry in found.outages else []  # the runs it lost
        if r.verdict == AS_GOOD and not corrected:
            notes.append(report.controls_outcome().unconfirmed())  # the judge alone: not a finding until labels
        if report.meta.stopped is not None:
            what = "unit" if auto else "input"
            notes.append(f"on {plural((r.n_pairs if auto else r.n_inputs) or 0, what)} complete before the stop")
        if r.swap_gap_mean is not None:
            notes.append(f"order gap {r.swap_gap_mean:.2f}")
        if r.floor_std is not None:
            notes.append(f"judge noise ±{r.floor_std:.2f}")
        notes += [panel.notes()[r.entry]] if panel is not None and r.entry in panel.notes() else []
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
    if m.spec.design.to_verdict:  # runs="auto" is another name for the group-sequential race
        return f"verdict vs {m.reference_entry} ({design_words(m.max_runs, m.spec.margin)[1]}):"
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


def gold_line(report: ReportView) -> str | None:
    """How the reference run scores against the gold labels the inputs carry (the table's ``gold`` column says how
    each entry's runs do), or None when the scorer compared with the reference's output."""
    found = reference_gold(report.runs)
    if found is None:
        return None
    line = (
        f"the reference run on {found.entry} scores {found.mean:.2f} against the gold labels "
        f"({plural(found.inputs, 'input')})"
    )
    if found.mean < 1:
        line += ": where it is wrong, the judge held the candidates to a wrong answer"
    return line


def recommendation(report: ReportView) -> str | None:
    """``recommendation: …`` — the sentence to paste into a review, marked when the race was stopped early."""
    pick = report.recommend()
    if pick is None:
        return None
    early = " (from a race stopped early)" if report.meta.stopped else ""
    return f"recommendation{early}: {pick.sentence}"


# ---------------------------------------------------------------------------------------------------------- layouts


DROPPED_FIRST = ("wall", "latency", "tokens in/out", "calls", "work", "acc", "ok", "runs", "scorer", "gold")
"""The models table's columns a narrow terminal loses, first to last (entry, score and cost always stay)."""
GAP = "  "
"""Between two columns of the models table."""
MIN_WIDTH = 60
"""Narrower than this, the table and its sentences are not fitted at all (a width that small is a mistake)."""


def render(report: ReportView, width: int | None = None) -> str:
    """The fixed-width text table logged after a race: ``*`` marks the reference entry, ``(sim)`` simulated ones.

    ``width`` (a terminal's columns; None: no limit) fits it: the columns of `DROPPED_FIRST` are left out, in that
    order, until the table fits, and a line names them; the sentences below wrap between words, so no figure is split.
    """
    fit = width if width is not None and width >= MIN_WIDTH else None
    lines = [header(report)]
    if (marker := stopped(report)) is not None:
        lines.append(marker)
    lines += headlines(report) + lead(report)  # what the verdicts are worth leads, under what went wrong
    gold = gold_line(report)  # against gold labels, the scorer's column is each entry's accuracy on them
    table, dropped = _models_table(report, gold is not None, fit)
    lines += table
    if dropped:
        lines.append(f"  ({', '.join(dropped)} left out to fit {fit} columns: report.models has every figure)")
    if gold is not None:
        lines.append(f"  {gold}")
    lines += agreement_lines(report.agreement)
    absent = [e for e in not_judged(report) if e not in {r.entry for r in report.model_rows()}]
    if absent:
        lines.append("not judged (no run landed): " + ", ".join(absent))
    if report.meta.skipped:
        lines.append("skipped: " + "; ".join(f"{entry} ({why})" for entry, why in report.meta.skipped.items()))
    lines.append(totals(report))
    verdicts = verdict_lines(report)
    if verdicts:
        lines.append(verdicts_title(report))
        names = max([len("  entry"), *(len(v.entry) + 2 for v in verdicts)])
        lines.extend(v.text(names) for v in verdicts)
        if (agreement := self_agreement(report)) is not None:
            lines.append("  " + agreement)
    lines += judges_lines(report)
    lines += [said for said in [report.controls_outcome().sentence()] if said]  # what the negative controls say
    if (pick := recommendation(report)) is not None:
        lines.append(pick)
    if fit is None:
        return "\n".join(lines)
    return "\n".join(fit_line(line, fit) for line in lines)


def _models_table(report: ReportView, gold: bool, width: int | None) -> tuple[list[str], list[str]]:
    """The models table's lines, fitted to ``width`` by leaving out columns (`DROPPED_FIRST`), and those left out."""
    models = report.model_rows()
    names = [("* " if r.is_reference else "  ") + r.entry + (" (sim)" if r.simulated else "") for r in models]
    columns: dict[str, list[str]] = {"  entry": names}
    for r in models:
        cells = model_cells(r)
        if gold:  # against gold labels, the scorer's column is each entry's accuracy on them
            cells = {("gold" if k == "scorer" else k): v for k, v in cells.items()} | {"gold": _num(r.gold_mean)}
        cells["cost/run"] = f"{cells['cost/run']} {r.currency or ''}".rstrip()
        for heading, cell in cells.items():
            columns.setdefault(heading, []).append(cell)
    if not models:
        return [f"{'  entry'}", "  (no candidate runs)"], []
    sizes = {h: max(len(h), *map(len, cells)) for h, cells in columns.items()}
    dropped = []
    empty = [h for h in DROPPED_FIRST if h in columns and all(c in ("-", "") for c in columns[h])]
    for heading in [*empty, *(h for h in DROPPED_FIRST if h not in empty)]:
        if width is None or sum(sizes.values()) + len(GAP) * (len(sizes) - 1) <= width:
            break
        if heading in sizes:
            del sizes[heading]
            dropped.append(heading)

    def line(cells: dict[str, str]) -> str:
        return GAP.join(f"{cells[h]:<{n}}" if h == "  entry" else f"{cells[h]:>{n}}" for h, n in sizes.items()).rstrip()

    out = [line({h: h for h in sizes})]
    out += [line({h: columns[h][i] for h in sizes}) for i in range(len(models))]
    return out, dropped


HTML_STYLE = Markup(
    "<style>.gb-report p{margin:4px 0}.gb-models{border-collapse:collapse;font-size:12px;margin:6px 0}"
    ".gb-models th,.gb-models td{border:1px solid #ddd;padding:2px 6px;white-space:nowrap;text-align:left}"
    ".gb-models th{background:#f4f4f4}.gb-models td.n{text-align:right;font-variant-numeric:tabular-nums}"
    ".gb-report ul{margin:4px 0}</style>"
)
"""The styles of `html`: the models table's cells never wrap, so a figure is never split across lines."""


def models_html(report: ReportView) -> Markup:
    """The models table as an escaped HTML table: the text table's columns and formats, and each entry's verdict."""
    rows = report.model_rows()
    if not rows:
        return tag("p", tag("i", "(no candidate runs)"))
    gold = gold_line(report) is not None  # as in the text table: against gold labels, the scorer's column is gold
    heads = ["entry", "verdict", *("gold" if gold and h == "scorer" else h for h in model_cells(rows[0]))]
    body = []
    for r in rows:
        name = ("★ " if r.is_reference else "") + r.entry + (" (sim)" if r.simulated else "")
        verdict = r.verdict or ("reference" if r.is_reference else r.verdict_basis or "-")
        cells = model_cells(r)
        cells["cost/run"] = f"{cells['cost/run']} {r.currency or ''}".rstrip()
        if gold:
            cells["scorer"] = _num(r.gold_mean)
        figures = (tag("td", v, class_="n") for v in cells.values())
        body.append(tag("tr", tag("td", name), tag("td", tag("b", verdict)), *figures))
    head = tag("tr", *(tag("th", h) for h in heads))
    return tag("table", tag("thead", head), tag("tbody", *body), class_="gb-models")


def html(report: ReportView) -> Markup:
    """The report as a notebook shows it (and the HTML report opens with): the header, the stop marker, the judge's
    headlines, the models table (an HTML table, formatted as the text table is) and the reference's gold score, the
    entries not judged or skipped, the cost, the verdict lines and the recommendation."""
    parts = [tag("p", tag("b", header(report)))]
    if (marker := stopped(report)) is not None:
        parts.append(tag("p", tag("b", marker), style="color:#b45309"))
    parts += [tag("p", tag("b", line), style="color:#b91c1c") for line in headlines(report)]
    if said := lead(report):  # what the judge-only verdicts are worth leads, as in the text
        items = (tag("li", line.strip()) for line in said[1:])
        parts.append(tag("div", tag("p", tag("b", said[0])), tag("ul", *items), class_="gb-worth"))
    parts.append(models_html(report))
    if (gold := gold_line(report)) is not None:
        parts.append(tag("p", gold))
    parts += [agreement_html(report.agreement)] if report.agreement.height else []
    if absent := not_judged(report):
        parts.append(tag("p", tag("b", NOT_JUDGED), " (no judged run): ", ", ".join(absent)))
    if report.meta.skipped:
        items = (tag("li", f"{e}: {w}") for e, w in report.meta.skipped.items())
        parts.append(concat(tag("p", "skipped:"), tag("ul", *items)))
    parts.append(tag("p", totals(report)))
    if verdicts := verdict_lines(report):
        said = [tag("li", tag("b", v.verdict), f" {v.entry}: {v.evidence()}") for v in verdicts]
        agreement = self_agreement(report)
        parts.append(
            concat(tag("p", verdicts_title(report)), tag("ul", *said, tag("li", agreement) if agreement else None))
        )
    parts += [tag("p", line) for line in judges_lines(report)]
    parts += [tag("p", said) for said in [report.controls_outcome().sentence()] if said]
    if (pick := recommendation(report)) is not None:
        parts.append(tag("p", tag("b", pick)))
    lines = join(parts, Markup("\n"))  # a line per part, as a notebook's saved output has always held it
    return concat(HTML_STYLE, Markup("\n"), tag("div", Markup("\n"), lines, Markup("\n"), class_="gb-report"))
