"""Altair charts of a `BenchmarkReport`: cost and latency against quality (with the Pareto front), score
distributions, judge-vs-scorer agreement; offline saving (SVG, PNG, self-contained HTML) and offline Jupyter display.

A leaf of the package: it reads a report's frames and per-entry records and returns charts; nothing in the core
imports it. Every chart carries its data inline and renders with no network (`save_chart` through vl-convert,
`enable_offline` and `offline_widget` with the Vega bundle inlined into the anywidget `JupyterChart`).
"""

from __future__ import annotations

import math
from typing import Any

import altair as alt
import polars as pl

from .._base.vocab import Role
from .._stats.pareto import pareto_front
from . import present as _present
from .models import EntrySummary
from .offline import built_once, enable_offline, offline_widget, save_chart
from .points import HEIGHT, WIDTH, Point, drawn_runs, jitter, place_labels
from .view import ReportView

__all__ = [
    "cost_quality",
    "enable_offline",
    "latency_quality",
    "offline_widget",
    "pareto_front",
    "save_chart",
    "score_distribution",
    "scorer_agreement",
]

_Chart = alt.Chart | alt.LayerChart
PALETTE = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#eeca3b", "#9d755d", "#ff9da6", "#bab0ac"]
"""Entry colours, assigned in the order of ``report.models`` (the same entry has the same colour in every chart)."""
SCORER_PASS, JUDGE_PASS = 0.5, 7
"""`scorer_agreement` flags a run whose scorer and judge fall on opposite sides of these marks."""
FAILED_X = -1
"""Where `score_distribution` draws runs that were not judged: failed (they count as 0, but a judged 0 is drawn at
0, apart from them) or left without a verdict by the judge."""

_TOOLTIP = [
    ("entry", "entry", None),
    ("model", "model", None),
    ("grade", "grade", None),
    ("simulated", "simulated", None),
    ("reference", "is_reference", None),
    ("runs", "runs", None),
    ("ok_rate", "ok rate", ".0%"),
    ("score_mean", "score mean", ".2f"),
    ("score_lo", "score 95% lo", ".2f"),
    ("score_hi", "score 95% hi", ".2f"),
    ("accuracy_mean", "accuracy (0-7)", ".2f"),
    ("work_mean", "work (0-3)", ".2f"),
    ("scorer_mean", "scorer (0-1)", ".2f"),
    ("calls_mean", "calls per run", ".1f"),
    ("input_tokens_mean", "input tokens", ".0f"),
    ("output_tokens_mean", "output tokens", ".0f"),
    ("latency_s_mean", "latency (s)", ".3f"),
    ("wall_s_mean", "wall (s)", ".3f"),
    ("cost_per_run", "cost per run", ".6g"),
    ("currency", "currency", None),
    ("verdict", "verdict vs reference", None),
    ("mean_diff", "mean difference", "+.2f"),
    ("lower", "lower bound", "+.2f"),
    ("n_pairs", "paired runs", None),
    ("cost_ratio", "cost × reference", ".2f"),
    ("latency_ratio", "latency × reference", ".2f"),
    ("floor_std", "judge noise (std)", ".2f"),
    ("swap_gap_mean", "order gap", ".2f"),
]

REFERENCE, REFERENCE_COLOUR = Role.REFERENCE.value, "#4c78a8"
"""The reference entry's colour key and colour: it is what the verdicts are against, so the legend leaves it out
(the role legend's diamond says which point it is)."""
VERDICT_COLOURS = {
    "as good": "#2ca02c",
    "inconclusive": "#e0a100",
    "worse": "#d62728",
    "not tested": "#999999",
}
"""Point colours by verdict against the reference entry."""


def _drawn(row: EntrySummary) -> dict[str, Any]:
    """An entry's row as a chart carries it: without ``spent_now``, what this run paid (nothing when the cache
    answered), which no chart draws — so a rerun the cache answers makes the same chart and reads it back rendered."""
    return {k: v for k, v in row.to_row().items() if k != "spent_now"}


