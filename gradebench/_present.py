"""A report as text: the table logged after a race (one line per entry, the verdicts, the recommendation) and HTML."""

from __future__ import annotations

import html as _html
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from ._report import BenchmarkReport

__all__ = ["header", "html", "render", "totals", "verdict_lines"]


def _signed(value: float | None) -> str:
    """A signed number with a real minus sign."""
    return "-" if value is None else f"{value:+.2f}".replace("-", "−")


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}×"


def header(report: BenchmarkReport) -> str:
    m = report.meta
    candidates = report.runs.filter(pl.col("role") == "candidate")
    repeats = candidates["repeat"].n_unique() if candidates.height else 0
    inputs = report.runs["input_id"].n_unique()
    return (
        f"{m.job or '?'} · grade {m.grade or '?'} · reference {m.reference_entry or '-'}"
        f" · judge {m.judge_entry or '-'} · {inputs} input{'s' if inputs != 1 else ''} × {repeats} runs"
        + (" · STOPPED EARLY: only the runs judged before the stop" if m.stopped else "")
    )


def totals(report: BenchmarkReport) -> str:
    """One line: what the runs cost, what the judge cost, and what was spent now (cache hits cost nothing now).

    A sum over calls whose cost is unknown (no usage reported) says so instead of passing for the whole.
    """
    currencies = report.runs["currency"].drop_nulls().unique(maintain_order=True).to_list()
    cur = currencies[0] if len(currencies) == 1 else "(mixed currencies)" if currencies else ""
    judge = report.calls.filter(pl.col("role") == "judge")
    fresh_judge = judge.filter(~pl.col("cache_hit"))

    def money(*parts: tuple[pl.Series, str]) -> str:
        total = sum(float(column.sum()) for column, _ in parts)
        unknown = [f"{n} {what}{'s' * (n != 1)}" for column, what in parts if (n := column.null_count())]
        text = f"{total:.6f} {cur}".rstrip()
        return f"{text} + unknown for {' and '.join(unknown)} without usage" if unknown else text

    runs, calls = (report.runs["cost"], "run"), (judge["cost"], "judge call")
    spent = (report.runs["spent_now"], "run"), (fresh_judge["cost"], "judge call")
    return f"cost of the runs {money(runs)} (+ judge {money(calls)}) · spent now {money(*spent)}"


def render(report: BenchmarkReport) -> str:
    """The fixed-width text table logged after a race: ``*`` marks the reference entry, ``(sim)`` simulated ones."""

    def num(v: float | None, fmt: str = ".2f", suffix: str = "") -> str:
        return "-" if v is None else f"{v:{fmt}}{suffix}"

    names = [
        ("* " if r["is_reference"] else "  ") + r["entry"] + (" (sim)" if r["simulated"] else "")
        for r in report.models.iter_rows(named=True)
    ]
    width = max([len("  entry"), *map(len, names)])
    head = (
        f"{'  entry':<{width}} {'runs':>5} {'ok':>5} {'score [95% CI]':>20} {'acc':>5} {'work':>5} {'scorer':>6}"
        f" {'calls':>6} {'tokens in/out':>15} {'latency':>8} {'wall':>8} {'cost/run':>18}"
    )
    lines = [header(report), head]
    for name, r in zip(names, report.models.iter_rows(named=True), strict=True):
        ci = f"[{num(r['score_lo'])}–{num(r['score_hi'])}]" if r["score_lo"] is not None else ""
        score = f"{num(r['score_mean'])} {ci}".strip()
        tokens = f"{num(r['input_tokens_mean'], '.0f')}/{num(r['output_tokens_mean'], '.0f')}"
        cost = "unknown" if r["cost_per_run"] is None else f"{r['cost_per_run']:.6f}"
        lines.append(
            f"{name:<{width}} {r['runs']:>5} {num(r['ok_rate'] * 100, '.0f', '%'):>5} {score:>20}"
            f" {num(r['accuracy_mean']):>5} {num(r['work_mean']):>5} {num(r['scorer_mean']):>6}"
            f" {num(r['calls_mean'], '.1f'):>6} {tokens:>15} {num(r['latency_s_mean'], '.2f', 's'):>8}"
            f" {num(r['wall_s_mean'], '.2f', 's'):>8} {cost:>14} {r['currency'] or '':<3}"
        )
    if not report.models.height:
        lines.append("  (no candidate runs)")
    skipped = report.meta.skipped
    if skipped:
        lines.append("skipped: " + "; ".join(f"{entry} ({why})" for entry, why in skipped.items()))
    lines.append(totals(report))
    lines.extend(verdict_lines(report, width))
    return "\n".join(lines)


def verdict_lines(report: BenchmarkReport, width: int) -> list[str]:
    """Each entry's verdict against the reference entry, the ratios, the floor, and the recommendation."""
    tested = report.models.filter(pl.col("verdict").is_not_null())
    if not tested.height:
        return []
    m = report.meta
    margin = float(m.margin)
    lines = [f"verdict vs {m.reference_entry} (non-inferiority, margin {margin:g} of 10, paired by input, 95%):"]
    for r in tested.iter_rows(named=True):
        name = "  " + r["entry"]
        delta = f"Δ {_signed(r['mean_diff'])} [lower {_signed(r['lower'])}]"
        cost = "unknown" if r["cost_per_run"] is None else _times(r["cost_ratio"])
        ratios = f"cost {cost} latency {_times(r['latency_ratio'])}"
        extra = []
        if r["verdict"] == "inconclusive" and not r["n_pairs"]:
            extra.append(r["verdict_reason"] or "nothing could be paired")
        elif r["verdict"] == "inconclusive" and r["more_runs"]:
            extra.append(f"~{r['more_runs']} more paired runs would likely settle it")
        elif r["verdict"] == "inconclusive" and r["mean_diff"] is not None and r["mean_diff"] <= -margin:
            extra.append("leans worse: more runs would likely show it")
        elif r["verdict"] == "inconclusive":
            extra.append("sits on the margin: only very many more runs would settle it")
        if r["swap_gap_mean"] is not None:
            extra.append(f"order gap {r['swap_gap_mean']:.2f}")
        if r["floor_std"] is not None:
            extra.append(f"judge noise ±{r['floor_std']:.2f}")
        lines.append(
            f"{name:<{width}} {r['verdict']:<12} {delta:<24} {r['n_pairs'] or 0:>4} paired runs  "
            f"{ratios}" + ("  · " + " · ".join(extra) if extra else "")
        )
    own = report.models.filter(pl.col("is_reference"))
    if own.height and own["score_mean"][0] is not None:
        lines.append(
            f"  {own['entry'][0]} against its own reference run scores {own['score_mean'][0]:.2f}: "
            "how well the reference agrees with itself, the most a candidate can expect"
        )
    pick = report.recommend()
    if pick is not None:
        lines.append(f"recommendation: {pick.sentence}")
    return lines


def html(report: BenchmarkReport) -> str:
    parts = [f"<p><b>{_html.escape(header(report))}</b></p>", report.models._repr_html_()]
    skipped = report.meta.skipped
    if skipped:
        items = "".join(f"<li>{_html.escape(str(e))}: {_html.escape(str(w))}</li>" for e, w in skipped.items())
        parts.append(f"<p>skipped:</p><ul>{items}</ul>")
    parts.append(f"<p>{_html.escape(totals(report))}</p>")
    return "\n".join(parts)