def _colour(models: pl.DataFrame, **legend: Any) -> alt.Color:
    entries = models["entry"].to_list()
    scale = alt.Scale(domain=entries, range=[PALETTE[i % len(PALETTE)] for i in range(len(entries))])
    return alt.Color("entry:N", scale=scale, legend=alt.Legend(title="entry", **legend))


def _label(row: EntrySummary, all_sim: bool) -> str:
    """The entry's name, "(reference)" on the reference, "(sim)" if simulated unless all are (the subtitle says so)."""
    text = row.entry + (" (sim)" if row.simulated and not all_sim else "")
    return text + (" (reference)" if row.is_reference else "")


def _all_sim(report: ReportView) -> bool:
    return bool(report.runs.height) and bool(report.runs["simulated"].all())


def _title(report: ReportView, what: str, *notes: str) -> alt.TitleParams:
    """The chart's title: what it shows, the report's header line (the presenter's), its stop marker and notes."""
    m = report.meta
    head = _present.header(report).split(" · ", 2)[-1]  # the job and grade are in the title itself
    if _all_sim(report):
        head += " · every entry is simulated"
    elif report.runs["simulated"].any():
        head += " · (sim) = simulated entry"
    marker = _present.stopped(report)
    absent = _present.not_judged(report)
    lines = [head, *([marker] if marker else []), *_present.judge_headlines(report), *[n for n in notes if n]]
    if absent:
        lines.append("not judged: " + ", ".join(absent))
    return alt.TitleParams(f"{what} — {m.job or '?'} · grade {m.spec.grade or '?'}", subtitle=lines, anchor="start")


def _no_runs(report: ReportView, what: str, text: str = "no runs: the report has no candidate runs") -> alt.Chart:
    """A chart with nothing to plot, saying why (in its title too): never an error."""
    rows = [{"text": text}]
    return (
        alt.Chart(alt.Data(values=rows), title=_title(report, what, text))
        .mark_text(size=16, color="#666")
        .encode(text="text:N")
        .properties(width=WIDTH, height=120)
    )


POINTS_PER_ENTRY = 1000
"""Runs drawn as points per entry at most: a race of 200,000 runs would otherwise put every one in the chart's inline
data (and the HTML report's), and draw for minutes. Beyond it a deterministic sample is drawn, the runs no judge
scored first; the means, intervals and counts always use every run."""


def _quality(report: ReportView, x: str, what: str, axis: str, better: str) -> _Chart:
    models = report.models
    if not models.height:
        return _no_runs(report, what)
    measured: list[float | None] = models[x].to_list()  # x is a column (cost_per_run, latency_s_mean), in row order
    positive = [v for v in measured if v is not None and v > 0]
    floor = min(positive) / 10 if positive else 1e-6
    front, all_sim = pareto_front(models, x), _all_sim(report)
    points = []
    for r, value in zip(report.model_rows(), measured, strict=True):
        clamped = value is not None and value <= 0
        shown = None if value is None else max(value, floor)
        label = _label(r, all_sim)
        data = {
            **_drawn(r),
            "label": label,
            "role": Role.REFERENCE.value if r.is_reference else Role.CANDIDATE.value,
            "verdict_shown": REFERENCE if r.is_reference else (r.verdict or "not tested"),
            "x": shown,
            "on_front": r.entry in front,
            "plotted": f"drawn at {floor:.1e} (log axis)" if clamped else "as measured",
        }
        points.append(Point(row=r, x=shown, label=label, data=data))
    rows = [p.data for p in points]
    if not any(p.x is not None and p.row.score_mean is not None for p in points):
        return _no_runs(report, what, "no judged runs: every run failed or went unjudged")
    xs = [p.x for p in points if p.x is not None]
    # at least one decade wide, the points off the edges, and room on the right for the rightmost point's label
    span = math.log10(max(xs) / min(xs))
    pad = max(0.2, (1 - span) / 2)
    room = (6.0 * max(len(p.label) for p in points if p.x == max(xs)) + 16) / WIDTH
    lo, hi = min(xs) / 10**pad, max(xs) * 10 ** max(pad, room * (span + pad) / (1 - room))
    place_labels(points, front, lo, hi)
    notes = []
    if any(v is not None and v <= 0 for v in measured):
        notes.append(f"a {axis.split(' (')[0]} of 0 is drawn at {floor:.1e}: a log axis has no zero")
    unknown = [p.row for p in points if p.row.score_mean is not None and p.x is None]
    for why, rows_ in (
        ("no run succeeded", [r.entry for r in unknown if not r.ok_rate]),
        ("no usage reported", [r.entry for r in unknown if r.ok_rate]),
    ):  # entries with no judged run are listed by the title as not judged
        if rows_:
            notes.append(f"not drawn ({axis.split(' (')[0]} unknown: {why}): " + ", ".join(rows_))
    notes.append(f"bars: 95% interval of the score · dashed steps: Pareto front (nothing is both {better} and better)")
    drawn = [v for v in (REFERENCE, *VERDICT_COLOURS) if any(row["verdict_shown"] == v for row in rows)]
    verdicts = [v for v in drawn if v != REFERENCE]  # the reference is what verdicts are against, not one of them
    colour = alt.Color(
        "verdict_shown:N",
        scale=alt.Scale(
            domain=drawn, range=[REFERENCE_COLOUR if v == REFERENCE else VERDICT_COLOURS[v] for v in drawn]
        ),
        legend=alt.Legend(title="verdict vs reference", values=verdicts) if verdicts else None,
    )
    bands = _bands(report)
    if bands:
        notes.append(
            "green band: within the margin of the reference's score"
            + (" · grey band: ± the judge's noise floor" if len(bands) > 1 else "")
        )
    x_scale, y_scale = alt.Scale(type="log", domain=[lo, hi], nice=False), alt.Scale(domain=[0, 10], nice=False)
    x_enc = alt.X(
        "x:Q", title=axis, scale=x_scale, axis=alt.Axis(format="~g", labelOverlap="greedy", labelSeparation=8)
    )
    y_enc = alt.Y("score_mean:Q", title="judge score (0–10)", scale=y_scale)
    tips = [
        alt.Tooltip(f, type="nominal" if fmt is None else "quantitative", title=t, format=fmt or alt.Undefined)
        for f, t, fmt in _TOOLTIP
    ]
    tips += [alt.Tooltip("plotted:N", title="x position"), alt.Tooltip("on_front:N", title="on the Pareto front")]
    base = alt.Chart().encode(x=x_enc)
    step = (
        alt.Chart(alt.Data(values=[p.data for name in front for p in points if p.row.entry == name]))
        # up, then across: a step line through the front's points only (across first would run through an entry
        # as good but dearer, beaten by the point the step starts at)
        .mark_line(interpolate="step-before", strokeDash=[6, 3], color="#444", strokeWidth=2)
        .encode(x=x_enc, y=y_enc, order=alt.Order("x:Q"))
    )
    bars = base.mark_errorbar(ticks=True, thickness=1.5, opacity=0.6).encode(
        y=alt.Y("score_lo:Q", title="judge score (0–10)"), y2="score_hi:Q", color=colour
    )
    points = base.mark_point(filled=True, size=150, opacity=1).encode(
        y=y_enc,
        color=colour,
        shape=alt.Shape(
            "role:N",
            scale=alt.Scale(domain=[Role.REFERENCE.value, Role.CANDIDATE.value], range=["diamond", "circle"]),
            legend=alt.Legend(title="role"),
        ),
        stroke=alt.when("datum.is_reference").then(alt.value("black")).otherwise(alt.value("white")),
        strokeWidth=alt.when("datum.is_reference").then(alt.value(2)).otherwise(alt.value(1)),
        tooltip=tips,
    )
    labels = (
        alt.Chart()
        .mark_text(fontSize=11, baseline="middle")
        .encode(x=alt.X("lx:Q", scale=x_scale), y=alt.Y("ly:Q", scale=y_scale), text="label:N", color=colour)
    )
    title = _title(report, what, *notes)
    shaded = [
        alt.Chart(alt.Data(values=[band]))
        .mark_rect(color=band["colour"], opacity=band["opacity"])
        .encode(x=alt.value(0), x2=alt.value(WIDTH), y=alt.Y("lo:Q", scale=y_scale), y2="hi:Q")
        for band in bands
    ]
    layers = [*shaded, bars, step, points, labels]
    return alt.LayerChart(layer=layers, data=alt.Data(values=rows), width=WIDTH, height=HEIGHT, title=title)


def _bands(report: ReportView) -> list[dict[str, Any]]:
    """The "as good" zone (the reference's score down to the margin) and, once measured, the judge's noise floor."""
    rows = report.model_rows()
    mean = next((r.score_mean for r in rows if r.is_reference and r.score_mean is not None), None)
    if mean is None:
        return []
    margin = report.meta.spec.margin
    bands = [{"lo": max(0.0, mean - margin), "hi": mean, "colour": "#2ca02c", "opacity": 0.08, "band": "margin"}]
    floors = [r.floor_std for r in rows if r.floor_std is not None]
    if floors:
        floor = sum(floors) / len(floors)
        bands.append(
            {
                "lo": max(0.0, mean - floor),
                "hi": min(10.0, mean + floor),
                "colour": "#777777",
                "opacity": 0.15,
                "band": "noise floor",
            }
        )
    return bands


@built_once
def cost_quality(report: ReportView) -> _Chart:
    """Judge score (mean, 95% interval) against cost per run (log axis), one point per entry, with the Pareto front."""
    found = report.models["currency"].drop_nulls().unique(maintain_order=True).to_list()
    axis = f"cost per run ({found[0] if len(found) == 1 else 'mixed currencies' if found else 'no currency'}, log)"
    return _quality(report, "cost_per_run", "cost vs quality", axis, "cheaper")


@built_once
def latency_quality(report: ReportView) -> _Chart:
    """Judge score (mean, 95% interval) against mean model latency per run, with the latency Pareto front."""
    return _quality(report, "latency_s_mean", "latency vs quality", "latency per run (s, log)", "faster")


@built_once
def score_distribution(report: ReportView) -> _Chart:
    """Every candidate run's judge score per entry (jittered points), the mean and its 95% interval; runs without a
    judge's score drawn in a column of their own at the left: a failed run (never judged; it counts as 0 in the mean)
    as a red cross, a run the judge gave no verdict as a grey ring. A run judged 0 is a dot at 0."""
    what = "judge scores per run"
    models = report.models
    runs = report.runs.filter(pl.col("role") == Role.CANDIDATE)
    if not runs.height:
        return _no_runs(report, what)
    all_sim = _all_sim(report)
    labels = {m.entry: _label(m, all_sim) for m in report.model_rows()}
    runs, sampled = drawn_runs(runs, pl.col("ok") & pl.col("score").is_not_null(), POINTS_PER_ENTRY)
    rows = []
    for r in runs.iter_rows(named=True):
        # ok first: a failed run's score is 0 in the frame, but it was never judged
        status = "failed" if not r["ok"] else "judged" if r["score"] is not None else "no verdict"
        why = r["error"] if not r["ok"] else r["judge_error"] if r["score"] is None else r["reason"]
        rows.append(
            {
                "entry": r["entry"],
                "label": labels[r["entry"]],
                "input_id": r["input_id"],
                "repeat": r["repeat"],
                "status": status,
                "score": r["score"],
                "accuracy": r["accuracy"],
                "work": r["work"],
                "why": why,
                "jitter": jitter(r["run_id"], 0.6),
                "x": (r["score"] if status == "judged" else FAILED_X) + jitter(r["run_id"] + "x", 0.12),
            }
        )
    x_enc = alt.X(
        "x:Q",
        title="judge score (0–10)",
        scale=alt.Scale(domain=[FAILED_X - 0.6, 10.4], nice=False),
        axis=alt.Axis(
            values=[FAILED_X, *range(11)], labelExpr=f"datum.value == {FAILED_X} ? 'not judged' : datum.label"
        ),
    )
    y_enc = alt.Y("label:N", sort=list(labels.values()), title=None, axis=alt.Axis(labelLimit=260))
    tips = ["entry:N", "input_id:N", "repeat:Q", "status:N", "score:Q", "accuracy:Q", "work:Q", "why:N"]
    offset = alt.YOffset("jitter:Q", scale=alt.Scale(domain=[-1, 1]))  # [-1, 1] spans the row
    judged = (
        alt.Chart()
        .transform_filter("datum.status == 'judged'")
        .mark_circle(size=60, opacity=0.75)
        .encode(x=x_enc, y=y_enc, yOffset=offset, color=_colour(models), tooltip=tips)
    )
    failed = (
        alt.Chart()
        .transform_filter("datum.status == 'failed'")
        .mark_point(shape="cross", filled=True, size=80, color="#d62728")
        .encode(x=x_enc, y=y_enc, yOffset=offset, tooltip=tips)
    )
    no_verdict = (
        alt.Chart()
        .transform_filter("datum.status == 'no verdict'")
        .mark_point(shape="circle", filled=False, size=70, strokeWidth=2, color="#777777")
        .encode(x=x_enc, y=y_enc, yOffset=offset, tooltip=tips)
    )
    stats = [{**_drawn(m), "label": labels[m.entry]} for m in report.model_rows()]
    mean = (
        alt.Chart(alt.Data(values=stats))
        .mark_tick(color="black", thickness=2.5, size=22)
        .encode(x=alt.X("score_mean:Q"), y=y_enc, tooltip=["entry:N", alt.Tooltip("score_mean:Q", format=".2f")])
    )
    interval = alt.Chart(alt.Data(values=stats)).mark_rule(color="black", opacity=0.5)
    interval = interval.encode(x="score_lo:Q", x2="score_hi:Q", y=y_enc)
    divider = alt.Chart(alt.Data(values=[{"x": FAILED_X + 0.5}])).mark_rule(color="#bbb").encode(x="x:Q")
    notes = (
        "dots: judged runs · black tick and line: mean and 95% interval",
        "not judged: red cross, the run failed (it counts as 0 in the mean) · grey ring, the judge gave no verdict",
        sampled,
    )
    layers = [divider, interval, judged, failed, no_verdict, mean]
    title = _title(report, what, *notes)
    return alt.LayerChart(layer=layers, data=alt.Data(values=rows), width=WIDTH, height=alt.Step(34), title=title)


@built_once
def scorer_agreement(report: ReportView) -> _Chart:
    """Judge score against the code scorer's score per run (jittered), shading where the two disagree
    (scorer ≥ 0.5 but judge < 7, or scorer < 0.5 but judge ≥ 7). Raises `ValueError` when no scorer was set; when
    the scorer scored but the judge gave none of those runs a score, the chart says so instead."""
    what = "judge vs scorer"
    runs = report.runs.filter(pl.col("role") == Role.CANDIDATE)
    if not runs.height:
        return _no_runs(report, what)
    pairs = runs.filter(pl.col("scorer").is_not_null() & pl.col("score").is_not_null())
    if not pairs.height and runs["scorer"].drop_nulls().len():
        return _no_runs(report, what, "nothing to compare: no run the scorer scored has a judge's score")
    if not pairs.height:
        raise ValueError(
            "the report has no scorer values (no scorer was set, every scorer call failed, or no scored run was "
            "judged): rejudge with one: bench.rejudge(JudgeSpec(scorer=...))"
        )
    agree = (pl.col("scorer") >= SCORER_PASS) == (pl.col("score") >= JUDGE_PASS)
    drawn, sampled = drawn_runs(pairs, agree, POINTS_PER_ENTRY)  # the disagreements drawn first
    shown = set(drawn["run_id"].to_list())
    rows, counts = [], {"agree": 0, "scorer passes, judge < 7": 0, "judge ≥ 7, scorer fails": 0}
    for r in pairs.iter_rows(named=True):
        verdict = "agree"
        if r["scorer"] >= SCORER_PASS and r["score"] < JUDGE_PASS:
            verdict = "scorer passes, judge < 7"
        elif r["scorer"] < SCORER_PASS and r["score"] >= JUDGE_PASS:
            verdict = "judge ≥ 7, scorer fails"
        counts[verdict] += 1
        if r["run_id"] not in shown:
            continue
        rows.append(
            {
                "entry": r["entry"],
                "input_id": r["input_id"],
                "repeat": r["repeat"],
                "score": r["score"],
                "scorer": r["scorer"],
                "agreement": verdict,
                "reason": r["reason"],
                "sx": r["scorer"] + jitter(r["run_id"] + "x", 0.04),
                "sy": r["score"] + jitter(r["run_id"] + "y", 0.3),
            }
        )
    zones = [
        {"x": SCORER_PASS, "x2": 1.1, "y": -0.5, "y2": JUDGE_PASS - 0.5, "zone": "scorer passes, judge < 7"},
        {"x": -0.1, "x2": SCORER_PASS, "y": JUDGE_PASS - 0.5, "y2": 10.5, "zone": "judge ≥ 7, scorer fails"},
    ]
    x_scale, y_scale = alt.Scale(domain=[-0.1, 1.1], nice=False), alt.Scale(domain=[-0.5, 10.5], nice=False)
    x_axis = alt.Axis(values=[i / 10 for i in range(11)], title="scorer (0–1, jittered)")
    y_axis = alt.Axis(values=list(range(11)), title="judge score (0–10, jittered)")
    shade = (
        alt.Chart(alt.Data(values=zones))
        .mark_rect(color="#e45756", opacity=0.1)
        .encode(x=alt.X("x:Q", scale=x_scale, axis=x_axis), x2="x2:Q", y=alt.Y("y:Q", scale=y_scale), y2="y2:Q")
    )
    zone_text = (
        alt.Chart(alt.Data(values=zones))
        .mark_text(color="#b03030", fontSize=11, align="center", baseline="top", dy=5)
        .encode(x=alt.X("mid:Q", scale=x_scale), y=alt.Y("y2:Q", scale=y_scale, axis=y_axis), text="zone:N")
        .transform_calculate(mid="(datum.x + datum.x2) / 2")
    )
    points = (
        alt.Chart(alt.Data(values=rows))
        .mark_point(filled=True, size=70, opacity=0.8)
        .encode(
            x=alt.X("sx:Q", scale=x_scale, axis=x_axis),
            y=alt.Y("sy:Q", scale=y_scale, axis=y_axis),
            color=_colour(report.models, symbolStrokeWidth=0),
            stroke=alt.when("datum.agreement != 'agree'").then(alt.value("black")).otherwise(alt.value(None)),
            strokeWidth=alt.value(1.5),
            tooltip=["entry:N", "input_id:N", "repeat:Q", "score:Q", "scorer:Q", "agreement:N", "reason:N"],
        )
    )
    split = "; ".join(f"{k}: {v}" for k, v in counts.items() if k != "agree")
    note = f"{pairs.height - counts['agree']} of {pairs.height} runs disagree (outlined; shaded zones): {split}"
    title = _title(report, what, note, sampled)
    return alt.LayerChart(layer=[shade, zone_text, points], width=WIDTH, height=HEIGHT, title=title)
